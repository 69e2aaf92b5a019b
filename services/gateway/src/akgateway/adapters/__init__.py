"""The gateway's I/O: the node's REST API, the cluster's pods, and its own listeners
(uvicorn, the gRPC relay, TLS)."""
