"""The tool registry: the one place a model's tool call becomes a ToolOutput.

`execute` never raises. Everything the model can get wrong (an unknown name, malformed JSON,
arguments that do not fit the schema) and everything a tool can refuse (ToolError) comes back as an
is_error output worded so the model can correct itself; a bug in a tool is reported the same way
instead of crashing the run.

Every call has one deadline (`tool_seconds`) and may be cancelled. The tool runs in a worker thread and
sees both in its ToolContext, so it stops its own work (ripgrep is killed, file loops stop); the
registry answers at the deadline or the cancel even if a tool is stuck in a system call.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from aforo import safejson
from aforo.errors import LimitExceeded, ToolError
from aforo.limits import TOOL_SECONDS
from aforo.messages import ToolSpec
from aforo.protocols import Tool, ToolContext, ToolOutput
from aforo.tools.deadline import POLL_S, Interrupted, interruption
from aforo.tools.find_tool import Find
from aforo.tools.glob_tool import Glob
from aforo.tools.grep_tool import Grep
from aforo.tools.ls_tool import LS
from aforo.tools.read_tool import Read
from aforo.tools.symbol_cache import SymbolCache

_QUOTE_CHARS = 200
# Up to this window, tool definitions are sent lean (`specs_for`): they are resent on every turn.
LEAN_WINDOW = 8192


class ToolRegistry:
    def __init__(
        self, tools: Sequence[Tool], workspace: Path, *, seconds: float = float(TOOL_SECONDS.value)
    ) -> None:
        self.workspace = workspace
        self.seconds = seconds
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, Draft202012Validator] = {}
        for tool in tools:
            spec = tool.spec
            if spec.name in self._tools:
                raise ValueError(f"two tools are named {spec.name!r}")
            Draft202012Validator.check_schema(spec.input_schema)
            self._tools[spec.name] = tool
            self._validators[spec.name] = Draft202012Validator(spec.input_schema)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def specs_for(self, window: int) -> tuple[ToolSpec, ...]:
        """The definitions sent to a model with `window` tokens: in a small window, each tool's first
        sentence and its arguments without their descriptions (measured on llama-server with
        Qwen2.5-Coder: 752 -> 597 prompt tokens for the system prompt and tools), same arguments."""
        return self.specs if window > LEAN_WINDOW else tuple(s.lean() for s in self.specs)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._tools)

    def execute(
        self,
        name: str,
        arguments: str | dict[str, Any],
        max_chars: int | None = None,
        cancel: threading.Event | None = None,
        question: str = "",
    ) -> ToolOutput:
        """Run one tool call; every failure becomes an is_error output, nothing is raised.

        It returns by the call's deadline, and within a poll interval of `cancel` being set."""
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "none"
            return ToolOutput(f"Unknown tool {name!r}. Available tools: {available}.", is_error=True)
        args, problem = _parse(name, arguments)
        if problem is None:
            problem = self._invalid(tool, args)
        if problem is not None:
            return ToolOutput(problem, is_error=True)
        deadline = time.monotonic() + self.seconds
        ctx = ToolContext(self.workspace, max_chars, cancel, deadline, question)
        answer: list[ToolOutput] = []
        done = threading.Event()

        def work() -> None:
            answer.append(_valid_utf8(self._run(tool, args, ctx)))
            done.set()

        threading.Thread(target=work, name=f"aforo-tool-{name}", daemon=True).start()
        while not done.wait(POLL_S):
            stop = interruption(ctx)
            if stop is not None and not done.is_set():
                # The tool sees the same context and stops at its next check; no need to wait for it.
                return self._stopped(name, stop)
        return answer[0]

    def _run(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            return tool.run(args, ctx)
        except Interrupted as exc:
            return self._stopped(tool.spec.name, exc)
        except (ToolError, LimitExceeded) as exc:
            return ToolOutput(f"{tool.spec.name}: {exc}", is_error=True)
        except Exception as exc:  # a bug in a tool must not end the run; the model can try another way
            problem = f"{type(exc).__name__}: {exc}"
            return ToolOutput(f"internal error in tool {tool.spec.name}: {problem}", is_error=True)

    def _stopped(self, name: str, stop: Interrupted) -> ToolOutput:
        if stop.cancelled:
            return ToolOutput(f"{name}: cancelled by the user before it finished.", is_error=True)
        limit = dataclasses.replace(TOOL_SECONDS, value=self.seconds)
        exc = LimitExceeded(limit, "the call did not finish in time")
        advice = "Try a narrower call: a smaller path, a more specific pattern or glob, a smaller limit."
        return ToolOutput(f"{name}: {exc} {advice}", is_error=True)

    def _invalid(self, tool: Tool, args: dict[str, Any]) -> str | None:
        spec = tool.spec
        error = best_match(self._validators[spec.name].iter_errors(args))
        if error is None:
            return None
        return f"Invalid arguments for {spec.name}: {_describe(error)}. Expected: {signature(spec)}."


def _valid_utf8(output: ToolOutput) -> ToolOutput:
    """The output with any lone surrogate written out (`\\udce9`).

    The content goes into JSON: a surrogate (an undecodable byte a tool let through) would fail there,
    far from here. The tools escape names themselves (names.show); this is the guarantee for any tool."""
    content = output.content.encode("utf-8", "backslashreplace").decode("utf-8")
    return output if content == output.content else dataclasses.replace(output, content=content)


def _parse(name: str, arguments: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    if arguments is None:
        return {}, None
    value: Any = arguments
    if isinstance(arguments, str):
        # Some servers send "" for a call without arguments.
        if not arguments.strip():
            return {}, None
        try:
            value = safejson.loads(arguments, f"the arguments of {name}")
        except LimitExceeded as exc:
            return {}, f"{exc} Send flat arguments: a JSON object of strings and numbers."
        except json.JSONDecodeError as exc:
            quoted = arguments if len(arguments) <= _QUOTE_CHARS else arguments[:_QUOTE_CHARS] + "…"
            return {}, (
                f"Malformed JSON arguments for {name}: {exc.msg} (line {exc.lineno}, column {exc.colno}) "
                f"in {quoted!r}. Send the arguments as one JSON object."
            )
    if not isinstance(value, dict):
        return {}, f"Arguments for {name} must be a JSON object, not {type(value).__name__}."
    return value, None


def _describe(error: ValidationError) -> str:
    field = "/".join(str(part) for part in error.absolute_path)
    return f"field {field!r}: {error.message}" if field else error.message


def signature(tool: ToolSpec) -> str:
    """A one-line summary of a tool's parameters, e.g. `Read(file_path: string, offset?: integer)`."""
    schema = tool.input_schema
    required = set(schema.get("required", ()))
    params = []
    for key, prop in schema.get("properties", {}).items():
        kind = " | ".join(json.dumps(v) for v in prop["enum"]) if "enum" in prop else prop.get("type", "any")
        params.append(f"{key}{'' if key in required else '?'}: {kind}")
    extra = "" if schema.get("additionalProperties", True) else "; no other fields"
    return f"{tool.name}({', '.join(params)}){extra}"


def default_tools(symbols: SymbolCache | None = None) -> list[Tool]:
    """`symbols`: the workspace's symbol cache, shared by Read and Find (and the map, given the same)."""
    # The order the model sees them in: what it needs most first (small models favour the first).
    return [Read(symbols=symbols), Find(symbols), Grep(), Glob(), LS()]


def default_registry(workspace: Path, symbols: SymbolCache | None = None) -> ToolRegistry:
    return ToolRegistry(default_tools(symbols), workspace)
