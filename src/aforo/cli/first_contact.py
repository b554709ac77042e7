"""First contact: is anything listening at the base URL at all, and is it an LLM server? If not, one
message that says what to do.

Without this, a run with no server behind the URL failed far from the cause ("no model given", a window
warning, or the REPL failing at the first question). One GET of the server's root answers it before
anything else happens: any HTTP answer, even an error status, means a server is there (detection then
finds out which); only a connection that cannot be made means none is.

A server that answers but is no LLM server (a file server, a web app) is recognised where detection
found no kind and no model: every LLM server lists its models at `/v1/models` (or Ollama's
`/api/tags`), so a 404, a 405 or a 501 there, or an HTML page, says what the server is not. Asked only
then, it costs a run against a real server nothing.
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


NOT_THERE = (404, 405, 501)


def not_an_llm_server(client: httpx.Client, v1_url: str, timeout: float) -> str | None:
    """What `v1_url`'s model list answered that no LLM server answers (a few words), or None when it
    may be one (it listed something, asked for a key, or could not be asked)."""
    url = f"{v1_url}/models"
    try:
        answer = client.get(url, timeout=timeout)
    except httpx.HTTPError:
        return None
    if answer.status_code in NOT_THERE:
        return f"GET {url} answered {answer.status_code} {answer.reason_phrase}".rstrip()
    kind = answer.headers.get("content-type", "")
    if answer.is_success and ("html" in kind or answer.text.lstrip()[:1] == "<"):
        return f"GET {url} answered with an HTML page"
    return None


def not_llm_message(base_url: str, source: str, why: str) -> str:
    """The message for a server that answers but is no LLM server."""
    chosen = "aforo's default" if source == "default" else f"set by {source}"
    return (
        f"the server at {base_url} is not an LLM server ({why}; an LLM server lists its models there). "
        f"The URL is {chosen}: point it at a model server, e.g. --base-url http://127.0.0.1:8080/v1 "
        "for llama-server, or run aforo --local."
    )


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
