"""The gateway's I/O beyond the bus: the node's REST API."""
