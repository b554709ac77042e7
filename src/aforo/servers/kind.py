"""One kind of server as one entry: how to recognise it, where it says its window and its models, how it
counts tokens, whether it refuses a prompt that does not fit, and which adapter talks to it.

The entries live in `aforo.server_kinds`, above this package and `providers`, since an entry names a
provider's constructor; here is only their shape, and what detection finds (`ServerInfo`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx

from aforo.errors import ConfigError
from aforo.protocols import Provider, TokenCounter
from aforo.servers.documents import Documents
from aforo.servers.windows import WindowReader
from aforo.wire.bounded import Deadlines


@dataclass(frozen=True, kw_only=True)
class ServerInfo:
    kind: str  # the name of its ServerKind
    root_url: str  # without /v1: where the server's own endpoints live
    v1_url: str  # root + /v1: the OpenAI-compatible API
    version: str | None = None
    served_window: int | None = None
    window_detail: str = ""  # where served_window came from, e.g. "llama.cpp /props n_ctx"
    models: list[str] = field(default_factory=list)


# The server's version ("" when the kind has none) if the documents show this kind, else None.
Check = Callable[[Documents], str | None]
ModelLister = Callable[[Documents], list[str]]
# (client, root URL, model) -> a counter that applies the server's own chat template.
CounterFactory = Callable[[httpx.Client, str, str], TokenCounter]


@dataclass(frozen=True)
class Connection:
    """What every provider is built with besides its server and model: the user's settings for the lane."""

    window: int
    api_key: str | None
    deadlines: Deadlines
    # The user and password of a server behind HTTP Basic auth, taken out of its URL where the URL was
    # read (`cli.routes.split_credentials`), so that no URL that is printed or recorded holds them.
    auth: httpx.BasicAuth | None = None


# (the server detection found, the model, the settings) -> the adapter that talks to it.
ProviderFactory = Callable[[ServerInfo, str, Connection], Provider]


@dataclass(frozen=True, kw_only=True)
class ServerKind:
    name: str
    check: Check | None  # None: the fallback kind, chosen when no other kind's check answers
    window: WindowReader | None  # None: only the generic catalog fields of /v1/models
    provider: ProviderFactory
    counter: CounterFactory | None = None  # None: no exact counter on the server (the governor estimates)
    # Loud servers answer an over-long prompt with an error instead of dropping part of it, so an answer
    # can be streamed as it arrives: it cannot be a silently truncated one. Unknown means silent.
    loud: bool = False
    models: ModelLister | None = None  # None: the ids of /v1/models
    # The adapter sends the window with every request (Ollama's num_ctx): a configured window is the
    # one the server will serve, whatever it serves now.
    sets_window: bool = False
    probe_note: str = ""  # what `aforo probe`, which measures the OpenAI endpoint, adds for this kind
    # Whether this server (its version, say) can force an answer to a JSON schema, so each answer is one
    # constrained step (aforo.reply_format); None: not known to, tool definitions are sent instead.
    constrains: Callable[[ServerInfo], bool] | None = None


def kind_named(kinds: Sequence[ServerKind], name: str) -> ServerKind:
    for kind in kinds:
        if kind.name == name:
            return kind
    raise ConfigError(f"unknown --server {name!r}: choose one of {', '.join(k.name for k in kinds)}")
