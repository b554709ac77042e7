"""The ledger: what must survive a compaction, kept verbatim by aforo rather than trusted to a summary.

A small model's summary may drop the user's request or a constraint ("never touch tests/"); peers lose
them exactly there. aforo extracts them from the conversation itself, re-attaches them verbatim to every
compacted conversation, and records which ones the model's summary missed.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from aforo.context.statements import constraints_of
from aforo.limits import LABEL_CHARS
from aforo.messages import Message, ToolUse
from aforo.records import Decision, Evidence

COMPACTED_HEADER = "[Conversation compacted by aforo to save context."
SUMMARY_HEADER = "## Summary of the work so far"
EVIDENCE_HEADER = "## Evidence consulted (re-run the tool to see it again)"
CONTINUE = "Continue the user's task from here."
# How aforo's own requests in the user's turn begin (an answer asked again in words, a correction of
# its citations): the model's to act on, never the user's request, rule or decision.
IN_WORDS = "Answer in your own words, in sentences, not with"
CORRECTION = "aforo checked the places your answer cites against the workspace"
RECORD_CHECK = "aforo checked your answer against its record of this session"

# A section header of the summary format (summary_request.SUMMARY_SYSTEM), with or without Markdown emphasis.
_SECTION = re.compile(
    r"^[\s#*_-]*(goal|constraints|decisions|evidence|next action)[\s*_]*:[\s*_]*(.*)$", re.IGNORECASE | re.M
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
_EVIDENCE_FACTS = re.compile(r"^- <evidence>(?P<source>.*?)</evidence> \((?P<facts>.+)\)$", re.M)


@dataclass(frozen=True, kw_only=True)
class Ledger:
    requests: tuple[str, ...] = ()
    hard: tuple[str, ...] = ()
    soft: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    # From the newest compaction summary in the conversation: what the model said it decided and does next.
    decisions: tuple[Decision, ...] = ()
    next_action: str = ""
    # (source, facts): what a tool said of its result in one line (`a.py: 120 lines; 2 functions: f, g`),
    # kept beside its evidence line, so a comparison across files survives the bodies' compaction.
    facts: tuple[tuple[str, str], ...] = ()

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


def evidence_source(use: ToolUse) -> str:
    """How the evidence list and the summary requests name a call: its tool and target (a path, a
    pattern), Read's lines; every string of it quoted up to `label_chars`."""
    args = short_input(use.input)
    target = args.get("file_path") or args.get("path") or args.get("pattern") or ""
    source = f"{use.name} {target}".strip()
    if use.name == "Read" and ("offset" in args or "limit" in args):
        start, count = _whole(args.get("offset") or 1), _whole(args.get("limit") or 0)
        if start is None or count is None:  # a model's `1e400` or "ten": as given (issue 39 D3)
            source += f" offset {args.get('offset')} limit {args.get('limit')}"
        elif count:
            source += f" lines {start}-{start + count - 1}"
    elif use.name == "Grep" and args.get("glob"):
        source += f" in {args['glob']}"
    if not target:
        source = f"{use.name} {json.dumps(args, ensure_ascii=False, sort_keys=True)}"
    return source


def short_input(args: dict[str, Any]) -> dict[str, Any]:
    """A call's input as a label quotes it: each string (or list, or object, as JSON) longer than
    `label_chars` cut to it, saying how much was cut. A model's 100 000-character name was repeated whole
    in the summary request, which no shrinking step touches, and compaction failed (issue 39 D9). Cut
    values are unique (a digest of the whole), and cutting twice changes nothing."""
    return {key: _short(value) for key, value in args.items()}


def _short(value: Any) -> Any:
    text = value if isinstance(value, str) else None
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if text is None or len(text) <= LABEL_CHARS.value:
        return value
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    mark = f"… [{len(text):,} characters, {digest}]"
    return text[: int(LABEL_CHARS.value) - len(mark)] + mark


def _whole(value: Any) -> int | None:
    """A line number or count as a model may write it (7, 7.0, "7"), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None  # inf and nan are not
    try:
        return int(value) if isinstance(value, int) or (isinstance(value, str) and len(value) < 20) else None
    except ValueError:
        return None


def evidence_line(source: str, facts: str) -> str:
    """One line of a compacted message's evidence list: `- <evidence>Read a.py</evidence> (a.py: 3 lines)`."""
    return f"- <evidence>{source}</evidence>" + (f" ({facts})" if facts else "")


def _evidence_facts(text: str) -> dict[str, str]:
    """The facts beside the evidence lines of a compacted message, by source."""
    return {m["source"]: m["facts"] for m in _EVIDENCE_FACTS.finditer(text)}


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


def is_aforos_ask(message: Message) -> bool:
    """Whether `message` is aforo's own request to the model (`IN_WORDS`, `CORRECTION`, `RECORD_CHECK`),
    not the user's."""
    return message.role == "user" and message.text.startswith((IN_WORDS, CORRECTION, RECORD_CHECK))


def requests_in(message: Message) -> list[str]:
    """The user's requests carried by a message: its text, or those re-attached by a compaction."""
    if is_compacted(message):
        return tagged(message.text, "request")
    if message.tool_results or is_aforos_ask(message):  # aforo's words, not the user's
        return []
    text = message.text
    return [text] if text.strip() else []


def summary_sections(message: Message) -> dict[str, str]:
    """The sections ("decisions", "next action"...) of the model's summary inside a compacted message."""
    text = message.text
    start = text.find(SUMMARY_HEADER)
    if start == -1:
        return {}
    summary = text[start + len(SUMMARY_HEADER) :]
    for end in (f"\n\n{EVIDENCE_HEADER}", f"\n\n{CONTINUE}"):
        if (cut := summary.rfind(end)) != -1:
            summary = summary[:cut]
            break
    headers = list(_SECTION.finditer(summary))
    if not headers:  # a small model's summary may be plain prose, with none of the asked-for sections
        return {}
    ends = [h.start() for h in headers[1:]] + [len(summary)]
    return {
        h.group(1).lower(): (h.group(2) + summary[h.end() : end]).strip()
        for h, end in zip(headers, ends, strict=True)
    }


def decisions_of(section: str) -> tuple[Decision, ...]:
    """One decision per line; "A because B" keeps B as the why, as the summary format asks."""
    lines = (_BULLET.sub("", line).strip() for line in section.splitlines())
    return tuple(
        Decision(d.strip(), why.strip()) for d, _, why in (x.partition(" because ") for x in lines if x)
    )


def build_ledger(messages: list[Message] | tuple[Message, ...]) -> Ledger:
    requests: list[str] = []
    evidence: list[Evidence] = []
    seen_sources: set[str] = set()
    sections: dict[str, str] = {}
    said = {r.tool_use_id: r.facts for m in messages for r in m.tool_results if r.facts}
    facts: dict[str, str] = {}
    for message in messages:
        if message.role == "user":
            for req in requests_in(message):
                # A request typed again is the newest: it moves to the end (the compaction re-attaches
                # the newest few), except the goal, which stays first.
                if requests and req == requests[0]:
                    continue
                if req in requests:
                    requests.remove(req)
                requests.append(req)
            if is_compacted(message):
                sections = summary_sections(message)
                facts.update(_evidence_facts(message.text))
                for source in tagged(message.text, "evidence"):
                    if source not in seen_sources:
                        seen_sources.add(source)
                        evidence.append(Evidence(source, ""))
        for use in message.tool_uses:
            source = evidence_source(use)
            if use.id in said:
                facts[source] = said[use.id]  # the newest call's facts
            if source not in seen_sources:
                seen_sources.add(source)
                evidence.append(Evidence(source, use.id))
    hard: list[str] = []
    soft: list[str] = []
    for req in requests:
        h, s = constraints_of(req)
        hard += [c for c in h if c not in hard]
        soft += [c for c in s if c not in soft]
    return Ledger(
        requests=tuple(requests),
        hard=tuple(hard),
        soft=tuple(soft),
        evidence=tuple(evidence),
        decisions=decisions_of(sections.get("decisions", "")),
        next_action=" ".join(sections.get("next action", "").split()),
        facts=tuple(facts.items()),
    )
