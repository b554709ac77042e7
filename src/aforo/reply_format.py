"""The reply format of constrained requests: each answer of the model is one JSON object (a step),
a batch of tool calls or the answer.

Where a server can force its output to a JSON schema (llama-server's `response_format`, Ollama's
`format`), a small model that would otherwise write malformed calls, invent call shapes or ramble
always produces a well-formed step. Measured with Qwen2.5-Coder 0.5B (shared/notes/small-models.md): a
`{"read": [paths]}` form makes it read every file it needs in one step; what it cannot judge is when it
has enough, which the agent settles (a step that only repeats calls it has the results of is followed
by a request whose schema allows only the answer).

Everything here is derived from the tools' specs: the schema, the few lines that tell the model the
reply format (sent instead of the tools' JSON definitions, which cost far more), the rendering of the
conversation in the form the model writes, and the parsing of its step. The answer streams as it is
generated: `reply_stream.AnswerStream` decodes the JSON string of `{"answer": "..."}` piece by piece.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aforo import safejson
from aforo.errors import LimitExceeded
from aforo.headings import Heading
from aforo.messages import (
    Call,
    Message,
    Request,
    TextBlock,
    ToolResult,
    ToolSpec,
    ToolUse,
    add_turn,
    object_schema,
)

ANSWER = "answer"
# Calls one step may batch. Without a bound the 0.5B model once listed the same four files over and over
# until the output limit (1 024 tokens, 43 s); a grammar with a bound must close the list.
MAX_BATCH = 12
# The first words of the reply format, and the heading of a tool's result in the conversation as the
# model is shown it (`Result of Read a.py:`): what a model that copies them is known by (loop/copied).
OPENING = "Reply with one JSON object"
RESULT_OF = Heading("Result of {call}:", call=r"\w+\b.*")
ERROR_FROM = Heading("Error from {call}:", call=r"\w+\b.*")


@dataclass(frozen=True, kw_only=True)
class StepForm:
    """How one tool is written as a step: `{key: primary}`, its first argument only (offered more, the
    0.5B model filled them with noise); a `batch` tool takes a list under its key, one call per item.
    Other arguments a call in the history has (or a server that ignored the schema wrote) are kept
    beside the key, shared by the batch."""

    tool: str
    key: str
    primary: str
    batch: bool
    schema: dict[str, Any]
    summary: str  # what the tool does, in a few words (its first sentence)

    def object_schema(self) -> dict[str, Any]:
        # Without the arguments' descriptions: the reply format says what each key is for.
        primary = self.schema.get("properties", {}).get(self.primary, {"type": "string"})
        value = (
            {"type": "array", "items": primary, "minItems": 1, "maxItems": MAX_BATCH}
            if self.batch
            else primary
        )
        return object_schema({self.key: value}, required=[self.key])

    def calls(self, step: dict[str, Any]) -> list[Call]:
        value = step[self.key]
        rest = {k: v for k, v in step.items() if k != self.key}
        items = value if self.batch and isinstance(value, list) else [value]
        # Each item once, in the order first named: after a compaction the 0.5B model listed the two
        # files of the evidence list six times each in one step, and every repeat cost a result.
        distinct = {json.dumps(item, sort_keys=True): item for item in items}
        return [(self.tool, {self.primary: item, **rest}) for item in distinct.values()]


def forms(tools: Sequence[ToolSpec]) -> list[StepForm]:
    out = []
    for tool in tools:
        lean = tool.lean()
        schema = lean.input_schema
        props = list(schema.get("properties", {}))
        primary = next(iter(schema.get("required", [])), props[0] if props else "")
        if primary:
            summary = lean.description.removesuffix(".")
            out.append(
                StepForm(
                    tool=tool.name,
                    key=tool.name.lower(),
                    primary=primary,
                    batch=tool.batch,
                    schema=schema,
                    summary=summary,
                )
            )
    return out


_ANSWER_SCHEMA = object_schema({ANSWER: {"type": "string"}}, required=[ANSWER])
# Asked again after an answer that said nothing: this one must start with a letter or a digit, so the
# grammar the server builds from it cannot write `...` (llama.cpp's converter takes an anchored pattern).
WORDED = "^[0-9A-Za-z].*$"
_WORDED_SCHEMA = object_schema({ANSWER: {"type": "string", "pattern": WORDED}}, required=[ANSWER])


def schema(tools: Sequence[ToolSpec], *, answer_only: bool = False, worded: bool = False) -> dict[str, Any]:
    """The JSON schema of one step: one of the tools' forms, or the answer (`worded`: one that starts
    with a letter or a digit)."""
    answer = _WORDED_SCHEMA if worded else _ANSWER_SCHEMA
    if answer_only:
        return answer
    return {"oneOf": [*(f.object_schema() for f in forms(tools)), answer]}


def request_schema(request: Request) -> dict[str, Any]:
    """The schema a constrained request sends (`response_format`, Ollama's `format`)."""
    return schema(request.tools, answer_only=request.answer_only, worded=request.worded)


def instructions(tools: Sequence[ToolSpec]) -> str:
    """The reply format, for the system prompt: one line per tool, from its spec. The same when only
    the answer is allowed (the schema says so): the prompt, and the server's cache of it, stay the same.

    Nothing in it is a value the model could copy: shown `{"answer": "..."}`, Qwen2.5-Coder 0.5B at the
    server's default temperature answered `...`, four times out of four, and `["file_path", ...]` made it
    read a file named `file_path`. Each key's value is said in words instead."""
    lines = [f"{OPENING} with one of these keys:"]
    for f in forms(tools):
        value = f"a list of {_words(f.primary)}s" if f.batch else f"a {_words(f.primary)}"
        also = ", only those the question needs" if f.batch else ""
        lines.append(f'"{f.key}": {value}. {f.summary}{also}.')
    # "only what the lines show, then stop": without it the 1.5B went on after a right answer about a
    # file with sentences the file does not show ("The file is not used by the user.", issue 37).
    lines.append(
        f'"{ANSWER}": your answer to the question, in words, once you have read what it needs: only what '
        "the lines show, then stop."
    )
    return "\n".join(lines)


def _words(name: str) -> str:
    return name.replace("_", " ")


def says_nothing(text: str, tools: Sequence[ToolSpec]) -> bool:
    """An answer with no word in it (empty, only punctuation or whitespace: the `...` a format example
    showed), or one made only of the reply format's own words (the format copied back)."""
    words = re.findall(r"\w+", text.lower())
    if not words:
        return True
    own = set(re.findall(r"\w+", instructions(tools).lower()))
    # The format's words alone can be a real answer ("In the workspace root."); with its shape around
    # them (braces, quotes, an ellipsis) or its own key, they are the format copied back.
    shaped = ANSWER in words or bool(re.search(r'[{}\[\]"]|\.\.\.|…', text))
    return shaped and set(words) <= own


# --- the conversation, as the model writes it ------------------------------------------------------


def step_text(uses: Sequence[ToolUse], tools: Sequence[ToolSpec]) -> str:
    """The calls of one assistant message as the step(s) the model would have written for them."""
    by_tool = {f.tool: f for f in forms(tools)}
    steps: list[dict[str, Any]] = []
    for use in uses:
        form = by_tool.get(use.name)
        if form is None or form.primary not in use.input:
            steps.append({"tool": use.name, **use.input})
            continue
        rest = {k: v for k, v in use.input.items() if k != form.primary}
        last = steps[-1] if steps else None
        same = (
            last is not None and form.key in last and {k: v for k, v in last.items() if k != form.key} == rest
        )
        if form.batch and same and last is not None:
            last[form.key].append(use.input[form.primary])
            continue
        primary = [use.input[form.primary]] if form.batch else use.input[form.primary]
        steps.append({form.key: primary, **rest})
    return "\n".join(json.dumps(s, ensure_ascii=False) for s in steps)


def answer_text(text: str) -> str:
    return json.dumps({ANSWER: text}, ensure_ascii=False)


def result_label(use: ToolUse | None) -> str:
    if use is None:
        return "the tool"
    target = next((v for v in use.input.values() if isinstance(v, str)), "")
    return f"{use.name} {target}".strip()


def render(
    messages: Sequence[Message], tools: Sequence[ToolSpec], question: str = ""
) -> list[dict[str, str]]:
    """The conversation as plain user/assistant turns in the step form: the model's own turns as the
    JSON it writes, tool results as text naming their call (no tool roles, no call ids), two user
    turns in a row joined into one (`add_turn`).

    The newest results are followed by the user's `question`, in their words: a small model answers
    what it read last. Measured with Qwen2.5-Coder 0.5B: asked "how many times does the client retry",
    it answered "1" with the question only before the results and "4" (MAX_RETRIES = 4) with it after
    them too. Only in the request: the conversation itself is not changed."""
    uses: dict[str, ToolUse] = {}
    wire: list[dict[str, str]] = []
    tail = question_after(messages, question)
    for i, message in enumerate(messages):
        if message.role == "assistant":
            calls = message.tool_uses
            uses.update((u.id, u) for u in calls)
            wire.append(
                {
                    "role": "assistant",
                    "content": step_text(calls, tools) if calls else answer_text(message.text),
                }
            )
            continue
        parts = []
        for block in message.content:
            if isinstance(block, ToolResult):
                label = result_label(uses.get(block.tool_use_id))
                head = (ERROR_FROM if block.is_error else RESULT_OF)(call=label)
                parts.append(f"{head}\n{block.content}")
            elif isinstance(block, TextBlock) and block.text:
                parts.append(block.text)
        if tail and i == len(messages) - 1:
            parts.append(tail)
        add_turn(wire, {"role": "user", "content": "\n\n".join(parts)})
    return wire


def question_after(messages: Sequence[Message], question: str) -> str:
    """What `render` writes after the last message: the question, when that message holds results."""
    return question if question and messages and messages[-1].tool_results else ""


def appended_question(request: Request) -> str:
    """The question a request's wire form repeats after its newest results ("" when it repeats none).

    On the next turn those results are no longer the newest: the question moves to the end, and what
    the prompt grew by is the new messages alone (the truncation check relies on it)."""
    return question_after(request.messages, request.question) if request.constrained else ""


def repeated_chars(request: Request) -> int:
    """What the wire form adds after the newest results, in characters: the question it repeats there
    (render joins it with a blank line)."""
    tail = appended_question(request)
    return len(tail) + 2 if tail else 0


def system_text(request: Request) -> str:
    """The system prompt a constrained request sends: aforo's, then the reply format."""
    fmt = instructions(request.tools)
    return f"{request.system_text}\n\n{fmt}" if request.system_text else fmt


def wire_messages(request: Request) -> list[dict[str, str]]:
    """A constrained request's whole conversation as plain chat turns (system first)."""
    turns = render(request.messages, request.tools, request.question)
    return [{"role": "system", "content": system_text(request)}, *turns]


def definition_chars(request: Request) -> int:
    """What telling the model about the tools costs, in characters: the reply format of a constrained
    request, or the tools' JSON definitions."""
    if request.constrained:
        return len(system_text(request)) - len(request.system_text)
    return sum(len(json.dumps(t.to_dict(), ensure_ascii=False)) for t in request.tools)


# --- the model's step -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """What one constrained answer says: calls to run, or the answer (`calls` empty)."""

    calls: tuple[Call, ...] = ()
    answer: str = ""


def parse(text: str, tools: Sequence[ToolSpec]) -> Step | None:
    """The step `text` holds, or None when it is not one (a server that ignored the schema)."""
    try:
        value = safejson.loads(text, "the model's step")
    except (ValueError, LimitExceeded):
        return None
    if not isinstance(value, dict):
        return None
    if set(value) == {ANSWER} and isinstance(value[ANSWER], str):
        return Step(answer=value[ANSWER])
    for form in forms(tools):
        if form.key in value:
            return Step(calls=tuple(form.calls(value)))
    return None
