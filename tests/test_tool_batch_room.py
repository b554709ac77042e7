"""A read batch never asks for more than the window holds: each new call counted at the cap."""

from __future__ import annotations

from aforo.context.stages import Cap
from aforo.loop.tool_batch import _key, within
from aforo.messages import ToolUse


def test_a_step_runs_as_many_new_calls_as_the_room_holds_at_the_cap_and_pointers_cost_nothing() -> None:
    uses = [ToolUse(f"c{i}", "Read", {"file_path": f"m{i}.py"}) for i in range(5)]
    answered = {_key(uses[1]): "old"}  # its result is in the conversation already
    kept, later = within(uses, answered, Cap(100), room=250)
    assert [u.id for u in kept] == ["c0", "c1", "c2"] and [u.id for u in later] == ["c3", "c4"]
    # The first new call always runs, whatever the room; no room given, nothing is deferred.
    assert [u.id for u in within(uses, {}, Cap(100), room=-50)[0]] == ["c0"]
    assert within(uses, {}, Cap(100), room=None) == (uses, [])
