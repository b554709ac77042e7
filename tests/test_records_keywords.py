"""Events, records and plans are built by keyword: a positional argument is a TypeError, so a call can
never put a value in the field next to the one it meant (TurnEnd has three booleans in a row)."""

from __future__ import annotations

import dataclasses
import inspect
from types import ModuleType

import pytest

from aforo import events, records
from aforo.context import plan
from aforo.messages import Request, ToolResult, Usage


@pytest.mark.parametrize("module", [events, records, plan], ids=lambda m: m.__name__)
def test_every_dataclass_of_the_module_takes_its_fields_by_keyword_only(module: ModuleType) -> None:
    classes = [
        c
        for c in vars(module).values()
        if inspect.isclass(c) and dataclasses.is_dataclass(c) and c.__module__ == module.__name__
    ]
    assert len(classes) >= 4
    positional = [f"{c.__name__}.{f.name}" for c in classes for f in dataclasses.fields(c) if not f.kw_only]
    assert positional == []


def test_turn_end_refuses_its_booleans_by_position() -> None:
    with pytest.raises(TypeError):
        events.TurnEnd(1, Usage(), 10, 100, False, True)  # type: ignore[misc]
    end = events.TurnEnd(turn=1, usage=Usage(), context=10, window=100, truncated=True)
    assert (end.exact, end.truncated, end.context_shift) == (False, True, False)


def test_a_request_and_a_tool_result_take_their_flags_by_keyword() -> None:
    # What is asked and what a result is stay positional; the booleans after them do not.
    with pytest.raises(TypeError):
        Request("m", (), (), (), 10, None, True)  # type: ignore[misc]
    with pytest.raises(TypeError):
        ToolResult("id", "text", True)  # type: ignore[misc]
    request = Request("m", (), (), (), 10, temperature=0.0, answer_only=True)
    assert (request.constrained, request.answer_only) == (False, True)
    assert ToolResult("id", "text", is_error=True).is_error
