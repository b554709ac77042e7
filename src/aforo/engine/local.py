"""`aforo --local`: find or bring up the local engine before the run, and let it go after.

Reuses the engine that is running (whoever started it) when it serves the model asked for (`-m NAME`;
any, when none is named), else installs what is missing — after saying what it will download and build
and how long that takes, and with the user's yes — and starts one on a free loopback port. What this
process started is stopped when it exits, unless another aforo still uses it or `aforo engine start`
pinned it.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from typing import TextIO

from aforo.engine.errors import ConsentNeeded, EngineError
from aforo.engine.home import EngineHome
from aforo.engine.install import Installer
from aforo.engine.pins import DEFAULT_CTX, MODELS, model_named
from aforo.engine.progress import Progress
from aforo.engine.server import Server, launch
from aforo.engine.shared import Running, SharedEngine


def attach_local_engine(
    window: int | None,
    model: str | None = None,
    *,
    assume_yes: bool,
    stream: TextIO | None = None,
    answer: TextIO | None = None,
) -> Server:
    """The engine `aforo --local` talks to: running, or installed and started now (until we exit).

    `model`: the name of one of the engine's models (UnknownModel lists them), or of the model the running
    engine serves (a GGUF of the user's own, from `aforo engine start --model FILE`).
    """
    stream = stream or sys.stderr
    answer = answer or sys.stdin
    home = EngineHome.from_env()
    shared = SharedEngine(home)
    progress = Progress(stream)
    current = shared.current()
    if current is not None and (model is None or _serves(current.server, model)):
        pin = MODELS[0]  # what runs answers; the default only matters if it stops before we attach
    else:
        pin = model_named(model)
        if current is not None:
            raise _other_model(current.server, pin.alias)
    installer = Installer(home, progress, model=pin)
    if current is None:
        todo = installer.plan()
        if todo:
            _consent(todo, home, assume_yes, stream, answer)
        installer.install()
    ctx = window or DEFAULT_CTX

    def start() -> Server:
        if installer.plan():
            # The engine that was running when we looked stopped since, and ours is not installed.
            raise ConsentNeeded("the running local engine stopped meanwhile; run aforo again")
        installed = installer.install()
        with progress.phase(f"starting llama-server with a window of {ctx} tokens"):
            return launch(installed.binary, installed.model, pin.alias, ctx, home.logs)

    pid = os.getpid()
    running = shared.acquire(pid, start, on_wait=lambda who: progress.say(f"waiting: {who} is starting it"))
    if model is not None and not _serves(running.server, model):
        # Another aforo started an engine with another model between our look and our start.
        shared.release(pid)
        raise _other_model(running.server, model)
    _release_at_exit(shared, pid)
    progress.say(_describe(running, window))
    return running.server


def _serves(server: Server, model: str) -> bool:
    return server.model.lower() == model.strip().lower()


def _other_model(server: Server, wanted: str) -> EngineError:
    return EngineError(
        f"the local engine already runs {server.model} at {server.url}, not {wanted}: `aforo engine stop` "
        f"ends it (then -m {wanted} starts that one), or drop -m to use it"
    )


def _consent(todo: list[str], home: EngineHome, assume_yes: bool, stream: TextIO, answer: TextIO) -> None:
    lines = "\n".join(f"  - {item}" for item in todo)
    print(f"aforo --local needs the local engine, not yet in {home.root}. It will:\n{lines}", file=stream)
    if assume_yes:
        return
    if not answer.isatty():
        raise ConsentNeeded(
            "not installing without a yes: run `aforo engine install` first, or pass --yes to install now"
        )
    print("Go ahead? [y/N] ", end="", file=stream, flush=True)
    if answer.readline().strip().lower() not in ("y", "yes"):
        raise ConsentNeeded("nothing installed. `aforo engine install` does it whenever you want")


def _describe(running: Running, window: int | None) -> str:
    server = running.server
    if running.started_here:
        how = "started for this run; stopped when it ends unless another aforo uses it"
    elif running.pinned:
        how = "running since `aforo engine start`; `aforo engine stop` ends it"
    else:
        how = "already running for another aforo; shared"
    note = ""
    if window and window > server.ctx:
        note = f" (less than the {window} asked: `aforo engine stop`, then run again for a new one)"
    return f"{server.model} at {server.url}, window {server.ctx} tokens{note} ({how})"


def _release_at_exit(shared: SharedEngine, pid: int) -> None:
    atexit.register(shared.release, pid)
    # A terminal closed or a `kill` would otherwise end aforo without running the atexit hook.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _exit_on_signal)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)
