"""Stages 1-3 as pure functions, and the properties every stage must keep (hypothesis)."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from aforo import reply_format
from aforo.context.budget import Budget
from aforo.context.compacted import KEPT_REQUESTS, LEFT_OUT_HEADER, assemble, keep_tail
from aforo.context.ledger import build_ledger, is_compacted
from aforo.context.policy import Policy
from aforo.context.stages import CapResult, cap_text, clear_old_results
from aforo.context.statements import constraints_of
from aforo.context.summary_request import (
    SHORTER,
    Piece,
    fit_summary_request,
    omitted,
    summary_limit,
    summary_request,
    summary_words,
    transcript_pieces,
)
from aforo.context.tokens import Count, MessageEstimates, estimate_request, estimate_text
from aforo.context.trail import Trail
from aforo.errors import CompactionError
from aforo.messages import CLEARED_NOTE, Message, Request, ToolResult, ToolUse
from aforo.records import Decision
from aforo.store.redact import redact
from aforo.summarised import summarised
from aforo.wire.openai_chat import messages_to_openai


def estimated(request: Request) -> Count:
    """A counter that is the plain estimate, as on a server without one."""
    tokens = estimate_request(request)
    return Count(tokens, False, "estimate", tokens)


def test_budget_numbers_from_the_spec() -> None:
    assert (Budget(4096).reserve, Budget(4096).available) == (1024, 3072)
    assert Budget(16_000).reserve == 4000
    assert Budget(32_768).reserve == 8192
    assert Budget(4096, max_tokens=512).reserve == 512
    assert Budget(2, max_tokens=1).available == 1


def test_cap_keeps_head_and_tail_and_marks_the_cut() -> None:
    # 5000 numbered lines, 48 890 characters; a cap of 500 tokens at ~4 characters each holds 2000.
    text = "".join(f"line {i}\n" for i in range(5000))
    capped = cap_text(text, 500)
    assert capped.truncated and len(capped.content) <= 2000
    head, _, rest = capped.content.partition("\n[... ")
    note, _, tail = rest.partition(" ...]\n")
    head_lines, tail_lines = head.splitlines(), tail.splitlines()
    # Whole lines from the start and from the end, nothing in between, more of the head than the tail.
    assert head_lines == [f"line {i}" for i in range(len(head_lines))]
    assert tail_lines == [f"line {i}" for i in range(5000 - len(tail_lines), 5000)]
    assert len(head_lines) > len(tail_lines) > 0
    cut = 5000 - len(head_lines) - len(tail_lines)
    assert capped.removed_lines == cut and note.startswith(f"{cut} lines")
    assert "cut here to fit the context cap of 500 tokens" in note
    # At the cap a text is kept whole; one character over, it is cut.
    assert cap_text("x" * 2000, 500) == CapResult("x" * 2000, truncated=False)
    assert cap_text("x" * 2001, 500).truncated
    assert cap_text("short", 500) == CapResult("short", truncated=False)


def test_cap_is_in_real_tokens_when_calibrated() -> None:
    text = "{" * 10_000
    assert estimate_text(cap_text(text, 500, ratio=2.0).content) <= 250


def _exchange(i: int, n_results: int) -> list[Message]:
    uses = tuple(ToolUse(f"c{i}_{k}", "Read", {"file_path": f"f{i}_{k}.py"}) for k in range(n_results))
    results = tuple(ToolResult(u.id, f"content {u.id} " * 50) for u in uses)
    return [Message("assistant", uses), Message("user", results)]


def test_clear_all_eligible_at_once_keeping_the_most_recent() -> None:
    messages = [Message.user("task")]
    for i in range(5):
        messages += _exchange(i, 2)
    out = clear_old_results(messages, keep=6)
    assert out.count == 4
    flat = [b for m in out.messages for b in m.content if isinstance(b, ToolResult)]
    assert [b.cleared for b in flat] == [True] * 4 + [False] * 6
    assert all(b.content == CLEARED_NOTE for b in flat[:4])
    # The calls stay; only the content of the results goes. The input is not mutated.
    assert [m.tool_uses for m in out.messages] == [m.tool_uses for m in messages]
    assert not any(b.cleared for m in messages for b in m.content if isinstance(b, ToolResult))
    assert clear_old_results(out.messages, keep=6).count == 0


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    messages = [Message.user(draw(st.text(min_size=1, max_size=200)))]
    for i in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            messages += _exchange(i, draw(st.integers(1, 4)))
        else:
            messages.append(Message.assistant(draw(st.text(max_size=300)) or "ok"))
            messages.append(Message.user(draw(st.text(min_size=1, max_size=100))))
    return messages


def pairs_intact(messages: list[Message]) -> bool:
    if messages[0].role != "user" or messages[0].tool_results:
        return False
    for i, m in enumerate(messages):
        if m.tool_uses:
            if i + 1 >= len(messages):
                return False
            if {u.id for u in m.tool_uses} != {r.tool_use_id for r in messages[i + 1].tool_results}:
                return False
        if m.tool_results and (
            i == 0 or {r.tool_use_id for r in m.tool_results} - {u.id for u in messages[i - 1].tool_uses}
        ):
            return False
    return True


@settings(max_examples=150, deadline=None)
@given(conversations(), st.integers(0, 8))
def test_clearing_keeps_tool_pairs_atomic(messages: list[Message], keep: int) -> None:
    out = clear_old_results(messages, keep)
    assert pairs_intact(out.messages)
    assert len(out.messages) == len(messages)


@settings(max_examples=150, deadline=None)
@given(conversations(), st.integers(100, 3000), st.booleans())
def test_compacted_conversation_keeps_pairs_and_every_request(
    messages: list[Message], tail_budget: int, mid_run: bool
) -> None:
    if mid_run and messages[-1].role != "user":
        messages = [*messages, *_exchange(99, 1)]
    ledger = build_ledger(messages)
    tail = keep_tail(messages, tail_budget, MessageEstimates().of)  # what compaction is handed
    out = assemble(ledger, "Goal: x. Next action: y.", "cp-1", tail)
    assert pairs_intact(out)
    # Every answer is one the model gave (aforo answers nothing in its name), and mid-run the model is
    # handed a user turn to act on.
    assert [m for m in out if m.role == "assistant"] == [m for m in tail if m.role == "assistant"]
    if messages[-1].role == "user":
        assert out[-1].role == "user"
    else:  # between runs: the last answer, or the compacted message alone
        assert out[-1] in (messages[-1], out[0])
    # On either wire, no two user turns in a row (some chat templates reject them).
    request = Request("m", (), (), tuple(out), 100)
    openai = [m["role"] for m in messages_to_openai(request) if m["role"] != "tool"]
    assert all(a != "user" or b != "user" for a, b in itertools.pairwise(openai))
    plain = [m["role"] for m in reply_format.render(out, ())]
    assert all(a != b for a, b in itertools.pairwise(plain))
    # The goal and the newest requests are re-attached (all of them would grow every compaction)...
    asked = ledger.requests
    kept = (asked[0], *asked[-KEPT_REQUESTS:]) if len(asked) > KEPT_REQUESTS + 1 else asked
    assert build_ledger(out).requests == kept
    # ...and every request the user typed is in the session's trail, which no compaction touches.
    typed = [m.text for m in messages if m.role == "user" and not m.tool_results and m.text.strip()]
    assert Trail.of(messages).requests == tuple(map(redact, typed))


@settings(max_examples=100, deadline=None)
@given(conversations(), st.integers(300, 4000))
def test_summary_request_never_exceeds_available(messages: list[Message], available: int) -> None:
    # At 64 output tokens the word budget is the same whatever the conversation: its ceiling,
    # int(64 × 0.75 words a token × 0.8) = int(38.4) = 38, is under the 60-word floor, so it wins.
    words = 38
    try:
        request, counted = fit_summary_request(
            "m", messages, available=available, max_tokens=64, count=estimated
        )
    except CompactionError:
        # Only what is never cut (the instructions, the user's words, the call markers) can make it
        # impossible: the request with every shrinkable piece at its shortest still does not fit.
        shortest = [
            Piece(p.role, SHORTER[p.shrinkable](p.text) if p.shrinkable else p.text, "")
            for p in transcript_pieces(messages)
        ]
        assert estimate_request(summary_request("m", shortest, 64, None, words)) > available
        return
    assert counted.tokens == estimate_request(request) <= available
    for m in messages:
        if m.role == "user" and m.text.strip():
            assert m.text in request.messages[0].text  # never cut


def test_summary_request_drops_tool_output_oldest_first() -> None:
    messages = [Message.user("find the bug")]
    for i in range(6):
        messages += _exchange(i, 1)
    full = estimate_request(
        fit_summary_request("m", messages, available=10**6, max_tokens=1, count=estimated)[0]
    )
    request, counted = fit_summary_request("m", messages, available=full - 300, max_tokens=1, count=estimated)
    text = request.messages[0].text
    assert counted.tokens <= full - 300
    assert "content c0_0" not in text and "content c5_0" in text
    assert "[called Read" in text


def test_ledger_constraints_and_evidence() -> None:
    hard, soft = constraints_of("Find the bug. Never touch tests/. You should prefer small diffs.")
    assert hard == ["Never touch tests/."] and soft == ["You should prefer small diffs."]
    messages = [Message.user("Find the bug. Do not modify main.py."), *_exchange(0, 2)]
    ledger = build_ledger(messages)
    assert ledger.goal.startswith("Find the bug")
    assert [e.source for e in ledger.evidence] == ["Read f0_0.py", "Read f0_1.py"]
    missing = ledger.missing_from("Goal: find the bug. Evidence: f0_0.py")
    assert "evidence: Read f0_1.py" in missing
    assert "constraint: Do not modify main.py." in missing


def test_estimates_cache_agrees_with_the_whole_request() -> None:
    messages = [Message.user("a" * 13), Message.assistant("b" * 7), *_exchange(1, 3)]
    cache = MessageEstimates()
    # Characters with 16 of framing per message: the user 16+13, the assistant 16+7, three Read calls
    # 16+3*(4+24), three results 16+3*650: 2118, rounded up once over the sum to 530 tokens (rounding
    # each message up would say 531).
    assert cache.total(messages) == estimate_request(Request("m", (), (), tuple(messages), 10)) == 530
    # A turn appends two calls (16+2*28) and two results (16+2*650): 3506 characters, 877 tokens.
    grown = [*messages, *_exchange(2, 2)]
    assert cache.total(grown) == 877
    # A stage rewrites messages in the middle: once the model answered (16+2 characters), four of the
    # five results become the 86-character note, 1268 characters in all. A cache that kept the old
    # prefix would still count the results.
    cleared = clear_old_results([*grown, Message.assistant("ok")], keep=1).messages
    assert cache.total(cleared) == 317


def test_policy_validation() -> None:
    import pytest

    with pytest.raises(ValueError, match="clear_at"):
        Policy(clear_at=0.9, compact_at=0.5)
    assert Policy().cap_tokens(Budget(4096)) == 614
    assert Policy().cap_tokens(Budget(1_000_000, max_tokens=8192)) == 25_000


def test_transcript_leaves_out_cleared_results_and_folds_repeated_calls() -> None:
    msgs = [Message.user("t"), *_exchange(0, 1), Message.assistant("read")]
    cleared = clear_old_results(msgs, keep=0).messages
    pieces = transcript_pieces(cleared)
    assert [p.text for p in pieces] == ["t", '[called Read {"file_path": "f0_0.py"}]', "read"]
    same = ToolUse("x", "Read", {"file_path": "a.py"})
    repeated = [Message.user("t"), Message("assistant", (same, replace(same, id="y"), replace(same, id="z")))]
    assert transcript_pieces(repeated)[-1].text == '[called Read {"file_path": "a.py"}] x3'


def test_results_the_model_has_not_read_yet_are_never_cleared() -> None:
    # With keep 0 every result is eligible, but the last exchange's have not reached the model yet:
    # cleared, it could only ask again (the 0.5B model read one file four times, until --max-turns).
    msgs = [Message.user("t"), *_exchange(0, 2), Message.assistant("so far"), *_exchange(1, 2)]
    out = clear_old_results(msgs, keep=0)
    flat = [b for m in out.messages for b in m.content if isinstance(b, ToolResult)]
    assert out.count == 2 and [b.cleared for b in flat] == [True, True, False, False]
    after = clear_old_results([*out.messages, Message.assistant("done")], keep=0)
    assert after.count == 2  # once answered, they are old results like any other


def test_clearing_skips_results_shorter_than_the_note() -> None:
    use = ToolUse("c", "Read", {"file_path": "nope.py"})
    msgs = [
        Message.user("t"),
        Message("assistant", (use,)),
        Message("user", (ToolResult("c", "no such file"),)),
    ]
    assert clear_old_results(msgs, keep=0).count == 0


def test_summary_request_names_a_word_budget_the_output_limit_can_hold() -> None:
    assert summary_words(3000, 1024) == 200  # at most what a laptop writes within the summary's time
    assert summary_words(600, 1024) == 150  # a third of the conversation
    assert summary_words(30, 1024) == 60  # never asks for less than a usable summary
    assert summary_words(900, 64) == 38  # ...unless the output limit cannot hold even that: 80 % of it
    assert summary_limit(1024) == 512 and summary_limit(300) == 300  # room for 200 words, in the reserve
    messages = [Message.user("find the bug"), *_exchange(0, 40)]
    request, _ = fit_summary_request("m", messages, available=10**6, max_tokens=1024, count=estimated)
    # By hand: the transcript is the request (<user>…</user>: 27 characters), 40 call markers
    # (<assistant>…</assistant> around `[called Read {"file_path": "f0_k.py"}]`: 10 × 63 + 30 × 64 =
    # 2550) and 40 results (`<result of Read {...}>`, 50 × "content c0_k ", `</result>`: 10 × 702 +
    # 30 × 753 = 29 610), joined by 80 blank lines (160): 32 347 characters, ceil(32 347 / 4) = 8087
    # tokens. A third of that at 0.75 words a token is 2021 words, over the ceiling of
    # int(1024 × 0.75 × 0.8) = 614 and the most of 200, so the request names 200.
    assert request.messages[0].text.endswith("Keep the summary under 200 words.\n\nWrite the summary now.")


def test_the_ledger_reads_decisions_and_next_action_from_the_summary_however_emphasized() -> None:
    summary = (
        "**Goal:** fix it\n**Decisions:**\n- keep the cache because misses cost 2 s\n2. drop the retries\n"
        "Evidence: Read a.py\n## Next action: read b.py\nthen answer"
    )
    compacted = assemble(build_ledger([Message.user("fix it")]), summary, "cp-1", [])
    ledger = build_ledger([*compacted, Message.user("go on")])
    assert ledger.decisions == (Decision("keep the cache", "misses cost 2 s"), Decision("drop the retries"))
    assert ledger.next_action == "read b.py then answer"
    assert build_ledger([Message.user("fix it")]).decisions == ()  # no summary, nothing made up


def test_a_summary_in_plain_prose_has_no_sections_and_breaks_nothing() -> None:
    # The real 0.5B model often ignores the asked-for sections: the ledger then has no decisions and no
    # next action, and building it (every checkpoint does) must not fail.
    prose = "The user asked about counter.py; it counts words and breaks ties alphabetically."
    compacted = assemble(build_ledger([Message.user("explain it")]), prose, "cp-1", [])
    ledger = build_ledger([*compacted, Message.user("go on")])
    assert ledger.decisions == () and ledger.next_action == ""
    assert ledger.requests == ("explain it", "go on")


def test_evidence_list_keeps_its_newest_sources_within_its_budget() -> None:
    # A long session: each compaction carries the sources of the one before. Without a bound the list
    # grows until no compaction fits the window (seen in the kill -9 loop after ~90 resumed runs).
    messages = [Message.user("find the longest file")]
    for i in range(200):
        messages += _exchange(i, 1)
    ledger = build_ledger(messages)
    assert len(ledger.evidence) == 200
    head = assemble(ledger, "Goal: x.", "cp-1", [], evidence_tokens=100)[0].text
    kept = [line for line in head.splitlines() if "<evidence>" in line]
    assert 0 < len(kept) < 200
    assert sum(estimate_text(line + "\n") for line in kept) <= 100
    assert kept[-1] == "- <evidence>Read f199_0.py</evidence>"  # the newest survive, in order
    assert f"({200 - len(kept)} older sources left out" in head
    assert "find the longest file" in head  # the request is never what gives way

    unbounded = assemble(ledger, "Goal: x.", "cp-1", [])[0].text
    assert unbounded.count("<evidence>") == 200 and "left out" not in unbounded


def _run(i: int, request: str) -> list[Message]:
    """One request answered in full: the request, one Read and its result, the answer."""
    return [Message.user(request), *_exchange(i, 1), Message.assistant(f"answer {i}")]


def _size(m: Message) -> int:
    return len(m.text) + sum(len(r.content) for r in m.tool_results)


def test_the_tail_keeps_the_newest_answered_request_as_a_worked_example_mid_run() -> None:
    messages = [
        *_run(0, "quote day 1"),
        *_run(1, "quote day 2"),
        Message.user("quote day 3"),
        *_exchange(2, 1),
    ]
    tail = keep_tail(messages, 10**6, _size)
    assert tail == messages[4:]  # from "quote day 2" to the results of day 3's Read
    # Too little room for the example: the last exchange alone, then nothing.
    exchange = sum(_size(m) for m in messages[-2:])
    assert keep_tail(messages, exchange, _size) == messages[-2:]
    assert keep_tail(messages, exchange - 1, _size) == []
    assert keep_tail(messages, 10**6, _size, example=False) == messages[-2:]
    out = assemble(build_ledger(messages), "Goal: x.", "cp", tail)
    # The compacted message, then the tail as it was: no answer between them in the model's name.
    assert out[1:] == tail and is_compacted(out[0])
    assert out[-1].tool_results and out[-2].tool_uses


def test_between_runs_the_tail_is_the_last_request_and_its_answer() -> None:
    messages = [*_run(0, "quote day 1"), *_run(1, "quote day 2")]
    tail = keep_tail(messages, 10**6, _size)
    assert tail == messages[4:]
    out = assemble(build_ledger(messages), "Goal: x.", "cp", tail)
    assert out[1:] == tail and out[-1].text == "answer 1"


def test_a_first_request_is_never_kept_as_the_tail_of_itself() -> None:
    # Everything from the only request on is the whole conversation: nothing would be summarized.
    messages = [*_run(0, "quote day 1")]
    assert keep_tail(messages, 10**6, _size) == []


def test_results_the_summary_request_left_out_are_named_in_the_compacted_message() -> None:
    messages = [Message.user("find the bug")]
    for i in range(6):
        messages += _exchange(i, 1)
    full = estimate_request(
        fit_summary_request("m", messages, available=10**6, max_tokens=1, count=estimated)[0]
    )
    request, _ = fit_summary_request("m", messages, available=full - 300, max_tokens=1, count=estimated)
    left_out = omitted(request)
    assert left_out and left_out == [f"Read f{i}_0.py" for i in range(len(left_out))]  # oldest first
    whole, _ = fit_summary_request("m", messages, available=10**6, max_tokens=1, count=estimated)
    assert omitted(whole) == []
    text = assemble(build_ledger(messages), "Goal: find the bug.", "cp", [], left_out=left_out)[0].text
    assert f"{LEFT_OUT_HEADER}\n" + "\n".join(f"- <left_out>{s}</left_out>" for s in left_out) in text
    # A read the summary never saw may be run again in the same question; one it saw may not.
    known = summarised([Message.user(text)], frozenset())
    assert not set(left_out) & known.keys() and f"Read f{len(left_out)}_0.py" in known


def test_a_request_typed_again_is_the_newest_and_the_goal_stays_first() -> None:
    """Found by the property above: a request typed again kept its first place, so the compaction's
    newest few left it out while the kept tail still held it."""
    asked = ["goal", "b", "c", "b", "goal"]
    messages = [m for text in asked for m in (Message.user(text), Message.assistant("ok"))]
    assert build_ledger(messages).requests == ("goal", "c", "b")
