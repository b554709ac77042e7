"""Which governor follows which conversation when every request carries the whole conversation."""

from __future__ import annotations

from aforo.context.budget import Budget
from aforo.context.governor import GovernedLane, Governor
from aforo.context.memory_journal import MemoryJournal
from aforo.context.policy import Policy
from aforo.gateway.conversations import Conversations
from aforo.messages import Message, Request


def governor(model: str) -> Governor:
    lane = GovernedLane(budget=Budget(4096), model=model)
    return Governor(lane, policy=Policy(), journal=MemoryJournal(), emit=lambda e: None)


def request(*texts: str, model: str = "m") -> Request:
    messages = tuple(Message.user(t) if i % 2 == 0 else Message.assistant(t) for i, t in enumerate(texts))
    return Request(model, (), (), messages, 100)


def test_a_request_that_continues_a_conversation_gets_its_governor_with_the_new_messages_appended() -> None:
    conversations = Conversations(governor)
    first = request("q1")
    slot, admitted = conversations.take(first)
    conversations.give_back(slot, first.messages)
    later = request("q1", "a1", "q2")
    again, admitted = conversations.take(later)
    assert again is slot
    assert admitted.messages == later.messages == slot.governor.conversation.messages
    assert len(conversations) == 1


def test_a_request_that_continues_none_starts_a_conversation_and_another_model_is_another() -> None:
    conversations = Conversations(governor)
    slot, _ = conversations.take(request("q1"))
    conversations.give_back(slot, request("q1").messages)
    other, _ = conversations.take(request("something else"))
    elsewhere, _ = conversations.take(request("q1", "a1", "q2", model="n"))
    assert len({id(slot), id(other), id(elsewhere)}) == 3


def test_two_requests_that_begin_alike_at_once_never_share_a_governor() -> None:
    conversations = Conversations(governor)
    slot, _ = conversations.take(request("q1"))
    conversations.give_back(slot, request("q1").messages)
    a, _ = conversations.take(request("q1", "a1", "q2"))
    b, _ = conversations.take(request("q1", "x1", "y2"))  # while the first is still being answered
    assert a is slot and b is not slot
    assert b.governor.conversation.messages == request("q1", "x1", "y2").messages


def test_the_oldest_idle_conversation_goes_first_and_a_busy_one_never() -> None:
    conversations = Conversations(governor, most=2)
    busy, _ = conversations.take(request("busy"))
    idle, _ = conversations.take(request("idle"))
    conversations.give_back(idle, request("idle").messages)
    conversations.take(request("third"))
    assert len(conversations) == 2
    # The idle one went; the busy one is still followed and continues.
    conversations.give_back(busy, request("busy").messages)
    again, _ = conversations.take(request("busy", "a", "q"))
    assert again is busy
    fresh, _ = conversations.take(request("idle", "a", "q"))
    assert fresh is not idle


def test_a_forgotten_conversation_is_not_continued() -> None:
    conversations = Conversations(governor)
    slot, _ = conversations.take(request("q1"))
    conversations.forget(slot)
    again, _ = conversations.take(request("q1"))
    assert again is not slot
