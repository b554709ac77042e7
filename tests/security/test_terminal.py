"""Text from the model, the tools and the servers reaches the terminal shown, never obeyed (issue 12,
breach 4): escape sequences are written out visibly on a terminal, in a file and in a pipe alike, while
`--json` carries exactly what the model sent."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from hostile import HOSTILE, HOSTILE_TEXT, raw_controls
from hypothesis import given
from hypothesis import strategies as st

from aforo.cli.render import HumanRenderer, JsonRenderer
from aforo.cli.sanitize import StreamSanitizer, safe_console, sanitize
from aforo.events import RunEnd, RunResult, TextDelta, ToolEnd, ToolStart, Warning
from dialects.openai_app import Call, Failure, Reply, make_openai_app
from dialects.servers_apps import ollama_app
from support.cli import run_cli
from support.live_server import LiveServer


def one_answer(text: str) -> Any:
    return lambda body: Reply(text=text, prompt_tokens=300)


def test_the_models_escape_sequences_are_shown_not_obeyed(tmp_path: Path) -> None:
    """stdout is a pipe here, as when it is redirected to a file: no raw escape either way."""
    with LiveServer(make_openai_app(one_answer(HOSTILE_TEXT))) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "hi")
    assert run.code == 0, run.err
    assert raw_controls(run.out + run.err) == []
    # Each sequence is still there to read, spelled out.
    for visible in (
        r"\x1b[2J",
        r"\x1b]52;c;Y3Vy",
        r"\x07",
        r"\x08",
        r"\u009b31m",
        r"rm -rf /\rls",
        r"\u202e",
    ):
        assert visible in run.out, visible
    assert "Answer:\n\t" in run.out  # newlines and tabs of an answer stay


def test_escape_sequences_split_across_streamed_deltas_stay_inert(tmp_path: Path) -> None:
    """A live-streaming server (Ollama) sends the answer in pieces; a sequence may span two."""
    chunks = ["Clearing \x1b", "[2J now, then \x1b]52;c;aGk=", "\x07 and a line\r", "\nend\r", "overwritten"]
    app = ollama_app(script=[{"chunks": chunks, "omit_counts": True}])
    with LiveServer(app) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "hi")
    assert run.code == 0, run.err
    assert raw_controls(run.out) == []
    assert r"Clearing \x1b[2J now" in run.out
    assert "and a line\nend" in run.out  # CR LF split between deltas is still just a newline
    assert r"end\roverwritten" in run.out


def test_tool_names_arguments_and_errors_are_sanitized(tmp_path: Path) -> None:
    calls = [
        Call("\x1b]52;c;aGk=\x07Read", json.dumps({"file_path": "a.py"})),
        Call("Read", json.dumps({"file_path": "\x9b2J\u202eyp.txt\x1b[31m"})),
    ]
    script = iter([Reply(calls=calls, prompt_tokens=300), Reply(text="done", prompt_tokens=400)])
    with LiveServer(make_openai_app(lambda body: next(script))) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "hi")
    assert run.code == 0, run.err
    assert raw_controls(run.out + run.err) == []
    assert r"> \x1b]52;c;aGk=\x07Read" in run.out
    assert r"\u009b2J\u202eyp.txt" in run.out


def test_a_servers_error_body_is_sanitized(tmp_path: Path) -> None:
    body = json.dumps({"error": {"message": "denied \x1b[2J\x1b]52;c;aGk=\x07 \x9b1m"}}, ensure_ascii=False)
    with LiveServer(make_openai_app(lambda _: Failure(403, body))) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "hi")
    assert run.code == 1
    assert "denied" in run.err
    assert raw_controls(run.out + run.err) == []


def test_server_model_names_in_aforos_own_error_and_info_lines_are_sanitized(tmp_path: Path) -> None:
    models: dict[str, int | None] = {"evil\x1b[2J": None, "also\x1b]52;c;aGk=\x07": None}
    with LiveServer(make_openai_app(one_answer("hi"), models=models)) as server:
        no_model = run_cli("-w", str(tmp_path), "--base-url", server.url, "hi")
    assert no_model.code == 2 and "no model given" in no_model.err
    assert raw_controls(no_model.err) == [] and r"evil\x1b[2J" in no_model.err

    with LiveServer(make_openai_app(one_answer("hi"), models={"only\x1b[2J\u202e": None})) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "hi")
    assert run.code == 0, run.err
    assert raw_controls(run.out) == [] and r"model: only\x1b[2J\u202e" in run.out
    listing = run_cli("sessions", "--all")  # the session remembers the model the server named
    assert listing.code == 0 and r"only\x1b[2J" in listing.out
    assert raw_controls(listing.out) == []


def test_json_output_is_exact_and_inert(tmp_path: Path) -> None:
    with LiveServer(make_openai_app(one_answer(HOSTILE_TEXT))) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "--json", "hi")
    assert run.code == 0, run.err
    assert raw_controls(run.out) == []  # JSON escapes C0 itself; DEL, C1 and bidi are escaped too
    text = "".join(e["text"] for e in run.events() if e["type"] == "text_delta")
    assert text.encode() == HOSTILE_TEXT.encode()


def test_the_renderer_sanitizes_every_field_even_split_sequences() -> None:
    out, err = io.StringIO(), io.StringIO()
    render = HumanRenderer(out, err)
    for piece in ("a\x1b", "[2J b\r", "\nc\x9b", "1m"):
        render(TextDelta(text=piece))
    render(ToolStart(id="1", name="Gl\x1bob\nX", input={"pattern": "\x1b[2J\u202e"}))
    render(ToolEnd(id="1", name="Glob", ok=False, duration_ms=1.0, error="no such file \x1b]0;title\x07"))
    render(Warning(message="careful \x1b[5m"))
    render(RunEnd(result=RunResult(reason="error", error="server said \x1b[2J\x07")))
    assert raw_controls(out.getvalue() + err.getvalue()) == []
    assert out.getvalue().startswith("a\\x1b[2J b\nc\\u009b1m\n")
    assert "> Gl\\x1bob\\nX " in out.getvalue()  # a tool name stays on one line


def test_a_terminal_console_keeps_its_colours_but_not_the_models_sequences() -> None:
    buffer = io.StringIO()
    console = safe_console(buffer, force_terminal=True, no_color=False, color_system="standard")
    console.print("warning: " + HOSTILE_TEXT, style="yellow", markup=False)
    written = buffer.getvalue()
    colours = re.findall(r"\x1b\[[0-9;]*m", written)
    assert colours, "styles are rich's to write"
    assert raw_controls(re.sub(r"\x1b\[[0-9;]*m", "", written)) == []


# Any text, any split into pieces: nothing active gets through, and the pieces read as the whole.
@given(
    st.lists(st.text(alphabet=st.sampled_from([*"ab\n\t\r\x1b[;\x07\x9b\u202e\x00\x7f", "é"])), max_size=8)
)
def test_no_text_and_no_split_gets_a_control_through(pieces: list[str]) -> None:
    stream = StreamSanitizer()
    streamed = "".join(stream.feed(p) for p in pieces) + stream.flush()
    whole = "".join(pieces)
    assert streamed == sanitize(whole)
    assert raw_controls(streamed) == []
    assert streamed.count("\n") == whole.count("\n")
    assert streamed.count("\t") == whole.count("\t")


def test_every_kind_of_sequence_has_a_visible_form() -> None:
    for kind, sequence in HOSTILE.items():
        shown = sanitize(sequence)
        assert raw_controls(shown) == [], kind
        assert shown != sequence and "\\" in shown, kind


def test_json_lines_decode_to_exactly_what_was_sent_even_a_lone_surrogate() -> None:
    out = io.StringIO()
    sent = "C1 \x9b2J, bidi \u202e, DEL \x7f, ESC \x1b[2J, lone \udcff"
    JsonRenderer(out)(TextDelta(text=sent))
    assert raw_controls(out.getvalue()) == [] and "\udcff" not in out.getvalue()
    assert json.loads(out.getvalue())["text"] == sent
