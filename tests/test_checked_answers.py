"""Answers a user can check (issue 37), through the CLI against llama-server's dialect on 127.0.0.1: every
citation is checked before the run ends, a wrong one is sent back once with the exact fact, what still
does not hold is marked on screen and in `--json`'s result; aforo's own formats are no answer; a stopped
stream's usage is said to be unknown.

The workspace (test_constrained_cli.workspace): alpha.py defines f0 and f1 (6 lines), beta.py f0 to f3
(12 lines), gamma.py f0 to f2 (9 lines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aforo.loop.cited import Checker
from dialects.openai_app import Reply, make_openai_app
from dialects.servers_apps import chat_tokens
from support.cli import run_cli
from support.live_server import LiveServer
from test_constrained_cli import llamacpp_steps, workspace
from test_repeats import GOOD, LOOP

CORRECTION = "aforo checked the places your answer cites"


def last_user(body: dict[str, Any]) -> str:
    return str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])


def chats(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in bodies if b.get("max_tokens") != 1]


def corrects_itself(body: dict[str, Any]) -> dict[str, Any]:
    if CORRECTION in last_user(body):
        return {"answer": "f3 is defined in beta.py at line 10 (beta.py:10)."}
    return {"answer": "f3 is defined in alpha.py at line 40; f0 is at gamma.py:2."}


def test_a_wrong_citation_is_sent_back_once_with_the_exact_fact_and_the_corrected_answer_ends_the_run(
    tmp_path: Path,
) -> None:
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(corrects_itself, bodies)) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "where?")
    assert run.code == 0, run.err
    events = run.events()
    result = events[-1]
    assert (result["ending"], result["answer"]) == (
        "end_turn",
        "f3 is defined in beta.py at line 10 (beta.py:10).",
    )
    # `beta.py:10` says no more than the definition at that line: checked once.
    assert [(c["text"], c["held"]) for c in result["citations"]] == [
        ("f3 is defined in beta.py at line 10", True)
    ]
    asked = chats(bodies)
    assert len(asked) == 2
    # The facts, from the workspace's lengths and the symbol index: the answer in the conversation, then them.
    told = last_user(asked[1])
    assert "`alpha.py` defines no `f3`; `f3` is defined in `beta.py` at line 10" in told
    assert "f0 is at gamma.py:2" not in told  # what held is not sent back
    assert asked[1]["messages"][-2] == {
        "role": "assistant",
        "content": '{"answer": "f3 is defined in alpha.py at line 40; f0 is at gamma.py:2."}',
    }
    # Only the answer may come now: the correction is one more answer, not a new search.
    assert "oneOf" not in asked[1]["response_format"]["json_schema"]["schema"]
    steps = [e["step"] for e in events if e["type"] == "info" and "step" in e]
    assert steps == [
        "the answer cites what does not hold (`alpha.py` defines no `f3`; `f3` is defined in `beta.py` at "
        "line 10); asked once to correct it"
    ]


def test_what_still_does_not_hold_after_the_one_correction_is_marked_on_screen_and_in_the_result(
    tmp_path: Path,
) -> None:
    bodies: list[dict[str, Any]] = []
    wrong = {"answer": "It is at alpha.py:40, and in notes.py."}
    ws = workspace(tmp_path)
    with LiveServer(llamacpp_steps(lambda body: wrong, bodies)) as server:
        flags = ("-w", str(ws), "--base-url", server.url, "-m", "m")
        shown = run_cli(*flags, "where?")
        run = run_cli(*flags, "--json", "where?")
    assert shown.code == 0 and run.code == 0, shown.err + run.err
    assert len(chats(bodies)) == 4  # each run: the answer, and one correction asked for
    lines = shown.out.splitlines()
    marks = [line for line in lines if line.startswith("(unverified")]
    assert marks == [
        "(unverified: alpha.py:40 — `alpha.py` has 6 lines; there is no line 40)",
        "(unverified: notes.py — there is no file `notes.py` in the workspace)",
    ]
    # Under the answer, before the result line.
    assert lines.index(marks[0]) > max(i for i, line in enumerate(lines) if "It is at alpha.py:40" in line)
    assert lines[-1].startswith("[end_turn]")
    result = run.events()[-1]
    assert result["ending"] == "end_turn" and result["answer"] == wrong["answer"]
    assert result["citations"] == [
        {"text": "alpha.py:40", "path": "alpha.py", "line": 40, "end": None, "name": None, "held": False,
         "fact": "`alpha.py` has 6 lines; there is no line 40"},
        {"text": "notes.py", "path": "notes.py", "line": None, "end": None, "name": None, "held": False,
         "fact": "there is no file `notes.py` in the workspace"},
    ]  # fmt: skip


def test_an_answer_whose_citations_hold_is_not_sent_back(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []
    right = {"answer": "alpha.py defines f0 and f1 (alpha.py:1-5)."}
    with LiveServer(llamacpp_steps(lambda body: right, bodies)) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "what?")
    assert run.code == 0, run.err
    assert len(chats(bodies)) == 1
    # The place, and "alpha.py defines f0" checked as a definition: both hold.
    assert [c["held"] for c in run.events()[-1]["citations"]] == [True, True]


def counts_then_corrects(body: dict[str, Any]) -> dict[str, Any]:
    """The 1.5B on attrs: a file's length said wrong ("`_funcs.py` has 73 lines"; it has 522)."""
    if CORRECTION in last_user(body):
        return {"answer": "The file `beta.py` has 12 lines."}
    return {"answer": "The file `beta.py` has 73 lines."}


def test_a_wrong_line_count_of_a_file_is_sent_back_once_with_its_real_count(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(counts_then_corrects, bodies)) as server:
        run = run_cli(
            "-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json",
            "How many lines does beta.py have?",
        )  # fmt: skip
    assert run.code == 0, run.err
    result = run.events()[-1]
    assert result["answer"] == "The file `beta.py` has 12 lines."
    assert [(c["text"], c["held"]) for c in result["citations"]] == [("beta.py has 12 lines", True)]
    asked = chats(bodies)
    assert len(asked) == 2
    # The pre-search said the count before the first answer (the model here does not take it).
    assert "`beta.py` has 12 lines." in str(asked[0]["messages"])
    assert "- beta.py has 73 lines: `beta.py` has 12 lines." in last_user(asked[1])


def places_then_words(body: dict[str, Any]) -> dict[str, Any]:
    """The 1.5B's copied search block (`path:line` places, one per line), until told to use words."""
    if "Answer in your own words" in last_user(body):
        return {"answer": "Each of the three modules defines f0; beta.py defines the most."}
    return {"answer": "alpha.py:1\nbeta.py:1 defines f0\ngamma.py:1"}


def test_a_list_of_places_is_no_answer_and_is_asked_again_in_words(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(places_then_words, bodies)) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "which?")
    assert run.code == 0, run.err
    events = run.events()
    assert events[-1]["answer"] == "Each of the three modules defines f0; beta.py defines the most."
    steps = [e["step"] for e in events if e["type"] == "info" and "step" in e]
    assert steps == [
        "the answer was a list of places, aforo's own format "
        "('alpha.py:1\\nbeta.py:1 defines f0\\ngamma.py'); asked again for one in words"
    ]
    asked = chats(bodies)
    assert len(asked) == 2
    # The copied list is not kept; the request says what to do instead, with the question.
    assert "alpha.py:1\\nbeta.py:1" not in str(asked[1]["messages"])
    assert last_user(asked[1]).endswith(
        "Answer in your own words, in sentences, not with a list of places as aforo shows them: which?"
    )


def test_a_copied_format_twice_ends_empty_answer(tmp_path: Path) -> None:
    said = {"answer": "Read alpha.py, Read beta.py"}
    with LiveServer(llamacpp_steps(lambda body: said, [])) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "which?")
    assert run.code == 6, run.err
    result = run.events()[-1]
    assert (result["ending"], result["answer"]) == ("empty_answer", "")
    assert "was the names of tool calls, aforo's own format" in result["error"]


def test_a_stopped_stream_says_its_tokens_are_unknown_not_a_small_number(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "wordfreq").mkdir()
    (tmp_path / "wordfreq" / "counter.py").write_text("def words(text):\n    return text.split()\n")
    with LiveServer(make_openai_app(lambda body: Reply(text=GOOD + LOOP * 200))) as server:
        flags = ("-w", str(tmp_path), "--base-url", server.url, "-m", "m", "--context-window", "8192")
        shown = run_cli(*flags, "--no-search", "Explain a.py.")
        run = run_cli(*flags, "--json", "--no-search", "Explain a.py.")
    assert shown.code == 0 and run.code == 0, shown.err + run.err
    last = shown.out.splitlines()[-1]
    assert last.startswith("[end_turn] 1 turns, 0 tool calls, tokens unknown (an answer stopped before")
    assert "output tokens" not in last
    assert run.events()[-1]["unreported_turns"] == 1


def test_an_answer_cut_at_the_output_limit_has_its_citations_marked_without_a_correction(
    tmp_path: Path,
) -> None:
    cut = "f1 is in alpha.py at line 90 and then"
    bodies: list[dict[str, Any]] = []

    def answers(body: dict[str, Any]) -> Reply:
        bodies.append(body)
        # The prompt counted as the server would: at aforo's system prompt's size (~500 tokens), the
        # app's default 20 reads as a server that dropped most of the first request.
        return Reply(text=cut, finish="length", prompt_tokens=chat_tokens(body))

    ws = workspace(tmp_path)
    with LiveServer(make_openai_app(answers)) as server:
        flags = (
            "-w",
            str(ws),
            "--base-url",
            server.url,
            "-m",
            "m",
            "--context-window",
            "8192",
            "--no-search",
        )
        run = run_cli(*flags, "--json", "where?")
    assert run.code == 5, run.err
    result = run.events()[-1]
    assert (result["ending"], result["answer"]) == ("max_tokens", cut)
    assert [(c["text"], c["held"]) for c in result["citations"]] == [("alpha.py at line 90", False)]
    assert len(bodies) == 1


def test_the_fact_for_a_definition_elsewhere_names_the_code_before_the_type_stubs(tmp_path: Path) -> None:
    # attrs: "Factory is defined in _make.py and __init__.py" (it only imports it) was told "`Factory` is
    # defined in `src/attr/__init__.pyi` at line 82, … (and 4 more)": the stubs' lines sort first by
    # path, and the model is asked to correct its answer from them.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.pyi").write_text("class Factory: ...\nclass Factory: ...\n" * 2)
    (tmp_path / "pkg/__init__.py").write_text("from pkg._make import Factory\n")
    (tmp_path / "pkg/_make.py").write_text("import os\n\n\nclass Factory:\n    pass\n")
    said = "The Factory class is defined in pkg/_make.py and pkg/__init__.py."
    verdicts = Checker(tmp_path)(said)
    assert [(v.citation.path, v.held) for v in verdicts] == [
        ("pkg/_make.py", True),
        ("pkg/__init__.py", False),
    ]
    assert verdicts[1].fact.startswith(
        "`pkg/__init__.py` defines no `Factory`; `Factory` is defined in `pkg/_make.py` at line 4, "
    )
