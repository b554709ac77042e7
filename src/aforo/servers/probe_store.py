"""Remembered probe results, per (server root URL, model), so later runs use them as a window source.

One small JSON file in the state directory. It is a cache of a measurement, not user data: an unreadable
or foreign file reads as "nothing remembered" (the window then comes from elsewhere, with its warning),
and the next probe rewrites it atomically.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aforo.errors import StoreError
from aforo.limits import STATE_FILE_BYTES
from aforo.store.atomic import atomic_write, encode_json, read_json
from aforo.store.paths import state_dir

PROBES_FILE = "probes.json"
SCHEMA = 1
OVERFLOWS = ("error", "truncate", "collapse", "none")


@dataclass(frozen=True)
class RememberedProbe:
    window: int
    overflow: str
    source: str
    measured_at: float  # unix time

    @property
    def window_source(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.measured_at))
        return f"aforo probe ({self.source}, measured {when})"


def _key(root_url: str, model: str) -> str:
    return f"{root_url.rstrip('/')} {model}"


class ProbeStore:
    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        # Resolved lazily: creating the state directory is a side effect no constructor should have.
        return self._path if self._path is not None else state_dir() / PROBES_FILE

    def _read(self) -> dict[str, Any]:
        try:
            data = read_json(
                self.path, "probe results", missing="", corrupt_advice="", max_bytes=STATE_FILE_BYTES
            )
        except StoreError:
            return {}
        if (
            not isinstance(data, dict)
            or data.get("schema") != SCHEMA
            or not isinstance(data.get("probes"), dict)
        ):
            return {}
        return data["probes"]

    def load(self, root_url: str, model: str) -> RememberedProbe | None:
        entry = self._read().get(_key(root_url, model))
        if not isinstance(entry, dict):
            return None
        window, overflow = entry.get("window"), entry.get("overflow")
        if not isinstance(window, int) or window < 1 or overflow not in OVERFLOWS:
            return None
        measured = entry.get("measured_at")
        return RememberedProbe(
            window,
            str(overflow),
            str(entry.get("source", "probe")),
            float(measured) if isinstance(measured, int | float) else 0.0,
        )

    def save(self, root_url: str, model: str, window: int, overflow: str, source: str) -> RememberedProbe:
        remembered = RememberedProbe(window, overflow, source, time.time())
        probes = self._read()
        probes[_key(root_url, model)] = {
            "window": window,
            "overflow": overflow,
            "source": source,
            "measured_at": remembered.measured_at,
        }
        data = {"schema": SCHEMA, "probes": probes}
        atomic_write(self.path, encode_json(data, indent=2, sort_keys=True) + b"\n")
        return remembered
