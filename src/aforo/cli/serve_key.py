"""The key of `aforo serve`: from `--key-file`, the environment (`AFORO_SERVE_KEY`) or `--key`.

A command line is public on the machine: every local user reads it in `ps` and `/proc/PID/cmdline`. A
process's environment and a file of mode 0600 are the user's own, so those are the ways to prefer; `--key`
still works, with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aforo.errors import ConfigError, LimitExceeded
from aforo.limits import SERVE_KEY_BYTES

ENV = "AFORO_SERVE_KEY"
VISIBLE = (
    f"--key is on the command line, which every user of this machine can read (ps, /proc/PID/cmdline): "
    f"prefer {ENV}=KEY in the environment or --key-file PATH"
)


def serve_key(flag: str | None, path: str | None, env: Mapping[str, str]) -> str | None:
    """The key clients must send, or None. Raises ConfigError (both flags, a file that cannot be read
    or holds no key) or LimitExceeded (a file larger than any key)."""
    if flag and path:
        raise ConfigError("--key and --key-file both give the key: pass one of them")
    if path:
        return _read(Path(path).expanduser())
    return flag or env.get(ENV, "").strip() or None


def _read(path: Path) -> str:
    """The file's first line, without the spaces and newline around it."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(int(SERVE_KEY_BYTES.value) + 1)
    except OSError as exc:
        raise ConfigError(f"--key-file {path}: cannot be read ({exc.strerror})") from exc
    if len(raw) > SERVE_KEY_BYTES.value:
        raise LimitExceeded(SERVE_KEY_BYTES, f"--key-file {path} is larger than a key")
    try:
        lines = raw.decode("utf-8").strip().splitlines()
    except UnicodeDecodeError:
        raise ConfigError(f"--key-file {path}: not UTF-8 text; write the key on its first line") from None
    key = lines[0].strip() if lines else ""
    if not key:
        raise ConfigError(f"--key-file {path} is empty: write the key on its first line")
    return key
