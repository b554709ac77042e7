"""The session's trail: what aforo itself knows of a session, kept exact across every compaction.

A summary is the model's account of the past; the trail is the harness's: every request the user typed
(verbatim; the first is the goal), the rules they stated, the decisions they took with their why, each
file read or searched with the one-line fact its tool gave, and the first sentence of every answer. It
grows as the conversation does (`absorb`, one message at a time, from `Conversation.append`), so a
compaction, which replaces the conversation, never touches it; the session file keeps it for
`--resume`. Each part is bounded by a named limit, and every item is redacted as it comes in.

Asked about the session ("what did we decide", "which files have you read"), the model gets the trail
as a block of plain lines (`context/trail_view`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from aforo.context.ledger import (
    build_ledger,
    evidence_source,
    is_compacted,
    requests_in,
)
from aforo.context.statements import constraints_of, decisions_in
from aforo.limits import (
    TRAIL_ANSWERS,
    TRAIL_ITEM_CHARS,
    TRAIL_REQUEST_CHARS,
    TRAIL_RULES,
    TRAIL_SOURCES,
)
from aforo.messages import Message
from aforo.records import CheckpointFacts, Decision, Evidence, Stamp
from aforo.store.redact import redact

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|\n+")
# A question about the session itself, not the code: what was asked, read, found, decided or answered.
# A decision is also chosen, picked, settled on or gone with (the verbs `statements` reads decisions by):
# "What did we choose, and why?" was taken for a question about the code, answered from a conversation
# compacted twice, and the 1.5B gave the user's rule as the choice (colorama, a development session).
_ABOUT_SESSION = re.compile(
    r"\b(my (first |original |main |last |previous )?(question|goal|request|rules?|task)|our decisions?|"
    r"(did|have) (we|you|i) (decide|decided|agree|agreed|choose|chose|chosen|pick|picked|settle|settled|"
    r"go with|gone with|opt|opted|read|search|searched|open|opened|look|looked|find|"
    r"found|say|said|ask|asked|conclude|concluded)|"
    r"(we|you|i) (decided|agreed|chose|picked|settled on|went with|opted for|said|concluded|asked|read|"
    r"found|looked at)|"
    r"(in|during) (this|the|our) (session|conversation)|(discussed|covered|done) so far|remind me|recap|"
    r"what (rules?|constraints?)|which rules?)\b",
    re.IGNORECASE,
)


# A request that asks for work ("Now compare it with…", "Read the file you found earlier"), not only
# for what the session holds: its first word is one of these.
_ASKS_WORK = re.compile(
    r"^\W*(now|then|next|continue|go on|read|open|compare|show|quote|check|look|search|grep|find|list|"
    r"explain|summari[sz]e|count|trace|follow|write|tell me more)\b",
    re.IGNORECASE,
)


# A question, not a statement: "We decided to drop X" states a decision, "What did we decide?" asks.
_ASKS = re.compile(r"\?|^\W*(what|which|where|when|why|how|who|remind|recap|list|tell me|name)\b", re.I)


def asks_about_session(question: str) -> bool:
    """Whether `question` asks about the session (its goal, rules, decisions, reads, earlier answers)."""
    return bool(_ASKS.search(question) and _ABOUT_SESSION.search(question))


def recall_only(question: str) -> bool:
    """Whether `question` asks only what the session holds (no work): its trail answers it."""
    return asks_about_session(question) and not _ASKS_WORK.search(question)


def clip(text: str, chars: int = int(TRAIL_ITEM_CHARS.value)) -> str:
    one = " ".join(redact(text).split())
    return one if len(one) <= chars else one[: chars - 1].rstrip() + "…"


def first_sentence(answer: str) -> str:
    """What an answer concluded, as its first sentence (Markdown headings left out)."""
    for line in answer.strip().splitlines():
        if line.lstrip().startswith("#"):
            continue
        line = line.strip().lstrip(">*-• ").strip()
        if line:
            return clip(_SENTENCE_END.split(line, 1)[0])
    return ""


@dataclass(frozen=True)
class Trail:
    requests: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    decisions: tuple[Decision, ...] = ()
    # (source as the evidence list names it, the one-line fact its tool gave), oldest first, each once.
    read: tuple[tuple[str, str], ...] = ()
    # (the request, the first sentence of its answer)
    answers: tuple[tuple[str, str], ...] = ()
    # The calls of the newest assistant message, by id, until their results come.
    calls: tuple[tuple[str, str], ...] = ()

    @property
    def goal(self) -> str:
        return self.requests[0] if self.requests else ""

    @property
    def empty(self) -> bool:
        return not (self.requests or self.read or self.answers)

    def absorb(self, message: Message) -> Trail:
        """The trail once `message` joined the conversation."""
        if message.role == "assistant":
            return self._answer(message)
        if message.tool_results:
            return self._results(message)
        # Its text, if it is the user's; a compaction's, the requests it re-attached: only a conversation
        # saved before the trail is rebuilt through one (`of`), and those may be in the trail already.
        compacted = is_compacted(message)
        trail = self
        for request in requests_in(message):
            trail = trail if compacted and redact(request) in trail.requests else trail._request(request)
        return trail

    def _request(self, text: str) -> Trail:
        text = redact(text)
        requests = _within(self.requests, text)
        hard, soft = constraints_of(text)
        rules = _bounded_unique((*self.rules, *map(clip, (*hard, *soft))), int(TRAIL_RULES.value))
        stated = (Decision(clip(d.decision), clip(d.why)) for d in decisions_in(text))
        decisions = _bounded_unique((*self.decisions, *stated), int(TRAIL_RULES.value))
        return replace(self, requests=requests, rules=rules, decisions=decisions)

    def _answer(self, message: Message) -> Trail:
        uses = message.tool_uses
        if uses:
            return replace(self, calls=tuple((u.id, evidence_source(u)) for u in uses))
        said = first_sentence(message.text)
        if not said or not self.requests:
            return self
        answers = (*self.answers, (clip(self.requests[-1]), said))[-int(TRAIL_ANSWERS.value) :]
        return replace(self, answers=answers)

    def _results(self, message: Message) -> Trail:
        sources = dict(self.calls)
        read = dict(self.read)
        for result in message.tool_results:
            source = sources.get(result.tool_use_id)
            if source is None or result.is_error:
                continue
            read.pop(source, None)  # read again: it moves to the end, with its newest fact
            read[source] = clip(result.facts) if result.facts else ""
        return replace(self, read=tuple(read.items())[-int(TRAIL_SOURCES.value) :])

    # --- persistence (the session file) ------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": list(self.requests),
            "rules": list(self.rules),
            "decisions": [[d.decision, d.why] for d in self.decisions],
            "read": [list(r) for r in self.read],
            "answers": [list(a) for a in self.answers],
        }

    @staticmethod
    def from_dict(data: Any) -> Trail:
        """A trail as the session file holds it; ValueError says what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError("the trail must be an object")

        def strings(name: str) -> tuple[str, ...]:
            value = data.get(name, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"trail.{name} must be a list of strings")
            return tuple(value)

        def pairs(name: str) -> tuple[tuple[str, str], ...]:
            value = data.get(name, [])
            ok = isinstance(value, list) and all(
                isinstance(v, list) and len(v) == 2 and all(isinstance(s, str) for s in v) for v in value
            )
            if not ok:
                raise ValueError(f"trail.{name} must be a list of [text, text] pairs")
            return tuple((a, b) for a, b in value)

        return Trail(
            requests=strings("requests"),
            rules=strings("rules"),
            decisions=tuple(Decision(a, b) for a, b in pairs("decisions")),
            read=pairs("read"),
            answers=pairs("answers"),
        )

    @staticmethod
    def of(messages: Iterable[Message]) -> Trail:
        """The trail of a conversation saved before aforo kept one (what its messages still show)."""
        trail = Trail()
        reattached: set[str] = set()
        for message in messages:
            if is_compacted(message):
                reattached |= set(requests_in(message))
            elif message.role == "user" and not message.tool_results and message.text in reattached:
                # The tail a compaction kept verbatim repeats a request it re-attached: one request.
                reattached.discard(message.text)
                continue
            trail = trail.absorb(message)
        return trail


def _within(requests: tuple[str, ...], text: str) -> tuple[str, ...]:
    """`requests` with `text` added; past TRAIL_REQUEST_CHARS the oldest after the goal leave (the
    checkpoints written while they were in the trail still hold them)."""
    kept = [*requests, text]
    while len(kept) > 2 and sum(map(len, kept)) > int(TRAIL_REQUEST_CHARS.value):
        del kept[1]
    return tuple(kept)


def _bounded_unique(items: Iterable[Any], limit: int) -> tuple[Any, ...]:
    """Each item once, in order of first appearance, the newest `limit` of them."""
    return tuple(dict.fromkeys(items))[-limit:]


def checkpoint_facts(
    reason: str,
    tokens_before: int,
    stamp: Stamp,
    messages: tuple[Message, ...],
    trail: Trail,
    pending: str | None,
) -> CheckpointFacts:
    """What a checkpoint of `messages` says about them, stamped with the conversation's lane: the goal,
    constraints, decisions, evidence and next action from the trail first (what aforo saw), then from the
    conversation and the model's summary (their ledger) for what the trail lacks. `pending`: the request
    at work, which is the next action whatever the summary says."""
    ledger = build_ledger(messages)
    hard, soft = list(ledger.hard), list(ledger.soft)
    for rule in trail.rules:
        h, s = constraints_of(rule)
        hard += [c for c in h if c not in hard]
        soft += [c for c in s if c not in soft]
    sources = {source for source, _ in trail.read}
    evidence = (
        *(Evidence(source, fact) for source, fact in trail.read),
        *(e for e in ledger.evidence if e.source not in sources),
    )
    return CheckpointFacts(
        reason=reason,
        tokens_before=tokens_before,
        stamp=stamp,
        goal=trail.goal or ledger.goal,
        hard=tuple(hard),
        soft=tuple(soft),
        decisions=_bounded_unique((*trail.decisions, *ledger.decisions), 2 * int(TRAIL_RULES.value)),
        evidence=evidence,
        next_action=f"answer the request in flight: {clip(pending)}" if pending else ledger.next_action,
    )
