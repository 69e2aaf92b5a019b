"""Domain types of the Akash provider: pure data and rules, no I/O.

IDs, addresses, resources, prices, deployment groups, SDL, manifests and the events and
commands the services exchange. Everything here is safe to import from any layer.
"""
