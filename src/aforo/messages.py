"""Canonical conversation types: the one shape every provider, stage and store speaks.

Blocks and messages are frozen dataclasses so a context stage can never mutate a history it was
handed: it builds a new list, and the caller keeps the old one to roll back. `to_dict`/`from_dict`
are the single (de)serialization; a checkpoint or session must round-trip exactly through them.
This module imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field, replace
from typing import Any, Literal

Role = Literal["user", "assistant"]

# Why a provider stopped generating. `tool_use` means "run the tools and call me again".
StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal"]

CLEARED_NOTE = "[Old tool result cleared to save context. Run the tool again if you need this output.]"


@dataclass(frozen=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


# A tool call as a model writes it, before it has an id: its tool's name and its arguments.
Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use"] = "tool_use"


def fresh_call_ids(taken: Collection[str]) -> Iterator[str]:
    """Call ids no message of `taken` uses (`call_N`, counting on from their number): a result names the
    call it answers, so an id made by aforo (an attached file's Read, the pre-search, a call written
    as text) must not be one the conversation has. The one maker of them."""
    n = len(taken)
    while True:
        n += 1
        if f"call_{n}" not in taken:
            yield f"call_{n}"


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    content: str
    _: KW_ONLY
    is_error: bool = False
    cleared: bool = False
    # The tool's one-line summary of what it found (`a.py: 120 lines; defines f, g`), kept when cleared.
    facts: str = ""
    type: Literal["tool_result"] = "tool_result"


Block = TextBlock | ToolUse | ToolResult


@dataclass(frozen=True)
class Message:
    role: Role
    content: tuple[Block, ...]

    @staticmethod
    def user(text: str) -> Message:
        return Message("user", (TextBlock(text),))

    @staticmethod
    def assistant(text: str) -> Message:
        return Message("assistant", (TextBlock(text),))

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUse))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolResult))

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": [block_to_dict(b) for b in self.content]}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Message:
        role = data.get("role")
        if role not in ("user", "assistant"):
            raise ValueError(f"message role must be 'user' or 'assistant', got {role!r}")
        content = data.get("content")
        if not isinstance(content, list):
            raise ValueError("message content must be a list of blocks")
        return Message(role, tuple(block_from_dict(b) for b in content))


@dataclass(frozen=True)
class SystemPart:
    """One part of the system prompt; `name` lets /context account for each (base, AGENTS.md)."""

    text: str
    name: str = "system"


def object_schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A JSON object of exactly these properties: every tool's arguments and every constrained step.
    The keys keep one order (`required` left out when empty) so a spec serializes, and costs tokens,
    the same wherever it is built."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    # Written as a constrained step, the tool takes a list of its first argument (aforo.reply_format).
    batch: bool = False

    def lean(self) -> ToolSpec:
        """The same tool said in fewer tokens: its first sentence, its arguments without descriptions."""
        props = self.input_schema.get("properties", {})
        bare = {k: {a: b for a, b in v.items() if a != "description"} for k, v in props.items()}
        short = self.description.partition(". ")[0].removesuffix(".") + "."
        return ToolSpec(self.name, short, {**self.input_schema, "properties": bare}, self.batch)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class Request:
    model: str
    system: tuple[SystemPart, ...]
    tools: tuple[ToolSpec, ...]
    messages: tuple[Message, ...]
    max_tokens: int
    _: KW_ONLY  # how to ask, by name: three booleans stand in a row
    # None: the server's default sampling. 0 makes small models' behaviour repeatable.
    temperature: float | None = None
    # The server forces the answer to one JSON step (aforo.reply_format), not sent tool definitions.
    constrained: bool = False
    # No tool may be called: the model answers from what it has (after a step that made no progress).
    answer_only: bool = False
    # What the user asked in this run; a constrained request repeats it after the newest results.
    question: str = ""
    # The answer must have a word in it (a constrained request's schema says so): the one before said nothing.
    worded: bool = False

    @property
    def system_text(self) -> str:
        return "\n\n".join(p.text for p in self.system if p.text)

    def with_messages(self, messages: tuple[Message, ...] | list[Message]) -> Request:
        return replace(self, messages=tuple(messages))


@dataclass(frozen=True)
class Usage:
    """Token usage of one response. `input_tokens` excludes cached tokens (as Anthropic reports it)."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Everything the server says it read for this request, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.output_tokens + other.output_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


# --- the canonical streamed response -------------------------------------------------------------


@dataclass(frozen=True)
class StreamText:
    text: str


@dataclass(frozen=True)
class StreamToolCall:
    """A complete tool call; `arguments` is the raw JSON text the model produced (maybe malformed)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class StreamProgress:
    """The server's own progress through the prompt, in tokens (llama-server with `return_progress`)."""

    processed: int
    total: int
    cached: int = 0


@dataclass(frozen=True)
class MessageEnd:
    usage: Usage
    stop_reason: StopReason
    timings: dict[str, Any] = field(default_factory=dict)
    # The model the server says served this answer (its response's own `model`); "" when it does not say.
    model: str = ""
    # Why the server's usage report was not taken (a count no server can mean), `usage` then empty.
    usage_refused: str = ""
    # aforo closed the stream (the answer looped): the server never reported this answer's usage.
    stopped: bool = False


StreamEvent = StreamText | StreamToolCall | StreamProgress | MessageEnd


# --- serialization ------------------------------------------------------------------------------


def block_to_dict(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content}
    if block.is_error:
        out["is_error"] = True
    if block.cleared:
        out["cleared"] = True
    if block.facts:
        out["facts"] = block.facts
    return out


def block_from_dict(data: Any) -> Block:
    if not isinstance(data, dict):
        raise ValueError(f"a content block must be an object, got {type(data).__name__}")
    kind = data.get("type")
    try:
        if kind == "text":
            return TextBlock(str(data["text"]))
        if kind == "tool_use":
            inp = data["input"]
            if not isinstance(inp, dict):
                raise ValueError("tool_use input must be an object")
            return ToolUse(str(data["id"]), str(data["name"]), inp)
        if kind == "tool_result":
            return ToolResult(
                str(data["tool_use_id"]),
                str(data["content"]),
                is_error=bool(data.get("is_error", False)),
                cleared=bool(data.get("cleared", False)),
                facts=str(data.get("facts", "")),
            )
    except KeyError as exc:
        raise ValueError(f"{kind} block is missing the field {exc.args[0]!r}") from exc
    raise ValueError(f"unknown content block type {kind!r}")


def messages_to_list(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


def messages_from_list(data: Any) -> list[Message]:
    if not isinstance(data, list):
        raise ValueError("messages must be a list")
    return [Message.from_dict(m) for m in data]


def add_turn(wire: list[dict[str, Any]], turn: dict[str, Any]) -> None:
    """Append one chat message to a wire conversation. A user turn right after another is joined to it
    (a compacted conversation, then the next request; an aborted prompt, then the next one): some chat
    templates reject two in a row, and aforo writes no answer of its own between them."""
    if turn["role"] == "user" and wire and wire[-1]["role"] == "user":
        wire[-1] = {**wire[-1], "content": f"{wire[-1]['content']}\n\n{turn['content']}"}
    else:
        wire.append(turn)
