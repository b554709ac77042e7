"""Where the engine lives: one cache directory, its layout, its locks and its stamps.

    <root>/                          AFORO_ENGINE_HOME, else the platform's cache dir + /engine
      llama-server/<tag>-<cpu>-<flags>/   a venv with the built llama-server, stamp.json written last
      models/<name>.gguf (+ .stamp.json)  the default model, trusted while size and mtime match the stamp
      logs/                               build and server logs
      run/server.json, run/users/<pid>    the running engine and the aforo processes using it
      install.lock, run.lock              flock(2) locks: one build at a time, one start at a time

Everything that can be half-done (a build, a download) is judged by a stamp written after it was
checked, so a crash leaves something a later run redoes, never something it uses.

Private like aforo's state (`aforo.store.paths`): every directory aforo creates here is 0700 and every
file it writes 0600, whatever the umask (logs quote prompts and paths, and the binary is run from
here); the tools it runs (venv, pip, llama-server) run under umask 077. An existing directory aforo did
not create is never chmod-ed, only checked: one others can write to is refused with the reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import platformdirs

from aforo.engine.errors import EngineError
from aforo.engine.pins import EnginePin, ModelPin
from aforo.errors import StoreError
from aforo.store.atomic import atomic_write
from aforo.store.paths import ensure_dir, open_private

# The umask of the processes the engine runs (venv, pip, the build, llama-server): what they create in
# the cache is the user's alone, like what aforo writes there itself.
PRIVATE_UMASK = 0o077
_OPEN_FLAGS = {
    "w": os.O_WRONLY | os.O_TRUNC,
    "wb": os.O_WRONLY | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_APPEND,
    "a+": os.O_RDWR | os.O_APPEND,
}


def cpu_key() -> str:
    """Identify the CPU type and Python an engine venv is valid for (a build runs where it was built)."""
    parts = [platform.system(), platform.machine(), platform.python_version()]
    try:
        info = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        parts.append(platform.processor())
    else:
        # The first processor's model name and flags describe the instruction set the build targets.
        for name in ("model name", "flags", "Features", "CPU part"):
            for line in info.splitlines():
                if line.split(":", 1)[0].strip() == name:
                    parts.append(line.split(":", 1)[1].strip())
                    break
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _ensure(path: Path) -> Path:
    return ensure_dir(path, variable="AFORO_ENGINE_HOME", holds="the local engine (its build, model, logs)")


def private_dir(path: Path) -> Path:
    """`path` and its missing parents as 0700 directories (an existing one checked, never chmod-ed)."""
    try:
        return _ensure(path)
    except StoreError as exc:
        raise EngineError(str(exc)) from exc


def private_file(path: Path, mode: str) -> IO[Any]:
    """`path` opened with `mode` ("w", "wb", "a", "a+"), created 0600 whatever the umask."""
    return os.fdopen(open_private(path, _OPEN_FLAGS[mode]), mode)


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Replace `path` atomically: a reader sees the old stamp or the new one, never half of one."""
    atomic_write(path, (json.dumps(value, indent=2) + "\n").encode())


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from `path`, or None when it is missing, unreadable or not an object."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class EngineHome:
    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> EngineHome:
        env = dict(os.environ) if env is None else env
        value = env.get("AFORO_ENGINE_HOME")
        root = Path(value).expanduser() if value else Path(platformdirs.user_cache_dir("aforo")) / "engine"
        return cls(root)

    def engine_dir(self, pin: EnginePin) -> Path:
        # The build options are part of the key: a build made with other flags is another engine.
        flags = hashlib.sha256(pin.cmake_args.encode()).hexdigest()[:8]
        return self.root / "llama-server" / f"{pin.tag}-{cpu_key()}-{flags}"

    def model_path(self, pin: ModelPin) -> Path:
        return self.root / "models" / pin.gguf_name

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        return self.root / "run"

    def ensure_writable(self) -> None:
        """Fail early and clearly when the cache cannot be written, before any download starts."""
        try:
            for directory in (self.root, self.logs, self.run):
                _ensure(directory)
            with tempfile.TemporaryFile(dir=self.root):
                pass
        except StoreError as exc:
            if not isinstance(exc.__cause__, OSError):  # there, but unsafe or not a directory
                raise EngineError(str(exc)) from exc
            cause = exc.__cause__
        except OSError as exc:
            cause = exc
        else:
            return
        raise EngineError(
            f"the engine cache {self.root} is not writable ({cause.strerror or cause}). "
            "Set AFORO_ENGINE_HOME to a directory you can write."
        ) from cause

    @contextlib.contextmanager
    def lock(self, name: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold `<root>/<name>.lock`; `on_wait` hears who holds it when we have to wait."""
        self.ensure_writable()
        with private_file(self.root / f"{name}.lock", "a+") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    fh.seek(0)
                    on_wait(fh.read().strip() or "another aforo process")
                fcntl.flock(fh, fcntl.LOCK_EX)
            # Say who holds it, for the next process that has to wait.
            fh.truncate(0)
            fh.write(f"aforo process {os.getpid()}")
            fh.flush()
            yield
