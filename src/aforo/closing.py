"""A resource released by `close()` is also a context manager: `with X(...) as x:` closes it at the end.

The providers (their HTTP client) and the telemetry (its database) are such resources: each says how it
closes, and takes the `with` from here. It imports nothing of ours.
"""

from __future__ import annotations

from typing import Self


class Closing:
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
