"""The tenant API: REST and websockets (FastAPI), gRPC, the dashboard; who may do what."""
