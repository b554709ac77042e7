"""Reads a compaction of this run has summarised: asked for again, they are answered from the summary.

After a compaction the 0.5B model sent the same reads again (its evidence list names them), they filled
the window, it was compacted again, and so on until the time ran out: no answer in 6 minutes. A read a
compaction of this run summarised is not run again; its result says what the summary keeps of it, and
a step that asks for nothing else is followed by a request that allows only the answer. Only what the run
itself read, summarised by its own compactions, counts: a new question may need the file again.
"""

from __future__ import annotations

from collections.abc import Sequence

from aforo.context.ledger import (
    CONTINUE,
    EVIDENCE_HEADER,
    SUMMARY_HEADER,
    evidence_source,
    is_compacted,
    tagged,
)
from aforo.messages import Message, ToolUse

# How much of the summary a note quotes about one read.
NOTE_CHARS = 400


def compacted(messages: Sequence[Message]) -> frozenset[str]:
    """The compacted messages of a conversation, by their text: those a run starts with are not its own."""
    return frozenset(m.text for m in messages if is_compacted(m))


def summarised(messages: Sequence[Message], before: frozenset[str]) -> dict[str, str]:
    """Each source the evidence list of a compaction since `before` names -> what its summary says of it."""
    found: dict[str, str] = {}
    for message in messages:
        if not is_compacted(message) or message.text in before:
            continue
        summary = _summary(message.text)
        unseen = set(tagged(message.text, "left_out"))  # the summary request could not show them
        for source in tagged(message.text, "evidence"):
            if source not in unseen:
                found[source] = summary
    return found


def note(use: ToolUse, summary: str) -> str:
    """The result of a read the summary already covers: the summary's lines that name its target."""
    target = next((v for v in use.input.values() if isinstance(v, str)), "")
    lines = [line.strip() for line in summary.splitlines() if target and target in line]
    kept = " / ".join(lines)[:NOTE_CHARS].rstrip(".") or f"its evidence line only ({evidence_source(use)})"
    return (
        f"[Already read before the compaction; the summary above keeps: {kept}. Answer from it, or ask "
        "for something not read yet.]"
    )


def _summary(text: str) -> str:
    start = text.find(SUMMARY_HEADER)
    if start == -1:
        return ""
    body = text[start + len(SUMMARY_HEADER) :]
    for end in (EVIDENCE_HEADER, CONTINUE):
        if (cut := body.find(end)) != -1:
            body = body[:cut]
    return body
