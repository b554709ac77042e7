"""The way of one chat request through the gateway, step by named step: start at `ChatPath.receive`;
each step is a method below it, in the order a request meets them, and the way upstream and back
continues in `upstream_leg.UpstreamLeg.go`.

A chat request is read (bounded), admitted by its conversation's governor (`decisions`), and sent where
`upstream_call.way_for` says; its answer comes back through the leg. A request that cannot fit reaches
the client as the overflow error its own code handles; a step that ends the request early raises
`Answered` with the response the client gets. However the request ends, its ticket is finished once.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from aforo import safejson
from aforo.context.budget import DEFAULT_MAX_TOKENS
from aforo.errors import ConfigError, LimitExceeded, ProviderError
from aforo.events import EventSink, Warning
from aforo.gateway.decisions import Gateway, Refused, Ticket
from aforo.gateway.inbound import Api, BadRequest, Inbound, read_inbound, read_request
from aforo.gateway.upstream_call import way_for
from aforo.gateway.upstream_leg import Disconnected, UpstreamLeg, error_body, overflow_body, verdict_headers


class Answered(Exception):
    """A step ended the request early: `response` is what the client gets."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


class ChatPath:
    def __init__(self, gateway: Gateway, leg: UpstreamLeg, say: EventSink) -> None:
        self.gateway, self.leg, self.say = gateway, leg, say

    async def receive(self, request: Request, api: Api) -> Response:
        """A client's chat request, in `api`'s words: read, admitted, sent, answered."""
        try:
            inbound = await self.read(request, api)
            ticket = await self.admit(request, inbound)
            return await self.send(request, ticket)
        except Answered as answered:
            return answered.response

    async def read(self, request: Request, api: Api) -> Inbound:
        """The client's body, within `serve_request_bytes`, as a request the governor can count."""
        try:
            raw = await read_request(request)
            return read_inbound(api, safejson.loads(raw, "the request body"), DEFAULT_MAX_TOKENS)
        except LimitExceeded as exc:
            raise Answered(JSONResponse(error_body(api, str(exc)), 413)) from exc
        except (BadRequest, ValueError) as exc:
            message = f"not a request aforo serve can read: {exc}"
            raise Answered(JSONResponse(error_body(api, message), 400)) from exc

    async def admit(self, request: Request, inbound: Inbound) -> Ticket:
        """Its conversation's governor admits it (in a worker thread: it may ask the server to count or
        summarize), or it is refused as the overflow the client's code handles."""
        who = request.client.host if request.client else "?"
        client = f"{who} {request.headers.get('user-agent', '')}".strip()[:200]
        try:
            return await run_in_threadpool(self.gateway.admit, inbound, client)
        except Refused as exc:
            self.say(Warning(message=f"refused {inbound.model}: {exc}"))
            headers = verdict_headers(exc.used, exc.window, "refused")
            raise Answered(JSONResponse(overflow_body(inbound.api, str(exc)), 400, headers=headers)) from exc
        except (ConfigError, LimitExceeded, ProviderError) as exc:
            body = error_body(inbound.api, str(exc), "server_error")
            raise Answered(JSONResponse(body, 502)) from exc

    async def send(self, request: Request, ticket: Ticket) -> Response:
        """Upstream gets what `way_for` says (`UpstreamLeg`). However the request ends, the ticket is
        finished once."""
        try:
            return await self.leg.go(request, ticket, way_for(ticket))
        except Disconnected:
            self.gateway.finish(ticket, "abandoned", None)
            return Response(status_code=499)  # nobody reads it: the client is gone
        except BaseException:
            self.gateway.finish(ticket, "failed", None)
            raise
