"""Starlette apps that speak the servers' dialects, for running adapters and the CLI over real HTTP."""
