"""The workspaces whose project file the user trusted, by resolved path and the file's content hash.

A workspace's `.aforo.toml` comes with the checkout, so by default it may only tune the policy; the
user trusts it once (`aforo trust DIR` or `--trust-workspace`) to let it choose the server too. What is
remembered is the exact bytes the user agreed to (their SHA-256): an edited file, e.g. after a
`git pull`, is untrusted again until the user trusts it again. One small JSON file in the state
directory, written atomically and 0600.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aforo.errors import StoreError
from aforo.limits import STATE_FILE_BYTES
from aforo.store.atomic import atomic_write, read_json
from aforo.store.paths import trust_path

SCHEMA = 1
KIND = "aforo.trusted_workspaces"
TrustStatus = Literal["trusted", "changed", "untrusted"]


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


@dataclass(frozen=True)
class TrustedWorkspace:
    workspace: str  # the resolved path
    sha256: str  # of the project file as the user trusted it
    trusted_at: float  # unix time


class TrustStore:
    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        # Resolved lazily: creating the state directory is a side effect no constructor should have.
        return self._path if self._path is not None else trust_path()

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        data = read_json(
            self.path,
            "trust file",
            missing="",
            corrupt_advice="No workspace is trusted while it is unreadable; move it aside and trust again.",
            max_bytes=STATE_FILE_BYTES,
        )
        if (
            not isinstance(data, dict)
            or data.get("kind") != KIND
            or not isinstance(data.get("workspaces"), dict)
        ):
            raise StoreError(
                f"trust file {self.path} is not aforo's list of trusted workspaces; move it aside and "
                "trust the workspaces again (`aforo trust DIR`)."
            )
        if data.get("schema") != SCHEMA:
            raise StoreError(
                f"trust file {self.path} was written by a newer aforo; upgrade aforo to read it."
            )
        return data["workspaces"]

    def _write(self, workspaces: dict[str, Any]) -> None:
        data = {"kind": KIND, "schema": SCHEMA, "workspaces": workspaces}
        # ASCII: a path that is not valid UTF-8 (held as lone surrogates) still round-trips.
        atomic_write(self.path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("ascii"))

    def list(self) -> list[TrustedWorkspace]:
        out = []
        for workspace, entry in sorted(self._read().items()):
            if isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
                when = entry.get("trusted_at")
                out.append(
                    TrustedWorkspace(
                        workspace, entry["sha256"], float(when) if isinstance(when, int | float) else 0.0
                    )
                )
        return out

    def status(self, workspace: Path, sha256: str) -> TrustStatus:
        """Whether the project file of `workspace` with this hash is the one the user trusted."""
        entry = self._read().get(str(workspace))
        if not isinstance(entry, dict):
            return "untrusted"
        return "trusted" if entry.get("sha256") == sha256 else "changed"

    def trust(self, workspace: Path, sha256: str) -> TrustedWorkspace:
        workspaces = self._read()
        trusted = TrustedWorkspace(str(workspace), sha256, time.time())
        workspaces[trusted.workspace] = {"sha256": sha256, "trusted_at": trusted.trusted_at}
        self._write(workspaces)
        return trusted

    def revoke(self, workspace: Path) -> bool:
        """Forget `workspace`; False when it was not trusted."""
        workspaces = self._read()
        if workspaces.pop(str(workspace), None) is None:
            return False
        self._write(workspaces)
        return True
