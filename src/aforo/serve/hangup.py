"""A client that goes away stops what the gateway does for it: the upstream request included."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from starlette.requests import Request

T = TypeVar("T")


class Disconnected(Exception):
    """The client went away before its answer was ready."""


async def until_gone(request: Request, work: Callable[[], Awaitable[T]]) -> T:
    """`work`'s result; if the client disconnects first, `work` is cancelled (and with it the upstream
    request) and Disconnected raised."""
    result: list[T] = []
    failed: list[Exception] = []

    async with anyio.create_task_group() as group:

        async def run() -> None:
            # Its failure leaves the group as itself, not wrapped in an ExceptionGroup.
            try:
                result.append(await work())
            except Exception as exc:
                failed.append(exc)
            group.cancel_scope.cancel()

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(run)
        group.start_soon(watch)
    if failed:
        raise failed[0]
    if not result:
        raise Disconnected()
    return result[0]
