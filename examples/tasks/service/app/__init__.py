"""A tiny HTTP service."""
