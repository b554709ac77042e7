"""What a one-shot run takes in: piped standard input with the question, and files attached by `@path`.

The real `aforo` console script against a real OpenAI-compatible server on 127.0.0.1, whose request
bodies show exactly what the model was sent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aforo.limits import STDIN_BYTES
from dialects.openai_app import Reply, make_openai_app
from support.cli import CliRun, run_cli
from support.live_server import LiveServer


class Recorder:
    """Answers every request with one sentence and keeps the bodies it was sent."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        return Reply(text="It defines f.", prompt_tokens=len(json.dumps(body)) // 4)

    def sent(self) -> list[dict[str, Any]]:
        """The messages of the first request, without the system prompt."""
        return [m for m in self.bodies[0]["messages"] if m["role"] != "system"]


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def f():\n    return 'APP-BODY'\n")
    (ws / "src" / "mid.py").write_text("".join(f"def m_{n}():\n    return 'MID-{n}'\n" for n in range(40)))
    (ws / "big.py").write_text("".join(f"x_{n} = {n}  # BIG-LINE\n" for n in range(6000)))
    (tmp_path / "outside.txt").write_text("OUTSIDE-SECRET")
    return ws


def ask(tmp_path: Path, *words: str, stdin: str = "", extra: tuple[str, ...] = ()) -> tuple[CliRun, Recorder]:
    model = Recorder()
    ws = workspace(tmp_path)
    with LiveServer(make_openai_app(model)) as server:
        flags = ("-w", str(ws), "--base-url", server.url, "-m", "test-model", "--context-window", "8192")
        run = run_cli(*flags, *extra, *words, stdin=stdin)
    return run, model


# --- piped standard input --------------------------------------------------------------------------


def test_piped_input_is_framed_as_what_the_question_is_about(tmp_path: Path) -> None:
    code = "def g(x):\n    return x * 2\n"
    run, model = ask(tmp_path, "explain", "this", stdin=code)
    assert run.code == 0, run.err
    assert model.sent()[0] == {
        "role": "user",
        "content": "The user piped this text; the question is about it. Answer from it.\n<piped>\n\n"
        "def g(x):\n    return x * 2\n\n</piped>\n\nThe question: explain this",
    }


def test_a_question_about_piped_text_alone_is_answered_without_tools(tmp_path: Path) -> None:
    # `cat globals.py | aforo summarize`: told it may use a tool, the 1.5B model read three files first.
    run, model = ask(tmp_path, "summarize", stdin="def g(x):\n    return x * 2\n")
    assert run.code == 0, run.err
    (body,) = model.bodies  # one call, and the answer
    assert body.get("tool_choice") == "none" or not body.get("tools"), body


def test_a_question_about_the_workspace_may_use_tools_beside_piped_text(tmp_path: Path) -> None:
    for question in ("where is this used?", "is this in src/app.py?", "which file defines g?"):
        run, model = ask(tmp_path / question.split()[0], question, stdin="def g(x):\n    return x * 2\n")
        assert run.code == 0, run.err
        first = model.bodies[0]
        assert first.get("tools") and first.get("tool_choice") != "none", (question, first.get("tool_choice"))
        assert "use a tool only if the text is not enough" in model.sent()[0]["content"]


def test_indentation_of_piped_input_is_kept(tmp_path: Path) -> None:
    run, model = ask(tmp_path, "what is it?", stdin="    indented()\n")
    assert run.code == 0, run.err
    assert "<piped>\n\n    indented()\n\n</piped>" in model.sent()[0]["content"]


def test_only_the_typed_question_is_scanned_for_mentions(tmp_path: Path) -> None:
    code = "@t.overload\ndef f(x: int) -> int: ...\n# see @src/app.py\n"
    run, model = ask(tmp_path, "summarize", stdin=code)
    assert run.code == 0, run.err
    assert "was not attached" not in run.err  # piped code's decorators are no mentions
    assert [m["role"] for m in model.sent()] == ["user"]  # nor are its paths: nothing attached
    assert "APP-BODY" not in json.dumps(model.bodies)


def test_a_mention_in_the_typed_question_is_attached_beside_piped_text(tmp_path: Path) -> None:
    run, model = ask(tmp_path, "does this match @src/app.py?", stdin="def f(): pass\n")
    assert run.code == 0, run.err
    assert [m["role"] for m in model.sent()] == ["user", "assistant", "tool"]
    assert "APP-BODY" in model.sent()[2]["content"]


def test_piped_text_larger_than_the_window_is_cut_in_the_middle_and_the_user_told(tmp_path: Path) -> None:
    lines = [f"value_{n} = {n}  # PIPED-LINE-{n}" for n in range(1, 3001)]  # about 30k tokens
    run, model = ask(tmp_path, "summarize", stdin="\n".join(lines) + "\n")
    assert run.code == 0, run.err
    assert len(model.bodies) == 1  # answered at once: no compaction, no refusal
    content = model.sent()[0]["content"]
    assert "answer from the lines shown" in content and content.endswith("The question: summarize")
    kept = [n for n in range(1, 3001) if f"PIPED-LINE-{n}\n" in content]
    first_cut = next(n for n in range(1, 3001) if n not in kept)
    last_cut = max(n for n in range(1, 3001) if n not in kept)
    # The head and the tail, whole lines, one cut between them.
    assert kept[0] == 1 and kept[-1] == 3000 and len(kept) < 1500
    assert kept == [*range(1, first_cut), *range(last_cut + 1, 3001)]
    notice = " ".join(run.err.split())
    assert f"The piped text (3000 lines, {len(chr(10).join(lines))} characters)" in notice
    assert f"lines {first_cut}-{last_cut} were cut from its middle" in notice, run.err
    assert f"sed -n {first_cut},{last_cut}p" in notice


def test_piped_text_of_one_long_line_names_the_characters_cut(tmp_path: Path) -> None:
    # 1 MiB on one line (a minified file, a log without newlines): the cut is inside the line, and
    # "lines 1-0 were cut" said nothing.
    text = "".join(f"<{n:07d}>" for n in range(100_000))
    run, model = ask(tmp_path, "summarize", stdin=text)
    assert run.code == 0, run.err
    content = model.sent()[0]["content"]
    first_cut = next(n for n in range(100_000) if f"<{n:07d}>" not in content)
    last_cut = max(n for n in range(100_000) if f"<{n:07d}>" not in content)
    assert 0 < first_cut < last_cut < 99_999  # a head and a tail kept
    notice = " ".join(run.err.split())
    assert "lines 1-0" not in notice
    said = re.search(r"characters (\d+)-(\d+) of line 1 were cut from its middle", notice)
    assert said, notice
    start, end = int(said[1]), int(said[2])
    # The range begins in the first unit cut and ends in the last (each 9 characters, counted from 1).
    assert first_cut * 9 < start <= (first_cut + 1) * 9 and last_cut * 9 < end <= (last_cut + 1) * 9


def test_piped_input_alone_is_the_question(tmp_path: Path) -> None:
    run, model = ask(tmp_path, stdin="What does src/app.py do?\n")
    assert run.code == 0, run.err
    assert model.sent()[0]["content"] == "What does src/app.py do?"


def test_piped_input_over_its_limit_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    run, model = ask(tmp_path, "summarize", stdin="y\n" * (int(STDIN_BYTES.value) // 2 + 1))
    assert run.code == 2
    assert "stdin_bytes" in run.err and "@path" in run.err
    assert model.bodies == []


# --- @path mentions --------------------------------------------------------------------------------


def tool_pairs(messages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """(the arguments of each call, the content of its result), in order."""
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    return [(json.loads(c["function"]["arguments"]), results[c["id"]]) for c in calls]


def test_a_mentioned_file_is_attached_as_a_read_call_and_its_result(tmp_path: Path) -> None:
    run, model = ask(tmp_path, "explain @src/app.py, please", extra=("--json",))
    assert run.code == 0, run.err
    sent = model.sent()
    # The prompt as typed, then the call and its result, then the model's turn.
    assert sent[0] == {"role": "user", "content": "explain @src/app.py, please"}
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    ((args, result),) = tool_pairs(sent)
    assert args == {"file_path": "src/app.py"}
    assert "APP-BODY" in result and "1\tdef f():" in result  # Read's own rendering
    kinds = [(e["type"], e.get("name")) for e in run.events()]
    assert ("tool_start", "Read") in kinds and ("tool_end", "Read") in kinds


def test_a_mentioned_file_is_capped_like_any_read(tmp_path: Path) -> None:
    run, model = ask(tmp_path, "what is in @big.py", extra=("--json",))
    assert run.code == 0, run.err
    ((_, result),) = tool_pairs(model.sent())
    size = (tmp_path / "ws" / "big.py").stat().st_size
    assert len(result) < size / 4 and "cut here to fit the context cap" in result
    end = next(e for e in run.events() if e["type"] == "tool_end")
    assert end["truncated"] is True


def test_mentions_that_name_no_readable_file_stay_text_and_say_why(tmp_path: Path) -> None:
    prompt = "compare @nope.py, @../outside.txt, @src and @dataclass"
    run, model = ask(tmp_path, prompt)
    assert run.code == 0, run.err
    sent = model.sent()
    assert sent == [sent[0]] and sent[0]["content"] == prompt  # nothing attached, the text as typed
    assert "OUTSIDE-SECRET" not in json.dumps(model.bodies)
    warnings = [line for line in run.err.splitlines() if "was not attached" in line]
    assert len(warnings) == 3  # @dataclass names no path: a decorator, not a typo
    assert any("@nope.py" in w and "no nope.py" in w for w in warnings)
    assert any("@../outside.txt" in w and "outside the workspace" in w for w in warnings)
    assert any("@src" in w and "directory" in w for w in warnings)


def test_an_attached_file_is_cleared_by_the_governor_like_any_tool_result(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    # Clear every tool result as soon as the conversation passes 1% of the window.
    (ws / ".aforo.toml").write_text("[policy]\nclear_at = 0.01\nkeep_tool_results = 0\n")
    model = Recorder()
    with LiveServer(make_openai_app(model)) as server:
        # --no-search: the attachment alone, without the pre-search's result beside it.
        flags = ("-w", str(ws), "--base-url", server.url, "-m", "test-model", "--context-window", "8192")
        flags += ("--no-search",)
        first = run_cli(*flags, "--json", "explain @src/mid.py")
        later = run_cli(*flags, "--json", "--resume", "and what does m_3 return?")
    assert first.code == later.code == 0, first.err + later.err
    # The model reads the attached file first (a result it has not read is never cleared)...
    assert not [e for e in first.events() if e["type"] == "context"]
    ((args, result),) = tool_pairs(model.sent())
    assert args == {"file_path": "src/mid.py"} and "MID-1" in result
    # ...and on the next question it is an old result like any other.
    cleared = [e for e in later.events() if e["type"] == "context" and e["action"] == "cleared"]
    assert cleared and cleared[0]["count"] == 1
    last = [m for m in model.bodies[-1]["messages"] if m["role"] != "system"]
    ((args, result),) = tool_pairs(last)
    assert args == {"file_path": "src/mid.py"} and "MID-1" not in result
