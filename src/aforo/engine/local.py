"""`aforo --local`: find or bring up the local engine before the run, and let it go after.

Reuses the engine that is running (whoever started it), else installs what is missing — after saying
what it will download and build and how long that takes, and with the user's yes — and starts one on a
free loopback port. What this process started is stopped when it exits, unless another aforo still
uses it or `aforo engine start` pinned it.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from typing import TextIO

from aforo.engine.errors import ConsentNeeded
from aforo.engine.home import EngineHome
from aforo.engine.install import Installer
from aforo.engine.pins import DEFAULT_CTX, QWEN_CODER_05B
from aforo.engine.progress import Progress
from aforo.engine.server import Server, launch
from aforo.engine.shared import Running, SharedEngine


def attach_local_engine(
    window: int | None, *, assume_yes: bool, stream: TextIO | None = None, answer: TextIO | None = None
) -> Server:
    """The engine `aforo --local` talks to: running, or installed and started now (until we exit)."""
    stream = stream or sys.stderr
    answer = answer or sys.stdin
    home = EngineHome.from_env()
    shared = SharedEngine(home)
    progress = Progress(stream)
    installer = Installer(home, progress)
    if shared.current() is None:
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
            return launch(installed.binary, installed.model, QWEN_CODER_05B.alias, ctx, home.logs)

    pid = os.getpid()
    running = shared.acquire(pid, start, on_wait=lambda who: progress.say(f"waiting: {who} is starting it"))
    _release_at_exit(shared, pid)
    progress.say(_describe(running, window))
    return running.server


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
