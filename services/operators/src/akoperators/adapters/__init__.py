"""The operators' I/O: the Kubernetes API (through akkube) and kopf's running of handlers."""
