"""A reply is read once: the display, the batch and the agent take one `read_reply` value."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aforo.loop import textcalls
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import make_agent, make_files

WRITTEN_CALL = 'Let me look first.\n```json\n{"name": "Read", "arguments": {"file_path": "mod00.py"}}\n```'


def test_a_reply_with_a_call_written_as_text_is_parsed_for_calls_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every reading of a whole reply's text for calls walks its tags (the text hold reads only the
    # held piece, never the whole reply): count those walks over the reply's text.
    walked: list[str] = []
    tags = textcalls._tags

    def counting(text: str) -> Iterator[tuple[int, int, str]]:
        walked.append(text)
        return tags(text)

    monkeypatch.setattr(textcalls, "_tags", counting)
    make_files(tmp_path, 1, 50)
    provider = FakeProvider([FakeTurn(WRITTEN_CALL), FakeTurn("It defines small functions.")])
    agent, rec, _ = make_agent(tmp_path, provider)
    result = agent.run("What is in mod00.py?")

    assert (result.reason, result.tool_calls, result.answer) == ("end_turn", 1, "It defines small functions.")
    assert walked.count(WRITTEN_CALL) == 1
    assert walked.count("It defines small functions.") == 1
    # The call the display showed is the call the batch ran.
    (shown,) = rec.of("text_call")
    (started,) = rec.of("tool_start")
    assert [c["input"] for c in shown.calls] == [started.input] == [{"file_path": "mod00.py"}]
