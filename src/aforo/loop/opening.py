"""How a run opens: what the harness finds for the question (aforo.navigate), then the user's turn."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from aforo.context.conversation import Conversation
from aforo.events import EventSink
from aforo.messages import Message, SystemPart
from aforo.navigate.guide import Guided

# Called as each run begins with the question, the system prompt, the call ids taken and whether the
# conversation is empty.
Guide = Callable[[str, tuple[SystemPart, ...], Collection[str], bool], Guided]


@dataclass(frozen=True)
class Opened:
    system: tuple[SystemPart, ...]  # the system prompt to send from now on (the guide's map in it)
    answer_only: bool = False  # the guide found what the answer is made of: the first call answers


def open_run(
    conversation: Conversation,
    system: tuple[SystemPart, ...],
    guide: Guide | None,
    emit: EventSink,
    *,
    prompt: str,
    question: str,
    attached: Sequence[Message],
) -> Opened:
    """Append the prompt, the `attached` messages and what the guide found (its call and result) to the
    conversation; return the system prompt to send from now on, and whether the first call answers
    (an overview from the project's own words, an empty workspace: one bounded pass, no wandering)."""
    answer_only = False
    if guide is not None:
        taken = {u.id for m in (*conversation.messages, *attached) for u in m.tool_uses}
        guided = guide(question, system, taken, not conversation.messages)
        system, attached, answer_only = guided.system, (*attached, *guided.messages), guided.answer_only
        for event in guided.events:
            emit(event)
    for message in (Message.user(prompt), *attached):
        conversation.append(message)
    return Opened(system, answer_only)
