"""The registry turns every kind of bad call into an is_error output the model can act on."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aforo.errors import ToolError
from aforo.limits import TOOL_SECONDS
from aforo.messages import ToolSpec, object_schema
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools import ToolRegistry, default_registry
from aforo.tools.deadline import check


class Probe:
    """A tool that records its context and can fail on demand."""

    spec = ToolSpec(
        "Probe",
        "test tool",
        {
            "type": "object",
            "properties": {"fail": {"enum": ["tool", "bug"]}, "n": {"type": "integer"}},
            "additionalProperties": False,
        },
    )

    def __init__(self) -> None:
        self.seen: list[ToolContext] = []

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.seen.append(ctx)
        if args.get("fail") == "tool":
            raise ToolError("the file is gone; use Glob")
        if args.get("fail") == "bug":
            raise KeyError("oops")
        return ToolOutput(f"ok {args.get('n')}")


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
def registry(tmp_path: Path, probe: Probe) -> ToolRegistry:
    return ToolRegistry([probe], tmp_path)


def test_default_registry_specs_and_names(tmp_path: Path) -> None:
    reg = default_registry(tmp_path)
    assert reg.names == frozenset({"Glob", "Grep", "Read", "Find", "LS"})
    for spec in reg.specs:
        assert spec.input_schema["type"] == "object"
        assert spec.input_schema["additionalProperties"] is False
        assert spec.description


def test_an_object_schema_keeps_one_key_order_and_leaves_out_an_empty_required() -> None:
    # The order is what a spec serializes to, and so what its definition costs the model in tokens.
    both = object_schema({"path": {"type": "string"}}, required=["path"])
    assert json.dumps(both) == (
        '{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], '
        '"additionalProperties": false}'
    )
    assert object_schema({"path": {"type": "string"}}) == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "additionalProperties": False,
    }


def test_success_passes_workspace_max_chars_cancel_and_deadline(
    registry: ToolRegistry, probe: Probe, tmp_path: Path
) -> None:
    cancel = threading.Event()
    before = time.monotonic()
    out = registry.execute("Probe", '{"n": 3}', max_chars=1234, cancel=cancel)
    assert out == ToolOutput("ok 3")
    [ctx] = probe.seen
    assert (ctx.workspace, ctx.max_chars, ctx.cancel) == (tmp_path, 1234, cancel)
    assert ctx.deadline is not None
    assert before + TOOL_SECONDS.value <= ctx.deadline <= time.monotonic() + TOOL_SECONDS.value


def test_dict_and_empty_arguments(registry: ToolRegistry) -> None:
    assert registry.execute("Probe", {"n": 1}).content == "ok 1"
    assert registry.execute("Probe", "").content == "ok None"


def test_unknown_tool_names_the_available_ones(registry: ToolRegistry) -> None:
    out = registry.execute("Write", "{}")
    assert out.is_error
    assert "Write" in out.content and "Probe" in out.content


def test_malformed_json_quotes_the_error(registry: ToolRegistry, probe: Probe) -> None:
    out = registry.execute("Probe", '{"n": 3')
    assert out.is_error
    assert "Malformed JSON" in out.content and '{"n": 3' in out.content
    assert probe.seen == []


def test_json_that_is_not_an_object(registry: ToolRegistry) -> None:
    out = registry.execute("Probe", "[1, 2]")
    assert out.is_error and "JSON object" in out.content


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"n": "three"}, "'n'"), ({"extra": 1}, "'extra'"), ({"fail": "nope"}, "'fail'")],
)
def test_schema_violation_names_the_field_and_the_schema(
    registry: ToolRegistry, probe: Probe, arguments: dict[str, Any], field: str
) -> None:
    out = registry.execute("Probe", json.dumps(arguments))
    assert out.is_error
    assert field in out.content
    assert "Expected: Probe(fail?: " in out.content
    assert probe.seen == []


def test_missing_required_field(tmp_path: Path) -> None:
    out = default_registry(tmp_path).execute("Read", "{}")
    assert out.is_error
    assert "'file_path' is a required property" in out.content
    assert "Read(file_path: string" in out.content


def test_bool_is_not_an_integer(tmp_path: Path) -> None:
    out = default_registry(tmp_path).execute("Read", {"file_path": "a", "limit": True})
    assert out.is_error and "'limit'" in out.content


def test_output_with_a_lone_surrogate_becomes_valid_utf8(tmp_path: Path) -> None:
    class Leaky(Probe):
        def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            return ToolOutput("caf\udce9.py\nnext")

    out = ToolRegistry([Leaky()], tmp_path).execute("Probe", {})
    assert out.content == "caf\\udce9.py\nnext"
    out.content.encode("utf-8")


def test_tool_error_becomes_is_error(registry: ToolRegistry) -> None:
    out = registry.execute("Probe", {"fail": "tool"})
    assert out == ToolOutput("Probe: the file is gone; use Glob", is_error=True)


def test_a_bug_in_a_tool_never_raises(registry: ToolRegistry) -> None:
    out = registry.execute("Probe", {"fail": "bug"})
    assert out.is_error
    assert out.content.startswith("internal error in tool Probe: KeyError")


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Probe"):
        ToolRegistry([Probe(), Probe()], tmp_path)


def test_outside_path_through_the_registry(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("TOKEN\n")
    reg = default_registry(tmp_path / "ws")
    for name, args in [
        ("Read", {"file_path": "../secret.txt"}),
        ("Read", {"file_path": str(tmp_path / "secret.txt")}),
        ("Grep", {"pattern": "TOKEN", "path": ".."}),
        ("Glob", {"pattern": "*", "path": str(tmp_path)}),
        ("LS", {"path": "/"}),
    ]:
        out = reg.execute(name, args)
        assert out.is_error, name
        assert "outside the workspace" in out.content
        assert "TOKEN" not in out.content


def test_end_to_end_read_through_the_registry(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("hello\n")
    out = default_registry(tmp_path).execute("Read", '{"file_path": "notes.md"}')
    assert out == ToolOutput("1\thello", facts="notes.md: 1 line")


# --- deadline and cancel ----------------------------------------------------------------------------


class Slow:
    """A tool that works in small steps until stopped; `polite` ones look at the context between steps."""

    def __init__(self, name: str, *, polite: bool) -> None:
        self.spec = ToolSpec(name, "test tool", {"type": "object"})
        self.polite = polite
        self.stopped = threading.Event()

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            for _ in range(3000):  # 30 s at most, whatever happens
                if self.polite:
                    check(ctx)
                time.sleep(0.01)
        finally:
            self.stopped.set()
        return ToolOutput("finished")


@pytest.mark.timeout(20)
@pytest.mark.parametrize("polite", [True, False])
def test_a_call_past_its_deadline_is_an_error_naming_the_limit(tmp_path: Path, polite: bool) -> None:
    slow = Slow("Slow", polite=polite)
    out = ToolRegistry([slow], tmp_path, seconds=0.2).execute("Slow", {})
    assert out.is_error
    assert "tool_seconds" in out.content and "0.2 seconds" in out.content
    if polite:  # a tool that looks at its context stops its own work too
        assert slow.stopped.wait(5)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("polite", [True, False])
def test_a_cancel_ends_the_call_while_it_runs(tmp_path: Path, polite: bool) -> None:
    slow = Slow("Slow", polite=polite)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    out = ToolRegistry([slow], tmp_path).execute("Slow", {}, cancel=cancel)
    assert out.is_error and "cancelled" in out.content
    if polite:
        assert slow.stopped.wait(5)


def test_a_quick_call_is_not_stopped_by_its_deadline(tmp_path: Path, probe: Probe) -> None:
    out = ToolRegistry([probe], tmp_path, seconds=30).execute("Probe", {"n": 2})
    assert out == ToolOutput("ok 2")
