"""The summary request of a compaction, in one of two forms; both name a word budget, so a small model
does not write up to its output limit.

- On the conversation's own server, the conversation's own request with the summary asked as one more
  user turn (`continued_summary_request`), when that fits the window: same system prompt, tools and
  messages, so the server's prompt cache reads only the new turn. llama-server keeps a slot's prompt
  and reuses its longest common prefix; a summary under another system prompt shares none of it.
  Measured with Qwen2.5-Coder 1.5B on a loaded 2-core machine: the transcript form read 2 608 tokens
  in 99 s, past its share of a 150 s question, so every compaction of a held-out round went without
  the model's summary, and the summary left the slot holding its own prompt, so the answer after it
  read the whole compacted conversation again.
- Otherwise (another lane, or no room for the turn) the history as a transcript under its own system
  prompt (`fit_summary_request`), shrunk until it fits the summary lane's window (peers fail with
  "context limit exceeded" while compacting): re-runnable tool output first, oldest first, then long
  assistant prose; the user's messages are never cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from aforo.context.ledger import evidence_source, short_input
from aforo.context.tokens import Count, estimate_request, estimate_text
from aforo.errors import CompactionError
from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolUse

SECTIONS = """Goal: what the user asked, in their words.
Constraints: hard rules (must / never) and soft preferences the user stated.
Decisions: each decision taken so far, with why (e.g. "option A rejected because it broke X").
Evidence: each fact learned, with its source (file path and lines, or the tool call).
Next action: the single next step to finish the task.
Be specific: name files, functions and numbers. Do not invent anything. Output only the summary."""
SUMMARY_SYSTEM = f"""You compact the conversation of a read-only coding assistant so it can continue the \
user's task in less context. Write a summary with exactly these sections:
{SECTIONS}"""
# The turn that asks the conversation's own server for the summary; its first words mark it (tests and
# bench/recording_proxy tell a summary request by them).
SUMMARY_ASK = "aforo compacts this conversation now"
CONTINUED_ASK = f"""{SUMMARY_ASK}: stop here, do not answer the last request and do not call a tool. \
Write a summary of the conversation above, so the assistant can continue the user's task in less \
context, with exactly these sections:
{SECTIONS}"""

OMITTED_OUTPUT = "[output omitted to fit the summary request; re-run the tool to see it]"
# How each kind of piece is shortened, in the order they are given up: re-runnable output first, then
# the assistant's prose (its head kept), then the call markers themselves (the evidence list keeps them).
SHORTER = {
    "tool": lambda text: OMITTED_OUTPUT,
    "assistant": lambda text: text[:300] + " [… shortened]",
    "call": lambda text: "",
}


@dataclass(frozen=True)
class Piece:
    role: str
    text: str
    # "tool" (re-runnable output), "assistant" (prose), "call" (a tool call marker) or "" (never cut)
    shrinkable: str


def transcript_pieces(messages: list[Message] | tuple[Message, ...]) -> list[Piece]:
    """The conversation as pieces a summary request can shrink. Cleared results are left out (the
    call says the tool ran), and a call repeated back to back is one piece with a count."""
    names: dict[str, ToolUse] = {}
    pieces: list[Piece] = []
    last_marker, repeats = "", 0
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                kind = (
                    "assistant" if message.role == "assistant" else ("tool" if message.tool_results else "")
                )
                if block.text.strip():
                    pieces.append(Piece(message.role, block.text, kind))
            elif isinstance(block, ToolUse):
                names[block.id] = block
                marker = f"[called {block.name} {_quoted(block.input)}]"
                if pieces and pieces[-1].shrinkable == "call" and marker == last_marker:
                    repeats += 1
                    pieces[-1] = Piece("assistant", f"{marker} x{repeats}", "call")
                else:
                    last_marker, repeats = marker, 1
                    pieces.append(Piece("assistant", marker, "call"))
            elif isinstance(block, ToolResult) and not block.cleared:
                use = names.get(block.tool_use_id)
                label = f"{use.name} {_quoted(use.input)}" if use else "tool"
                status = "error" if block.is_error else "result"
                pieces.append(Piece(f"{status} of {label}", block.content, "tool"))
    return pieces


def _quoted(args: dict[str, Any]) -> str:
    """A call's input in a marker or a result's label: its long strings cut (`short_input`)."""
    return json.dumps(short_input(args), ensure_ascii=False, sort_keys=True)


def render(pieces: list[Piece]) -> str:
    return "\n\n".join(f"<{p.role}>\n{p.text}\n</{p.role.split(' ', 1)[0]}>" for p in pieces if p.text)


_OMITTED = re.compile(r"<(?:result|error) of (\w+) (\{.*\})>\n" + re.escape(OMITTED_OUTPUT))


def omitted(request: Request) -> list[str]:
    """The sources (as the evidence list names them) of the results a summary request left out to fit:
    the summary knows nothing of them, so the compacted message names them instead of losing them."""
    text = request.messages[-1].text if request.messages else ""
    found: dict[str, None] = {}
    for name, args in _OMITTED.findall(text):
        try:
            parsed = json.loads(args)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            found[evidence_source(ToolUse("", name, parsed))] = None
    return list(found)


# A summary is worth applying only if it is much shorter than what it replaces (aforo keeps the requests
# verbatim next to it), and a small model without a length target writes up to its output limit. So the
# request names a word budget: a third of the conversation, within what the output limit can hold.
SUMMARY_SHARE = 1 / 3
WORDS_PER_TOKEN = 0.75
MIN_SUMMARY_WORDS = 60
# A summary's length is its time: it is written token by token once the prompt is read, and the 1.5B
# writes 27.6 tokens a second on 2 idle cores, 2-7 while other jobs run. The 614 words a third of a
# 4 096 window's conversation came to were not written within the summary's share of the question's
# time (75 s of 150): in a development session (colorama-h, 4 096) the summary had 63 tokens when its
# share was up, and the compaction went on aforo's record alone. That record keeps every request,
# decision and source verbatim beside the summary, which needs only what was learned.
MAX_SUMMARY_WORDS = 200
# The summary's output limit (within the lane's reserve): room for MAX_SUMMARY_WORDS and a model that
# writes past its budget; a summary cut there is kept as far as it got.
SUMMARY_MAX_TOKENS = 512


def summary_words(conversation_tokens: int, max_tokens: int) -> int:
    """The word budget a summary request names for a conversation of `conversation_tokens`."""
    ceiling = int(max_tokens * WORDS_PER_TOKEN * 0.8)  # room for the section headers and stray tokens
    wanted = int(conversation_tokens * SUMMARY_SHARE * WORDS_PER_TOKEN)
    return max(min(MIN_SUMMARY_WORDS, ceiling), min(wanted, ceiling, MAX_SUMMARY_WORDS))


def summary_limit(reserve: int) -> int:
    """The output limit of a summary request on a lane that reserves `reserve` tokens for answers."""
    return min(reserve, SUMMARY_MAX_TOKENS)


def _asked(ask: str, instructions: str | None, words: int | None) -> str:
    if instructions:
        ask += f"\n\nThe user adds these instructions for the summary: {instructions}"
    if words is not None:
        ask += f"\n\nKeep the summary under {words} words."
    return ask + "\n\nWrite the summary now."


def summary_request(
    model: str, pieces: list[Piece], max_tokens: int, instructions: str | None, words: int | None = None
) -> Request:
    ask = _asked("Here is the conversation to summarize:\n\n" + render(pieces), instructions, words)
    return Request(model, (SystemPart(SUMMARY_SYSTEM, "compaction"),), (), (Message.user(ask),), max_tokens)


def continued_summary_request(request: Request, max_tokens: int, instructions: str | None) -> Request:
    """`request` (the conversation's own, as its server last read it) with the summary asked as one more
    user turn; no tool may be called, and it repeats no question after the newest results."""
    words = summary_words(estimate_text(render(transcript_pieces(request.messages))), max_tokens)
    ask = Message.user(_asked(CONTINUED_ASK, instructions, words))
    return replace(
        request,
        messages=(*request.messages, ask),
        max_tokens=max_tokens,
        answer_only=True,
        question="",
        worded=False,
    )


def fit_summary_request(
    model: str,
    messages: list[Message] | tuple[Message, ...],
    *,
    available: int,
    max_tokens: int,
    count: Callable[[Request], Count],
    instructions: str | None = None,
    lane: str = "",
) -> tuple[Request, Count]:
    """The largest faithful summary request whose prompt fits `available` tokens, and its count.

    Shrinks in order: tool outputs oldest first, then assistant prose oldest first (head kept). Pieces
    are sized with the cheap estimate, scaled by what `count` (maybe an exact, remote counter) said of
    the whole, so `count` runs a handful of times, not once per piece. Raises CompactionError when even
    the user's own messages do not fit.
    """
    pieces = transcript_pieces(messages)
    # The budget follows the whole conversation, not what is left of it after shrinking for the window.
    words = summary_words(estimate_text(render(pieces)), max_tokens)
    request = summary_request(model, pieces, max_tokens, instructions, words)
    counted = count(request)
    tokens = counted.tokens
    target = available
    for _round in range(4):
        if tokens <= available:
            return request, counted
        scale = tokens / max(1, estimate_request(request))
        excess = (tokens - target) / scale
        for kind in ("tool", "assistant", "call"):
            for i, piece in enumerate(pieces):
                if excess <= 0:
                    break
                if piece.shrinkable != kind:
                    continue
                short = SHORTER[kind](piece.text)
                if len(short) < len(piece.text):
                    excess -= estimate_text(piece.text) - estimate_text(short)
                    pieces[i] = Piece(piece.role, short, "")
        request = summary_request(model, pieces, max_tokens, instructions, words)
        previous, counted = tokens, count(request)
        tokens = counted.tokens
        if tokens >= previous:
            break
        # The estimate undershot: aim lower by what is still over.
        target = max(1, target - max(0, tokens - available))
    if tokens <= available:
        return request, counted
    on = f" on lane {lane!r}" if lane else ""
    raise CompactionError(
        f"the summary request still needs {tokens} tokens after dropping every re-runnable tool output, "
        "shortening the assistant's messages and the tool calls, "
        f"more than the {available} available{on}; the user's own messages are never cut, so nothing was "
        "compacted. Start a new conversation (/clear) or raise the context window (--context-window"
        + (", or that lane's context_window)." if lane else ").")
    )
