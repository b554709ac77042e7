"""The JSON documents a server publishes about itself, each fetched at most once per detection run.

The checks that tell the kind, the readers of the served window and the model listers ask for the same
few documents (a generic server's `/v1/models` answers all three), so detection passes them one
`Documents` that remembers every answer, a failure (None) included: a document that was not there a
moment ago is not asked for again within the same run.
"""

from __future__ import annotations

from typing import Any

import httpx

from aforo.wire.http import get_json_quiet


class Documents:
    def __init__(self, client: httpx.Client, root_url: str, v1_url: str) -> None:
        self.client = client
        self.root_url = root_url  # without /v1: where the server's own endpoints live
        self.v1_url = v1_url  # root + /v1: the OpenAI-compatible API
        self._answers: dict[str, Any | None] = {}

    def root(self, path: str) -> Any | None:
        """The document at `path` under the root URL (e.g. "/props"); None when it is not there."""
        return self._get(f"{self.root_url}{path}")

    def v1(self, path: str) -> Any | None:
        """The document at `path` under the /v1 URL (e.g. "/models"); None when it is not there."""
        return self._get(f"{self.v1_url}{path}")

    def _get(self, url: str) -> Any | None:
        if url not in self._answers:
            self._answers[url] = get_json_quiet(self.client, url)
        return self._answers[url]
