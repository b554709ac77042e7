"""The one running engine every aforo process of this cache shares, and who is using it.

`run/server.json` records it; each `aforo --local` using it holds `run/users/<pid>`. A process that
leaves removes its file and stops the engine when nobody else uses it, unless the engine is pinned
(`aforo engine start` left it running on purpose). All decisions are taken under `run.lock`, so two
processes never start two engines and never stop one the other still uses. A user that died without
leaving (SIGKILL) is recognised by its dead PID and no longer counts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from aforo.engine.home import EngineHome, private_dir, private_file, read_json, write_json
from aforo.engine.server import Server, alive, healthy, is_llama_server, terminate


@dataclass(frozen=True)
class Running:
    server: Server
    pinned: bool  # started (or kept) by `aforo engine start`: only `aforo engine stop` ends it
    started_here: bool = False  # this call started it (rather than finding it running)


class SharedEngine:
    def __init__(self, home: EngineHome) -> None:
        self.home = home
        self.state_path = home.run / "server.json"
        self.users_dir = home.run / "users"

    def current(self) -> Running | None:
        """The recorded engine if it is a live, healthy llama-server; None otherwise."""
        state = read_json(self.state_path)
        server = Server.from_json(state) if state else None
        if server is None or not is_llama_server(server.pid) or not healthy(server.root_url):
            return None
        return Running(server, pinned=bool(state and state.get("pinned")))

    def users(self) -> list[int]:
        """PIDs of the live aforo processes using the engine (dead ones are forgotten on the way)."""
        pids = []
        for entry in self.users_dir.glob("*") if self.users_dir.is_dir() else []:
            if entry.name.isdigit() and alive(int(entry.name)):
                pids.append(int(entry.name))
            else:
                entry.unlink(missing_ok=True)
        return sorted(pids)

    def acquire(
        self,
        pid: int,
        start: Callable[[], Server],
        *,
        pinned: bool = False,
        on_wait: Callable[[str], None] | None = None,
    ) -> Running:
        """Use the running engine, or start one with `start`; `pid` counts as a user until `release`."""
        with self.home.lock("run", on_wait):
            running = self.current()
            if running is None:
                self._forget()
                running = Running(start(), pinned, started_here=True)
            elif pinned and not running.pinned:
                running = Running(running.server, True)
            write_json(self.state_path, {**running.server.to_json(), "pinned": running.pinned})
            if pid:
                private_dir(self.users_dir)
                private_file(self.users_dir / str(pid), "a").close()
            return running

    def release(self, pid: int) -> bool:
        """`pid` stops using the engine; True when that stopped it (nobody else needed it)."""
        with self.home.lock("run"):
            (self.users_dir / str(pid)).unlink(missing_ok=True)
            state = read_json(self.state_path)
            server = Server.from_json(state) if state else None
            if server is None or (state and state.get("pinned")) or self.users():
                return False
            terminate(server.pid)
            self._forget()
            return True

    def stop(self) -> tuple[Server | None, list[int]]:
        """Stop the recorded engine whoever uses it; return it (None when none ran) and its users."""
        with self.home.lock("run"):
            state = read_json(self.state_path)
            server = Server.from_json(state) if state else None
            users = self.users()
            stopped = server is not None and terminate(server.pid)
            self._forget()
            return (server if stopped else None), users

    def _forget(self) -> None:
        self.state_path.unlink(missing_ok=True)
        for entry in self.users_dir.glob("*") if self.users_dir.is_dir() else []:
            with contextlib.suppress(OSError):
                entry.unlink()
