"""aforo: a local, read-only coding assistant with a context governor."""

__version__ = "0.1.0"
