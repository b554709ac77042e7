"""An OpenAI-compatible server that truncates silently, as Ollama does, with a scripted "model".

It has a real window in tokens. A request that does not fit loses its oldest messages: the server keeps
the system message(s) and the newest messages that fit (the newest one always), drops the rest without
a word, answers HTTP 200 / finish "stop", and reports as `prompt_tokens`:

- mode "ollama":   the tokens of what it kept (at most the window);
- mode "plateau":  floor(window * 0.9) whenever it truncated;
- mode "collapse": 63 whenever it truncated (what Ollama showed for single oversized requests);
- `telltale=N`:    N whenever it truncated (the known window, window/2 + 2, 2048 ...), any mode.

A request that fits is reported whole. What it counts: every wire message (system included) at
`aforo.context.tokens`' rate — ceil((MESSAGE_OVERHEAD_CHARS + content + tool-call names and arguments)
/ CHARS_PER_TOKEN) — plus the JSON of the wire `tools`, estimated as text. `max_tokens` does not count
(Ollama truncates the prompt to num_ctx alone). The wire framing (tool wrappers, the system message's
overhead) makes this ~5% above `estimate_request`: a realistic calibration ratio.

The "model" is a policy that only SEES the kept messages; `reader_policy` is a ready-made one.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aforo.context.tokens import CHARS_PER_TOKEN, MESSAGE_OVERHEAD_CHARS, estimate_text
from dialects.openai_app import Call, Reply, models_endpoint, read_body, respond

LOST_TASK_ANSWER = "Ready to continue or answer any specific questions about the code."
COLLAPSED = 63


@dataclass(frozen=True)
class Seen:
    """What the scripted model gets: only the messages the server kept."""

    messages: list[dict[str, Any]]
    tools: list[str]  # names of the tools offered (empty: e.g. a compaction request)
    dropped: int  # how many messages the server dropped


Policy = Callable[[Seen], Reply]


@dataclass(frozen=True)
class Turn:
    """What the server did with one request (for assertions)."""

    total: int  # tokens of the whole request
    kept: int  # tokens of what it kept
    reported: int  # the prompt_tokens it answered with
    dropped: int  # messages dropped
    messages: list[dict[str, Any]]  # the kept messages


def message_tokens(message: dict[str, Any]) -> int:
    chars = MESSAGE_OVERHEAD_CHARS
    content = message.get("content")
    if isinstance(content, str):
        chars += len(content)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        chars += len(str(function.get("name", ""))) + len(str(function.get("arguments", "")))
    return math.ceil(chars / CHARS_PER_TOKEN)


def keep_newest(messages: list[dict[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
    """System messages plus the newest others that fit `budget` (the newest always); and how many dropped."""
    system = [m for m in messages if m.get("role") == "system"]
    others = [m for m in messages if m.get("role") != "system"]
    room = budget - sum(message_tokens(m) for m in system)
    kept: list[dict[str, Any]] = []
    for message in reversed(others):
        cost = message_tokens(message)
        if kept and cost > room:
            break
        kept.insert(0, message)
        room -= cost
    return system + kept, len(others) - len(kept)


class TruncatingServer:
    """`.app` is the Starlette app to serve; `.turns` records what happened to every request."""

    def __init__(
        self,
        policy: Policy,
        *,
        window: int,
        mode: Literal["ollama", "plateau", "collapse"] = "ollama",
        telltale: int | None = None,
        model: str = "test-model",
    ) -> None:
        self.policy = policy
        self.window = window
        self.mode = mode
        self.telltale = telltale
        self.turns: list[Turn] = []
        self._ids = itertools.count(1)
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                # No window here: the harness must not learn the real one from the catalog.
                Route("/v1/models", models_endpoint({model: None}, "max_model_len"), methods=["GET"]),
            ]
        )

    def _reported(self, total: int, kept: int, truncated: bool) -> int:
        if not truncated:
            return total
        if self.telltale is not None:
            return self.telltale
        if self.mode == "collapse":
            return COLLAPSED
        if self.mode == "plateau":
            return math.floor(self.window * 0.9)
        return min(kept, self.window)

    async def _chat(self, request: Request) -> Response:
        body = await read_body(request)
        if isinstance(body, Response):
            return body
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        tools = body.get("tools") or []
        tools_cost = estimate_text(json.dumps(tools)) if tools else 0
        kept, dropped = keep_newest(messages, self.window - tools_cost)
        total = tools_cost + sum(message_tokens(m) for m in messages)
        kept_cost = tools_cost + sum(message_tokens(m) for m in kept)
        reported = self._reported(total, kept_cost, dropped > 0 or kept_cost > self.window)
        self.turns.append(Turn(total, kept_cost, reported, dropped, kept))
        names = [str((t.get("function") or {}).get("name", "")) for t in tools if isinstance(t, dict)]
        reply = self.policy(Seen(kept, names, dropped))
        # Fresh ids per call, so a conversation never holds two tool calls with the same id.
        calls = [c if c.id else replace(c, id=f"call_{next(self._ids)}") for c in reply.calls]
        produced = reply.text + "".join(c.name + c.arguments for c in calls)
        reply = replace(
            reply,
            calls=calls,
            usage=True,
            prompt_tokens=reported,
            completion_tokens=estimate_text(produced),
        )
        return await respond(reply, body)


def _files_done(messages: list[dict[str, Any]]) -> tuple[bool, set[str]]:
    """Whether a Glob was asked for, and which files were Read (per kept calls and summaries)."""
    globbed, read = False, set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            globbed = globbed or function.get("name") == "Glob"
            if function.get("name") == "Read":
                try:
                    read.add(str(json.loads(function.get("arguments") or "{}").get("file_path")))
                except (ValueError, AttributeError):
                    continue
        content = message.get("content")
        if isinstance(content, str) and "Files already read:" in content:
            listed = content.split("Files already read:", 1)[1].splitlines()[0]
            read.update(f.strip() for f in listed.split(",") if f.strip())
            globbed = True
    return globbed, read


def reader_policy(task_marker: str, files: Sequence[str], *, pattern: str = "**/*") -> Policy:
    """A model that, while it can see the user's task (the text holding `task_marker`), Globs, then
    Reads `files` one per turn, then answers with the marker and a conclusion. When the task was
    dropped it answers like Ollama's model did: the generic LOST_TASK_ANSWER. A request without
    tools is taken as a compaction: it answers a summary that keeps the task and the files read.
    """

    def policy(seen: Seen) -> Reply:
        task = next(
            (
                m["content"]
                for m in seen.messages
                if m.get("role") == "user"
                and isinstance(m.get("content"), str)
                and task_marker in m["content"]
            ),
            None,
        )
        if task is None:
            return Reply(text=LOST_TASK_ANSWER)
        globbed, read = _files_done(seen.messages)
        if not seen.tools:
            done = ", ".join(f for f in files if f in read)
            return Reply(text=f"Goal: {task_marker} (the user's task).\nFiles already read: {done}\n")
        if not globbed:
            return Reply(
                text="Let me find the files.", calls=[Call("Glob", json.dumps({"pattern": pattern}))]
            )
        pending = [f for f in files if f not in read]
        if pending:
            return Reply(calls=[Call("Read", json.dumps({"file_path": pending[0]}))])
        return Reply(text=f"{task_marker}: I read {len(files)} files ({', '.join(files)}). Conclusion: done.")

    return policy
