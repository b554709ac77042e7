"""How a run opens: what the harness finds for the question (aforo.navigate), then the user's turn.

A question only about the session itself (its goal, rules, decisions, what was read or answered) is
asked with the session's trail in place of the conversation (`recall_view`): the trail is exact where
the conversation, compacted, may no longer be, and the conversation is what misled the model (asked
after two compactions what it had said earlier, the 1.5B gave its newest answer). It is also short: the
trail as the last part of the system prompt made the server read the whole prompt again (one slot, its
cache a prefix), 2 500 tokens on click in a 4 096 window, and the request compact first: 219 s, past
the time budget, no answer. A request for work that refers back to the session ("Now compare the two
files we read earlier") gets the trail as the last part of the system prompt, with its conversation.
Every other question goes without it, and a run after it drops it again.

A follow-up that names no file and points back ("How many lines does that file have?", "Which two
classes does it inherit from?") is searched for with the request before it: by itself it names nothing
the pre-search can find, and the 1.5B, after "Read decorators.py: which function makes a decorator…",
named a `compat.py` that does not exist, then repeated its last answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from aforo.context.conversation import Conversation
from aforo.context.statements import asked_part
from aforo.context.trail import Trail, asks_about_session, clip, recall_only
from aforo.context.trail_view import block
from aforo.events import EventSink
from aforo.messages import Message, SystemPart
from aforo.navigate.guide import Guided
from aforo.navigate.terms import question_paths

# Called as each run begins with the question, the system prompt, the call ids taken and whether the
# conversation is empty.
Guide = Callable[[str, tuple[SystemPart, ...], Collection[str], bool], Guided]
# Where the symbol index says the names of a question are defined, as sentences (navigate's Navigator).
Defined = Callable[[str], Sequence[str]]
# The name of the system part the trail is shown in.
TRAIL_PART = "session record"
# A question that points back to what the one before it named: "And which…", "that file", "in it".
_POINTS_BACK = re.compile(
    r"^\W*and\b|\b(?:it|its|them)\b|\b(?:that|this|the same) (?:file|module|class|function|method|one)\b",
    re.IGNORECASE,
)


# A name an answer gave in backticks: `intword`, `TTLCache.expire`, `number.py`.
_NAMED = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`")


def searched_for(question: str, trail: Trail) -> str:
    """What the pre-search looks for: the question, after the request before it and the names its
    answer gave in backticks, when it points back to them and names no file of its own ("What is the
    default value of its format argument?" asks about the `intword` the answer named, which the request
    before it, "which function turns 1200000 into 1.2 million?", does not)."""
    if not trail.requests or question_paths(question) or not _POINTS_BACK.search(question):
        return question
    before = trail.requests[-1]
    answered = trail.answers[-1] if trail.answers and trail.answers[-1][0] == clip(before) else None
    named = dict.fromkeys(_NAMED.findall(answered[1])) if answered else {}
    return "\n".join([before, *([" ".join(f"`{n}`" for n in named)] if named else []), question])


def about_session(conversation: Conversation, question: str, *, only: bool = False) -> bool:
    """The question asks about the session (`only`: asks nothing else), and there was one before it."""
    asks = recall_only if only else asks_about_session
    return bool(conversation.messages) and not conversation.trail.empty and asks(question)


@dataclass(frozen=True)
class Opened:
    system: tuple[SystemPart, ...]  # the system prompt to send from now on (the guide's map in it)
    answer_only: bool = False  # the guide found what the answer is made of: the first call answers
    # A question only about the session: the trail to ask it with, in place of the conversation before
    # the run, which starts at `since` ("" and 0 for any other question).
    record: str = ""
    since: int = 0


def recall_view(run: Sequence[Message], record: str) -> tuple[Message, ...]:
    """What a question only about the session is sent with: the trail, then the question, then what the
    run added since (an answer asked again in words)."""
    first, *rest = run
    return (Message.user(f"{record}\n\nThe user's question: {first.text}"), *rest)


def open_run(
    conversation: Conversation,
    system: tuple[SystemPart, ...],
    guide: Guide | None,
    emit: EventSink,
    *,
    prompt: str,
    question: str,
    attached: Sequence[Message],
    defined: Defined | None = None,
) -> Opened:
    """Append the prompt, the `attached` messages and what the guide found (its call and result) to the
    conversation; return the system prompt to send from now on (the guide's map in it, and the
    session's trail when the question asks about the session: then the guide is not asked), and whether
    the first call answers (an overview from the project's own words, an empty workspace: one bounded
    pass, no wandering). `defined`: where the names of a question only about the session are defined,
    shown with its trail."""
    kept = tuple(p for p in system if p.name != TRAIL_PART)
    only = about_session(conversation, question, only=True)
    # Not searched, but where a name it asks about is defined is known exactly: "in which file did you
    # find find_dotenv?" was answered `cli.py` from a record that said only what was searched for.
    said = defined(question) if only and defined is not None else ()
    since, record = len(conversation.messages), block(conversation.trail, said) if only else ""
    recalled = not only and about_session(conversation, question)
    system = (*kept, SystemPart(block(conversation.trail), TRAIL_PART)) if recalled else kept
    # A request that only states a rule or a decision asks for nothing to be found: it is answered (an
    # acknowledgement) without a search or a tool.
    asked = asked_part(question)
    answer_only = not asked
    # The answer to a question only about the session is in its trail: nothing is searched for it.
    if guide is not None and not only and asked:
        taken = {u.id for m in (*conversation.messages, *attached) for u in m.tool_uses}
        looked_for = searched_for(asked, conversation.trail)
        guided = guide(looked_for, system, taken, not conversation.messages)
        system, attached, answer_only = guided.system, (*attached, *guided.messages), guided.answer_only
        for event in guided.events:
            emit(event)
    for message in (Message.user(prompt), *attached):
        conversation.append(message)
    return Opened(system, answer_only, record, since if record else 0)
