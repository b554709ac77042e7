"""What a user's words state: the rules they set (hard or soft) and the decisions they take, each one
sentence of a request, read by the ledger (what a compaction must keep) and the trail (what the session
knows) alike.

A question states nothing: "What does it return when there is no context?" was a binding constraint of
every compacted conversation on click, and "What did we decide to focus on, and why?" a decision.
"""

from __future__ import annotations

import re

from aforo.records import Decision

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def statements(text: str) -> list[str]:
    """The sentences of `text` that state something: not blank, not a question."""
    sentences = (sentence.strip() for sentence in _SENTENCE.split(text))
    return [sentence for sentence in sentences if sentence and not sentence.endswith("?")]


# "Keep every answer under fifty words." (colorama, held out) said none of these words, was no rule, and
# asked which rule it was given, the 1.5B named the decision instead.
_HARD = re.compile(
    r"\b(must|never|don't|do not|only|always|exactly|at most|at least|no more than|required|forbidden|"
    r"keep (?:every|each|all|your|the) \w+|(?:under|within|below|fewer than|less than) \w+ "
    r"(?:words|sentences|lines|paragraphs)|nunca|siempre|solo|sólo|no )\b",
    re.IGNORECASE,
)
_SOFT = re.compile(r"\b(should|prefer|preferably|ideally|try to|avoid|if possible|mejor|preferible)\b", re.I)


# A sentence that takes a decision; "because", "since" or "so that" starts its why.
_DECIDES = re.compile(
    r"\b(decided|decide|we'll|we will|let's|let us|go with|going with|chose|choose|settle on|settled on|"
    r"instead of|rather than|rejected?|drop|decidimos|usaremos|descartamos)\b",
    re.IGNORECASE,
)
_WHY = re.compile(r"\s*,?\s+\b(?:because|since|so that|as it|porque)\b\s+", re.IGNORECASE)


def constraints_of(text: str) -> tuple[list[str], list[str]]:
    """The sentences of `text` that set a rule, hard or soft. A sentence that takes a decision is kept
    as one, with its why (`decisions_in`), not also as a rule: "We decided to use naturaldelta, because
    our users only need a rough duration" was a rule for its `only`, and asked which rule it was
    given, the 1.5B answered with the decision."""
    hard: list[str] = []
    soft: list[str] = []
    for sentence in statements(text):
        if _DECIDES.search(sentence):
            continue
        if _SOFT.search(sentence):
            soft.append(sentence)
        elif _HARD.search(sentence):
            hard.append(sentence)
    return hard, soft


def asked_part(text: str) -> str:
    """`text` without the sentences that set a rule or take a decision: what it asks for. A new user's
    "… Always name the file you found something in." was searched for `Always` and `found`, and "We
    decided to use chunked rather than grouper, …" for the callers of `chunked` (its "use")."""
    kept = [
        sentence.strip()
        for sentence in _SENTENCE.split(text)
        if sentence.strip() and not (_DECIDES.search(sentence) or any(constraints_of(sentence)))
    ]
    return " ".join(kept)


def decisions_in(text: str) -> list[Decision]:
    """The decisions `text` states, each with the why it gives ("drop X because Y"), as written."""
    found = []
    for sentence in statements(text):
        if _DECIDES.search(sentence):
            what, *why = _WHY.split(sentence, maxsplit=1)
            found.append(Decision(what.rstrip(" .,"), why[0].rstrip(" .") if why else ""))
    return found
