"""The relay's I/O beyond the bus: the node's blocks, the provider account."""
