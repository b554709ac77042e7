"""A reply read once: the model's answer (its text without the calls written in it) and its tool uses.

The display (`Shown.settle`), the batch (`tool_batch.act_on`) and the agent take this value, so a call
written as text is found once per reply and every reader sees the same calls with the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from aforo import safejson
from aforo.errors import LimitExceeded
from aforo.loop.textcalls import extract_text_tool_calls
from aforo.messages import Message, ToolUse, fresh_call_ids
from aforo.stream import Reply
from aforo.tools.registry import ToolRegistry


@dataclass(frozen=True)
class ReadReply:
    reply: Reply
    text: str  # the reply's text without the calls written in it
    uses: tuple[ToolUse, ...]

    @property
    def answer(self) -> str:
        """The text as the conversation keeps it: nothing, when it has only whitespace."""
        return self.text if self.text.strip() else ""


def read_reply(reply: Reply, tools: ToolRegistry, conversation: Sequence[Message]) -> ReadReply:
    """The calls of this answer, and its text without the calls that were written as text.

    Every call gets an id of its own: a result names the call it answers, so two calls that share an id
    (a server that repeats one, or reuses one from earlier in the conversation) would both get the
    second's result. A missing or taken id is replaced by a fresh one."""
    taken = {u.id for m in conversation for u in m.tool_uses}
    fresh = fresh_call_ids(taken)

    def own(call_id: str) -> str:
        chosen = call_id if call_id and call_id not in taken else next(fresh)
        taken.add(chosen)
        return chosen

    if reply.calls:
        uses = tuple(_use(own(c.id), c.name, c.arguments) for c in reply.calls)
        return ReadReply(reply, reply.text, uses)
    if reply.end.stop_reason == "max_tokens":
        # An answer cut by the output limit is rambling; calls written in it are not to be trusted.
        return ReadReply(reply, reply.text, ())
    # Small local models often write the call as JSON in their text instead of a structured call.
    rest, found = extract_text_tool_calls(reply.text, tools.names)
    return ReadReply(reply, rest, tuple(_use(own(""), name, args) for name, args in found))


def _use(call_id: str, name: str, arguments: str | dict[str, object]) -> ToolUse:
    if isinstance(arguments, dict):
        return ToolUse(call_id, name, dict(arguments))
    try:
        parsed = safejson.loads(arguments, f"the arguments of {name}") if arguments.strip() else {}
    except (json.JSONDecodeError, LimitExceeded):
        parsed = None
    # Malformed arguments are kept verbatim so the tool result can quote them back to the model.
    return ToolUse(call_id, name, parsed if isinstance(parsed, dict) else {"_raw_arguments": arguments})
