"""`aforo serve`: flags and wiring of the gateway (`aforo.gateway`); the gateway itself holds no CLI.

Each model a client names gets its lane the way a run wires its own (`wiring.open_lane`: detection,
the served window, the probe cache, the exact counter), so the gateway and the assistant agree on every
window. It listens on 127.0.0.1 unless `--host` says otherwise, and then only with a key (no open
relay). Its first line of output is the URL it serves; then one line per governed request, on stderr.
At its edge (`gateway.guard`, `gateway.connections`) it refuses what a web page in the user's browser could
make of it, and bounds how long a request and how many connections it waits for. A user and password in
the upstream's URL are taken out of it here and sent as Basic auth, so no URL it prints holds them.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

import httpx
import uvicorn
from starlette.types import ASGIApp

from aforo.cli.config import NOT_GIVEN, Config
from aforo.cli.parsing import configured, fail, subcommand_parser
from aforo.cli.routes import Route, split_credentials
from aforo.cli.sanitize import sanitize
from aforo.cli.serve_key import VISIBLE, serve_key
from aforo.cli.wiring import open_lane
from aforo.context.lanes import DEFAULT_LANE
from aforo.errors import AforoError, ConfigError, LimitExceeded, StoreError
from aforo.events import ContextAction, Event, EventSink, Info, Warning
from aforo.gateway.app import make_app
from aforo.gateway.connections import raise_descriptor_limit, server_settings
from aforo.gateway.decisions import Gateway
from aforo.gateway.guard import Guard
from aforo.gateway.model_lanes import ModelLanes
from aforo.gateway.origins import ENV as ORIGINS_ENV
from aforo.gateway.origins import Origins, allowed_origins
from aforo.gateway.upstream import Upstream
from aforo.gateway.upstream_leg import COMPACTED, USED, VERDICT, WINDOW
from aforo.limits import RECORD_CHARS, clipped
from aforo.messages import Request
from aforo.server_kinds import KINDS, SERVER_KINDS
from aforo.servers.detect import detect_server
from aforo.servers.open_lane import OpenLane
from aforo.store.checkpoints import CheckpointStore, MiB
from aforo.store.ids import new_id
from aforo.store.journal import StoreJournal
from aforo.store.paths import checkpoints_dir
from aforo.store.telemetry import Telemetry
from aforo.wire.openai_chat import messages_to_openai

DEFAULT_PORT = 11435  # beside Ollama's 11434
LOCALHOST = "127.0.0.1"


def serve_parser() -> argparse.ArgumentParser:
    parser = subcommand_parser(
        "serve",
        "Run the governor as a gateway in front of a model server: clients that speak OpenAI's or "
        "Ollama's API point at it instead. A request that cannot fit, or an answer the server gave "
        "after silently dropping part of the prompt, reaches the client as the standard "
        "context-length error; headers x-aforo-context-used, -window and -verdict say what it saw.",
    )
    parser.add_argument(
        "--upstream", default=NOT_GIVEN, metavar="URL", help="the server (default: from the config, as a run)"
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="in front of aforo's own engine, installed on first use and started as aforo --local does",
    )
    parser.add_argument(
        "--yes", "-y", action="store_true", help="with --local: install the engine without asking"
    )
    parser.add_argument("--server", choices=SERVER_KINDS, default=NOT_GIVEN, help="skip server detection")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT}; 0: any)"
    )
    parser.add_argument(
        "--host",
        default=LOCALHOST,
        help=f"the address to listen on (default {LOCALHOST}; another needs --key)",
    )
    parser.add_argument(
        "--key",
        default=None,
        help="the key every client must send (Authorization: Bearer KEY); every local user can read a "
        "command line: prefer AFORO_SERVE_KEY or --key-file",
    )
    parser.add_argument("--key-file", default=None, metavar="PATH", help="the key, on the first line of PATH")
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web page that may use the gateway besides this machine's, as scheme://host[:port] (* for "
        f"any run of a host's characters; repeatable; also {ORIGINS_ENV}, comma-separated)",
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="clear and compact the conversation (checkpoint first) instead of refusing it",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        default=NOT_GIVEN,
        metavar="N",
        help="the window, when the server does not say",
    )
    parser.add_argument("--workspace", "-w", default=NOT_GIVEN, help="whose .aforo.toml applies")
    parser.add_argument(
        "--checkpoint",
        metavar="ID",
        help="print the conversation a checkpoint of the gateway holds (OpenAI's messages, JSON) and exit",
    )
    return parser


def serve_run(args: argparse.Namespace) -> int:
    if args.checkpoint:
        return _print_checkpoint(args.checkpoint)
    try:
        key = serve_key(args.key, args.key_file, os.environ)
        origins = allowed_origins(args.allow_origin, dict(os.environ))
    except (ConfigError, LimitExceeded) as exc:
        fail(exc)
        return 2
    if args.host != LOCALHOST and not key:
        fail(
            ConfigError(
                f"--host {args.host} serves others too: give a key, which every client must send "
                "(AFORO_SERVE_KEY=KEY, --key-file PATH or --key KEY)"
            )
        )
        return 2
    if args.key:
        _log(Warning(message=VISIBLE))
    flags = {
        "workspace": args.workspace,
        "base_url": args.upstream,
        "server": args.server,
        "context_window": args.context_window,
    }
    cfg = configured(flags, lambda warning: _log(Warning(message=warning)))
    if cfg is None:
        return 2
    if args.local:
        if args.upstream is not NOT_GIVEN:
            fail(ConfigError("--local and --upstream each name the server: pass one of them"))
            return 2
        from aforo.engine.local import attach_local_engine

        try:  # released at exit, as for aforo --local: stopped unless another aforo still uses it
            engine = attach_local_engine(cfg.context_window, None, assume_yes=args.yes)
        except AforoError as exc:
            fail(exc)
            return 1
        cfg = replace(cfg, base_url=engine.url)
    edge = Edge(origins, loopback=_loopback(args.host))
    try:
        built = build(cfg, compact=args.compact, key=key, log=_log, edge=edge)
    except (ConfigError, StoreError) as exc:
        fail(exc)
        return 2
    raise_descriptor_limit()
    try:
        sock = socket.create_server((args.host, args.port))
    except OSError as exc:
        fail(ConfigError(f"cannot listen on {args.host}:{args.port}: {exc}"))
        return 2
    port = sock.getsockname()[1]
    print(f"http://{args.host}:{port}", flush=True)
    doing = "compacting" if args.compact else "refusing what does not fit"
    print(sanitize(f"aforo serve: {built.describe}; {doing}"), file=sys.stderr, flush=True)
    config = uvicorn.Config(built.app, log_level="warning", lifespan="on", **server_settings())
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        built.close()
    return 0


@dataclass(frozen=True)
class Edge:
    """What the guard lets in: the web pages allowed, and whether only local host names are answered
    (the gateway listens on a loopback address)."""

    origins: Origins
    loopback: bool = True


@dataclass
class Built:
    app: ASGIApp
    describe: str  # the server behind it and the session its records go to
    close: Callable[[], None]


def build(cfg: Config, *, compact: bool, key: str | None, log: EventSink, edge: Edge | None = None) -> Built:
    """The gateway in front of the server `cfg` names, recording in the state directory; `edge`: this
    machine's pages only, on a loopback address, unless given. Raises ConfigError (no server there, a
    URL that cannot be read) or StoreError (telemetry cannot open)."""
    edge = edge or Edge(allowed_origins((), {}))
    try:
        base_url, credentials = split_credentials(cfg.base_url)
    except ValueError as exc:
        raise ConfigError(f"the upstream's URL cannot be read: {exc}") from None
    cfg = replace(cfg, base_url=base_url)
    auth = httpx.BasicAuth(*credentials) if credentials else None
    client = httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0), auth=auth)
    try:
        server = detect_server(client, cfg.base_url, cfg.server, kinds=KINDS)
        telemetry = Telemetry()
    except BaseException:
        client.close()
        raise
    session = f"serve-{new_id()}"
    checkpoints = CheckpointStore(
        checkpoints_dir(),
        session_quota_bytes=int(cfg.checkpoint_session_quota_mb * MiB),
        total_quota_bytes=int(cfg.checkpoint_total_quota_mb * MiB),
    )
    journal = StoreJournal(lambda: session, checkpoints, telemetry, log)

    def open_model(model: str) -> OpenLane:
        route = Route(DEFAULT_LANE, cfg.base_url, model, cfg.context_window, cfg.context_window_source)
        return open_lane(client, route, replace(cfg, model=model), log, KINDS, hint=server.kind, auth=auth)

    gateway = Gateway(ModelLanes(open_model), journal, cfg.policy, log, compact=compact)
    app = make_app(gateway, Upstream(server.root_url, cfg.api_key, auth), key=key, log=log)
    guarded = Guard(app, edge.origins, loopback=edge.loopback, exposed=(USED, WINDOW, VERDICT, COMPACTED))

    def close() -> None:
        telemetry.close()
        client.close()

    return Built(guarded, f"{server.kind} at {server.root_url}; session {session}", close)


def _print_checkpoint(wanted: str) -> int:
    """What the client sent before the gateway changed it, ready to send again."""
    store = CheckpointStore(checkpoints_dir())
    try:
        entry = next((e for e in store.list() if e.id == wanted), None)
        if entry is None:
            fail(StoreError(f"no checkpoint {wanted!r}: the x-aforo-compacted header names one"))
            return 1
        checkpoint = store.load(entry.path)
    except StoreError as exc:
        fail(exc)
        return 1
    request = Request(checkpoint.model, (), (), tuple(checkpoint.messages), 1)
    print(json.dumps({"model": checkpoint.model, "messages": messages_to_openai(request)}, indent=2))
    return 0


def _log(event: Event) -> None:
    """One line per request, per warning and per change of a conversation, on stderr."""
    if isinstance(event, Warning):
        line = f"! {event.message}"
    elif isinstance(event, Info) and "serve" in event.fields:
        line = str(event.fields["serve"])
    elif isinstance(event, ContextAction):
        line = f"{event.action} {event.before} -> {event.after} tokens (checkpoint {event.checkpoint})"
    else:
        return
    shown = clipped(sanitize(f"aforo serve: {line}", one_line=True), int(RECORD_CHARS.value))
    print(shown, file=sys.stderr, flush=True)


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
