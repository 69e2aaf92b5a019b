"""Akash chain client."""
