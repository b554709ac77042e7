"""The ledger: what must survive a compaction, kept verbatim by aforo rather than trusted to a summary.

A small model's summary may drop the user's request or a constraint ("never touch tests/"); peers lose
them exactly there. aforo extracts them from the conversation itself, re-attaches them verbatim to every
compacted conversation, and records which ones the model's summary missed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from aforo.messages import Message, ToolUse

COMPACTED_HEADER = "[Conversation compacted by aforo to save context."

_HARD = re.compile(
    r"\b(must|never|don't|do not|only|always|exactly|at most|at least|no more than|required|forbidden|"
    r"nunca|siempre|solo|sólo|no )\b",
    re.IGNORECASE,
)
_SOFT = re.compile(r"\b(should|prefer|preferably|ideally|try to|avoid|if possible|mejor|preferible)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


@dataclass(frozen=True)
class Evidence:
    source: str
    tool_use_id: str


@dataclass(frozen=True)
class Ledger:
    requests: tuple[str, ...] = ()
    hard: tuple[str, ...] = ()
    soft: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)

    @property
    def goal(self) -> str:
        return self.requests[0] if self.requests else ""

    def missing_from(self, summary: str) -> list[str]:
        """Ledger items the summary neither states nor references (compared without case/spacing)."""
        norm = _normalize(summary)
        missing = [f"request: {r}" for r in self.requests if _normalize(r) not in norm]
        missing += [f"constraint: {c}" for c in (*self.hard, *self.soft) if _normalize(c) not in norm]
        for ev in self.evidence:
            target = ev.source.split(" ", 1)[-1]
            if _normalize(target) not in norm:
                missing.append(f"evidence: {ev.source}")
        return missing


def _normalize(text: str) -> str:
    return " ".join(text.lower().split())


def constraints_of(text: str) -> tuple[list[str], list[str]]:
    hard: list[str] = []
    soft: list[str] = []
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        if _SOFT.search(sentence):
            soft.append(sentence)
        elif _HARD.search(sentence):
            hard.append(sentence)
    return hard, soft


def evidence_source(use: ToolUse) -> str:
    args = use.input
    target = args.get("file_path") or args.get("path") or args.get("pattern") or ""
    source = f"{use.name} {target}".strip()
    if use.name == "Read" and ("offset" in args or "limit" in args):
        start = int(args.get("offset") or 1)
        source += f" lines {start}-{start + int(args.get('limit') or 0) - 1}" if args.get("limit") else ""
    elif use.name == "Grep" and args.get("glob"):
        source += f" in {args['glob']}"
    if not target:
        source = f"{use.name} {json.dumps(args, ensure_ascii=False, sort_keys=True)}"
    return source


def tagged(text: str, tag: str) -> list[str]:
    """The bodies of every <tag>…</tag> in `text`, in order (how compacted messages carry the ledger)."""
    found = []
    start = 0
    while (i := text.find(f"<{tag}>", start)) != -1:
        j = text.find(f"</{tag}>", i)
        if j == -1:
            break
        body = text[i + len(tag) + 2 : j]
        # Exactly the newline framing compaction adds is removed: the body is kept byte for byte.
        body = body.removeprefix("\n").removesuffix("\n")
        found.append(body)
        start = j + len(tag) + 3
    return found


def is_compacted(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(COMPACTED_HEADER)


def requests_in(message: Message) -> list[str]:
    """The user's requests carried by a message: its text, or those re-attached by a compaction."""
    if is_compacted(message):
        return tagged(message.text, "request")
    if message.tool_results:  # text riding with tool results is aforo's, not the user's
        return []
    text = message.text
    return [text] if text.strip() else []


def build_ledger(messages: list[Message] | tuple[Message, ...]) -> Ledger:
    requests: list[str] = []
    evidence: list[Evidence] = []
    seen_sources: set[str] = set()
    for message in messages:
        if message.role == "user":
            for req in requests_in(message):
                if req not in requests:
                    requests.append(req)
            if is_compacted(message):
                for source in tagged(message.text, "evidence"):
                    if source not in seen_sources:
                        seen_sources.add(source)
                        evidence.append(Evidence(source, ""))
        for use in message.tool_uses:
            source = evidence_source(use)
            if source not in seen_sources:
                seen_sources.add(source)
                evidence.append(Evidence(source, use.id))
    hard: list[str] = []
    soft: list[str] = []
    for req in requests:
        h, s = constraints_of(req)
        hard += [c for c in h if c not in hard]
        soft += [c for c in s if c not in soft]
    return Ledger(tuple(requests), tuple(hard), tuple(soft), tuple(evidence))
