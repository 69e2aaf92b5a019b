"""A local single-node Akash-like chain for development and tests, with tenant tools."""
