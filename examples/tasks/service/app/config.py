"""Settings read once at start-up; the environment may override each."""

import os

HOST = os.environ.get("SERVICE_HOST", "127.0.0.1")
DEFAULT_PORT = 8037
PORT = int(os.environ.get("SERVICE_PORT", DEFAULT_PORT))
TIMEOUT_S = 12.5
LOG_LEVEL = os.environ.get("SERVICE_LOG_LEVEL", "info")
