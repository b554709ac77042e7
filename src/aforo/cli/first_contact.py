"""First contact: is anything listening at the base URL at all? If not, one message that says what to do.

Without this, a run with no server behind the URL failed far from the cause ("no model given", a window
warning, or the REPL failing at the first question). One GET of the server's root answers it before
anything else happens: any HTTP answer, even an error status, means a server is there (detection then
finds out which); only a connection that cannot be made means none is.
"""

from __future__ import annotations

import httpx

from aforo.server_kinds import SERVER_KINDS
from aforo.wire.http import normalize_base_url, reach

CONNECT_SECONDS = 3.0
FALLBACK_KIND = "openai"


def unreachable(base_url: str) -> str | None:
    """Why nothing answers at `base_url` (a few words), or None when something does."""
    root, _v1 = normalize_base_url(base_url)
    try:
        with httpx.Client(timeout=httpx.Timeout(CONNECT_SECONDS * 2, connect=CONNECT_SECONDS)) as client:
            reach(client, root + "/")
    except httpx.ConnectTimeout:
        return f"no answer within {CONNECT_SECONDS:g} s"
    except httpx.ConnectError as exc:
        text = str(exc)
        return "connection refused" if "refused" in text.lower() else text or "cannot connect"
    except httpx.HTTPError:
        return None  # it accepted the connection: a server is there, if a slow or odd one
    return None


def no_server_message(base_url: str, source: str, why: str) -> str:
    """The one message for a URL where nothing answers: where, which servers aforo knows, how to start
    one, and the local engine."""
    chosen = "aforo's default, where Ollama listens" if source == "default" else f"set by {source}"
    kinds = ", ".join(
        f"{k} (any other OpenAI-compatible server)" if k == FALLBACK_KIND else k for k in SERVER_KINDS
    )
    return (
        f"no server answers at {base_url} ({why}; the URL is {chosen}).\n"
        f"aforo talks to a local model server. It knows: {kinds}. Start one, for example:\n"
        "  ollama serve                            then: ollama pull MODEL && aforo -m MODEL\n"
        "  llama-server -m MODEL.gguf --port 8080  then: aforo --base-url http://127.0.0.1:8080\n"
        "or let aforo run a small model itself: aforo --local"
    )
