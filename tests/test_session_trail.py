"""The session's trail (issue 38): what aforo knows of a session stays exact through compactions and
--resume, is shown to the model when a question asks about the session, fills the checkpoints, and a
compaction in the middle of a question resumes that question."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from rich.console import Console

from aforo.cli.commands import Commands
from aforo.cli.context_view import trail_lines
from aforo.cli.session_keeper import SessionKeeper
from aforo.context.compacted import IN_FLIGHT
from aforo.context.ledger import COMPACTED_HEADER, build_ledger, is_compacted
from aforo.context.statements import decisions_in
from aforo.context.trail import Trail, checkpoint_facts, first_sentence, recall_only
from aforo.context.trail_view import BLOCK_HEADER, DEFINED_HEADER, NO_READS, block
from aforo.limits import TRAIL_ANSWERS, TRAIL_BLOCK_CHARS, TRAIL_ITEM_CHARS, TRAIL_SOURCES
from aforo.loop.after_answer import correction, in_words
from aforo.loop.agent import Agent
from aforo.loop.opening import TRAIL_PART
from aforo.messages import Message, Request, ToolResult, ToolUse
from aforo.navigate.guide import Navigator
from aforo.providers.fake import FakeProvider, FakeTurn
from aforo.records import Decision, Stamp, Where
from aforo.store.sessions import SessionRecord, SessionStore
from dialects.openai_app import Call, Reply, make_openai_app
from support.cli import run_cli
from support.live_server import LiveServer
from support.scenario import is_summary_request, make_agent, make_files

GOAL = "Explain how mod00.py and mod01.py differ. Never modify any file."
SECRET = "sk-live-0123456789abcdef0123456789abcdef"


def read(i: int, path: str, facts: str) -> list[Message]:
    use = ToolUse(f"c{i}", "Read", {"file_path": path})
    return [Message("assistant", (use,)), Message("user", (ToolResult(f"c{i}", "body", facts=facts),))]


def test_the_trail_keeps_requests_rules_decisions_reads_and_what_each_answer_concluded() -> None:
    trail = Trail.of(
        [
            Message.user(GOAL),
            *read(1, "mod00.py", "mod00.py: 75 lines; 37 functions"),
            Message.assistant("## Answer\nmod00.py is longer than mod01.py. It has more functions."),
            Message.user(
                "Does it only read UTF-8? Let's drop the YAML loader because it pulls in a C extension."
            ),
            Message.assistant("Noted."),
        ]
    )
    assert trail.goal == GOAL
    assert trail.rules == ("Never modify any file.",)
    assert trail.decisions == (Decision("Let's drop the YAML loader", "it pulls in a C extension"),)
    assert trail.read == (("Read mod00.py", "mod00.py: 75 lines; 37 functions"),)
    assert trail.answers == (
        (GOAL, "mod00.py is longer than mod01.py."),
        ("Does it only read UTF-8? Let's drop the YAML loader because it pulls in a C extension.", "Noted."),
    )


def test_aforos_own_asks_are_no_request_rule_or_question_of_the_user() -> None:
    """Asked again in words, or to correct its citations, the model gets a user's turn from aforo: on
    click the trail kept "Answer in your own words, … : Read decorators.py: where is …" as the user's
    request, and "cite only files and lines that exist" would be a rule the user gave."""
    asked = "Where is pass_context defined?"
    messages = [
        Message.user(GOAL),
        Message.assistant("mod00.py is longer."),
        Message.user(asked),
        Message.assistant("Read decorators.py"),
        Message.user(in_words("the names of tool calls", asked)),
        Message.assistant("It is defined in decorators.py at line 27, I think."),
        Message.user(correction([])),
        Message.assistant("It is defined in decorators.py at line 26."),
    ]
    trail = Trail.of(messages)
    assert trail.requests == (GOAL, asked)
    assert trail.rules == ("Never modify any file.",)
    assert trail.answers[-1] == (asked, "It is defined in decorators.py at line 26.")
    assert build_ledger(messages).requests == (GOAL, asked)


def test_a_question_is_no_constraint_of_the_compacted_conversation() -> None:
    asked = "What does get_current_context return when there is no context and silent is True?"
    ledger = build_ledger([Message.user(GOAL), Message.user(asked)])
    assert ledger.hard == ("Never modify any file.",)


def test_the_trail_is_redacted_and_bounded() -> None:
    messages = [Message.user(f"Use the key {SECRET} to call it.")]
    for i in range(TRAIL_SOURCES.value + 5):
        messages += read(i, f"f{i}.py", f"f{i}.py: {i} lines")
    for i in range(TRAIL_ANSWERS.value + 5):
        messages += [Message.user(f"question {i}"), Message.assistant(f"Answer {i}.")]
    trail = Trail.of(messages)
    assert SECRET not in json.dumps(trail.to_dict()) and "[REDACTED" in trail.goal
    assert (
        len(trail.read) == TRAIL_SOURCES.value and trail.read[-1][0] == f"Read f{TRAIL_SOURCES.value + 4}.py"
    )
    assert len(trail.answers) == TRAIL_ANSWERS.value
    assert len(block(trail)) <= TRAIL_BLOCK_CHARS.value
    assert Trail.from_dict(json.loads(json.dumps(trail.to_dict()))).to_dict() == trail.to_dict()


def test_the_block_names_files_in_plain_words_never_in_the_call_format() -> None:
    trail = Trail.of(
        [
            Message.user(GOAL),
            *read(1, "pkg/core.py", "pkg/core.py: 3 000 lines"),
            Message("assistant", (ToolUse("g", "Grep", {"pattern": "def command"}),)),
            Message("user", (ToolResult("g", "x", facts="2 matches in pkg/decorators.py"),)),
        ]
    )
    shown = block(trail)
    assert shown.startswith(BLOCK_HEADER)
    assert "  - pkg/core.py: 3 000 lines" in shown
    assert shown.endswith("\n- aforo searched for: def command")  # apart from the files read
    assert "Read pkg" not in shown
    # The pre-search's pattern as its words; a session that read no file says so.
    searched = Trail.of(
        [
            Message.user(GOAL),
            Message("assistant", (ToolUse("p", "Grep", {"pattern": r"\b(pass_context|Context)\b"}),)),
            Message("user", (ToolResult("p", "`pass_context` is defined in decorators.py at line 27."),)),
            Message.assistant("It is in decorators.py at line 27."),
            Message.user("Which exception is raised?"),
            Message.assistant("`NoSuchOption`, in exceptions.py."),
        ]
    )
    shown = block(searched)
    assert f"{NO_READS}\n- aforo searched for: pass_context, Context\n" in shown
    # The earlier questions numbered, each with how its answer began.
    assert shown.endswith(
        f"  1. The user asked: {GOAL!r} You answered: It is in decorators.py at line 27.\n"
        "  2. The user asked: 'Which exception is raised?' You answered: `NoSuchOption`, in exceptions.py."
    )


def test_every_earlier_question_is_shown_cut_shorter_before_any_is_left_out() -> None:
    """On click the record showed questions 4 to 11 of 11: "which exception did you say…?" was about
    the 3rd."""
    long = "word " * 60
    messages = [Message.user(GOAL)]
    for i in range(1, 20):
        messages += [Message.user(f"Question {i}: {long}?"), Message.assistant(f"Answer {i}: {long}.")]
    shown = block(Trail.of(messages))
    assert len(shown) <= TRAIL_BLOCK_CHARS.value
    assert (
        "\n  1. The user asked: 'Question 1: word" in shown
        and "\n  19. The user asked: 'Question 19" in shown
    )


def test_a_checkpoint_says_what_the_trail_knows_first_then_what_the_conversation_does() -> None:
    stamp = Stamp(where=Where(model="m"), lane="default")
    conversation = (Message.user("Explain parse. Never modify any file."),)
    trail = Trail().absorb(Message.user("Explain how a.py works. Always cite lines."))
    facts = checkpoint_facts("compact", 100, stamp, conversation, trail, None)
    assert (facts.reason, facts.tokens_before, facts.stamp) == ("compact", 100, stamp)
    assert facts.goal == "Explain how a.py works. Always cite lines."
    assert facts.hard == ("Never modify any file.", "Always cite lines.") and facts.next_action == ""
    pending = checkpoint_facts("compact", 100, stamp, conversation, trail, "go on")
    assert pending.next_action == "answer the request in flight: go on"


def test_sentences_and_decisions() -> None:
    assert first_sentence("**Short answer:** it is `f`. Then more.") == "Short answer:** it is `f`."
    assert decisions_in("We decided to use click instead of argparse since it composes.") == [
        Decision("We decided to use click instead of argparse", "it composes")
    ]
    assert recall_only("Which files have you read in this session?")
    assert not recall_only("Now compare the two files we read earlier.")
    assert not recall_only("We decided to drop the YAML loader.")  # a statement, not a question
    assert decisions_in("What did we decide to focus on, and why?") == []  # asks, decides nothing
    assert recall_only("Remind me what we decided")
    # A decision asked after by the other verbs it is taken with.
    assert recall_only("What did we choose, and why?")
    assert recall_only("Which option have we picked?") and recall_only("What did we go with?")
    assert recall_only("Tell me what we settled on.") and recall_only("What was our decision?")
    assert not recall_only("Which function chooses the encoding?")  # about the code


def test_a_decision_is_kept_as_one_not_also_as_a_rule() -> None:
    """humanize, held out: "We decided to use naturaldelta instead of precisedelta, because our users
    only need a rough duration." was a rule too (its `only`), and asked "Which rule did I give you?"
    the 1.5B answered with the decision."""
    said = "Always give the file name. We decided to use naturaldelta, because users only need a rough one."
    trail = Trail().absorb(Message.user(said))
    assert trail.rules == ("Always give the file name.",)
    assert trail.decisions == (Decision("We decided to use naturaldelta", "users only need a rough one"),)
    assert build_ledger([Message.user(said)]).hard == ("Always give the file name.",)
    # A rule said without must, never, only or always (colorama, held out).
    assert Trail().absorb(Message.user("Learn colorama. Keep every answer under fifty words.")).rules == (
        "Keep every answer under fifty words.",
    )
    assert Trail().absorb(Message.user("We keep notes. Use at least two.")).rules == ("Use at least two.",)


def test_the_trail_clips_a_decision_and_its_why_to_one_item() -> None:
    most = int(TRAIL_ITEM_CHARS.value)
    trail = Trail().absorb(Message.user(f"Let's drop   the {'x' * most} loader because {'y' * 2 * most}."))
    (decision,) = trail.decisions
    assert decision.decision.startswith("Let's drop the x") and len(decision.decision) == most
    assert decision.why.endswith("…") and len(decision.why) == most


def trail_model(seen: list[Request]):
    """Reads a file for each question about code; answers a session question from the record block."""

    def respond(request: Request) -> FakeTurn:
        seen.append(request)
        if is_summary_request(request):
            return FakeTurn("Goal: unknown.")  # a summary that lost everything
        record = request.messages[-1].text if BLOCK_HEADER in request.messages[-1].text else ""
        if record:
            return FakeTurn("From the record: " + " | ".join(re.findall(r"^  - (\S+?):", record, re.M)))
        last = request.messages[-1]
        if last.tool_results:
            return FakeTurn(f"{last.tool_results[0].facts}. Done.")
        wanted = re.findall(r"mod\d\d\.py", last.text)
        return FakeTurn("", [("Read", {"file_path": wanted[-1]})]) if wanted else FakeTurn("ok")

    return respond


def test_after_compactions_a_session_question_gets_the_exact_record_and_no_tool(tmp_path: Path) -> None:
    files = make_files(tmp_path, 4, 1200)
    seen: list[Request] = []
    provider = FakeProvider(trail_model(seen))
    agent, _, journal = make_agent(tmp_path, provider, window=8192)
    agent.run(GOAL.replace("mod01.py", files[0]))
    for name in files[1:]:
        agent.run(f"What is in {name}?")
        agent.governor.compact_now(agent.request(), provider)
    assert sum(is_compacted(m) for m in agent.messages) == 1 and len(journal.checkpoints) == 3
    result = agent.run("Which files have you read in this session?")
    assert result.reason == "end_turn"
    asked = seen[-1]
    assert asked.answer_only  # no tool call: the record answers it
    # The record in place of the conversation: one short request, the system prompt the server cached.
    assert len(asked.messages) == 1 and asked.messages[0].text.endswith(
        "The user's question: Which files have you read in this session?"
    )
    assert all(p.name != TRAIL_PART for p in asked.system)
    assert is_compacted(agent.messages[0]) and agent.messages[-2].text.startswith("Which files")
    assert agent.messages[-1].text == "From the record: " + " | ".join(files)
    assert trail_lines(agent.governor.conversation.trail)[3] == "  read or searched: " + ", ".join(files)
    # The record is shown for that question only.
    agent.run("What is in mod00.py?")
    assert all(p.name != TRAIL_PART for p in seen[-1].system)
    # The checkpoints take goal, rules and evidence from the trail, not from the summary that lost them.
    facts = journal.checkpoints[-1][3]
    assert facts.goal == GOAL.replace("mod01.py", files[0])
    assert facts.hard == ("Never modify any file.",)
    assert [e.source for e in facts.evidence][:4] == [f"Read {f}" for f in files]


def guided_agent(workspace: Path, answer: str) -> tuple[Agent, list[Request]]:
    """An agent with the pre-search on `workspace` whose model always answers `answer`, and the
    requests it is sent."""
    seen: list[Request] = []

    def respond(request: Request) -> FakeTurn:
        seen.append(request)
        return FakeTurn(answer)

    agent, _, _ = make_agent(workspace, FakeProvider(respond))
    agent.guide = Navigator(workspace, 4096, cache=False).guide
    return agent, seen


def test_a_follow_up_that_points_back_is_searched_for_with_the_request_before_it(tmp_path: Path) -> None:
    """On click, "How many lines does that file have?" after "Read decorators.py: which function…"
    named nothing the pre-search could find, and the 1.5B named a file that does not exist."""
    files = make_files(tmp_path, 3, 1200)
    lines = len((tmp_path / files[1]).read_text().splitlines())
    agent, seen = guided_agent(tmp_path, "It is all there.")
    agent.run(f"Read {files[1]}: what does f_1_3 return?")
    agent.run("How many lines does that file have?")
    found = seen[-1].messages[-1].tool_results
    assert found and f"`{files[1]}` has {lines} lines." in found[0].content
    agent.run("What does f_2_1 return?")  # names its own: searched for as it is
    assert "f_1_3" not in seen[-1].messages[-1].tool_results[0].content


def test_a_follow_up_is_searched_for_with_the_names_the_answer_before_it_gave(tmp_path: Path) -> None:
    """humanize: "What is the default value of its format argument?" after "Which function in number.py
    turns 1200000 into 1.2 million?" asks about the `intword` the answer named; the request before it
    names no function."""
    make_files(tmp_path, 3, 1200)
    seen: list[Request] = []

    def respond(request: Request) -> FakeTurn:
        seen.append(request)
        return FakeTurn("`f_2_4` multiplies its input by four." if len(seen) == 1 else "By four.")

    agent, _, _ = make_agent(tmp_path, FakeProvider(respond))
    agent.guide = Navigator(tmp_path, 4096, cache=False).guide
    agent.run("Which function multiplies its input by four?")
    agent.run("What does it return?")
    found = seen[-1].messages[-1].tool_results
    assert found and "mod02.py:9" in found[0].content and "def f_2_4(x):" in found[0].content


def test_a_compaction_mid_question_resumes_that_question(tmp_path: Path) -> None:
    """A model that answers the first request it finds unless one is named in flight (the seed's 7B
    answered "Ready to continue" after a compaction); the answer must be to the request at work."""
    files = make_files(tmp_path, 10, 3000)
    seen: list[Request] = []

    def respond(request: Request) -> FakeTurn:
        seen.append(request)
        if is_summary_request(request):
            return FakeTurn("Goal: read files.\nNext action: continue.")
        text = request.messages[0].text
        if is_compacted(request.messages[0]):
            if IN_FLIGHT not in text:
                return FakeTurn("Ready to continue or answer any specific questions.")
            pending = re.findall(r"TASK-\d", text.split(IN_FLIGHT, 1)[1])
            return FakeTurn(f"Answer to: {pending[0]}")
        if "TASK-2" not in json.dumps([m.to_dict() for m in request.messages]):
            return FakeTurn("Done with TASK-1.")
        done = {u.input["file_path"] for m in request.messages for u in m.tool_uses}
        todo = [f for f in files if f not in done]
        return FakeTurn("", [("Read", {"file_path": todo[0]})]) if todo else FakeTurn("Done with TASK-2.")

    provider = FakeProvider(respond)
    agent, rec, _ = make_agent(tmp_path, provider, window=4096, max_turns=40)
    assert agent.run("TASK-1: say hello.").reason == "end_turn"
    result = agent.run("TASK-2: read every mod*.py file and compare them.")
    assert result.reason == "end_turn", result.error
    assert [e.action for e in rec.of("context")].count("compacted") >= 1
    assert agent.messages[-1].text == "Answer to: TASK-2"


def session_server(bodies: list[dict[str, Any]]):
    def answer(body: dict[str, Any]) -> Reply:
        bodies.append(body)
        last = str(body["messages"][-1]["content"])
        if BLOCK_HEADER in last:
            said = "Read: " + ", ".join(re.findall(r"^  - (\S+?)(?::|$)", last, re.M))
            return Reply(text=said, prompt_tokens=len(json.dumps(body)) // 4)
        if body["messages"][-1]["role"] == "tool":
            return Reply(text="It defines f_0_0. That is all.", prompt_tokens=len(json.dumps(body)) // 4)
        call = Call("Read", json.dumps({"file_path": "mod00.py"}))
        return Reply(calls=[call], prompt_tokens=len(json.dumps(body)) // 4)

    return answer


def test_the_trail_survives_resume_and_answers_for_the_session(tmp_path: Path, aforo_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    make_files(ws, 1, 400)
    bodies: list[dict[str, Any]] = []
    with LiveServer(make_openai_app(session_server(bodies))) as server:
        flags = ("-w", str(ws), "--base-url", server.url, "-m", "test-model", "--context-window", "8192")
        first = run_cli(*flags, f"What does mod00.py define? Only answer in English. {SECRET}")
        assert first.code == 0, first.err
        (path,) = (aforo_home / "sessions").glob("*.json")
        saved = json.loads(path.read_text())
        assert saved["trail"]["read"][0][0] == "Read mod00.py"
        assert saved["trail"]["answers"][0][1] == "It defines f_0_0."
        assert SECRET not in path.read_text()
        again = run_cli(
            *flags, "--resume", "--json", "What was my first question, and which files have you read?"
        )
    assert again.code == 0, again.err
    assert again.run_end()["reason"] == "end_turn"
    sent = bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]  # the record in place of the conversation
    system = sent[-1]["content"]
    assert "- The user's first request (their goal): What does mod00.py define?" in system
    assert "- A rule the user gave you: Only answer in English." in system
    assert "1. The user asked: 'What does mod00.py define?" in system
    assert "You answered: It defines f_0_0." in system
    assert "tools" not in bodies[-1] or not bodies[-1]["tools"] or bodies[-1].get("tool_choice") == "none"


def test_a_session_question_naming_code_is_told_where_the_index_defines_it(
    tmp_path: Path, aforo_home: Path
) -> None:
    """dotenv, after two compactions: "In which file did you find find_dotenv?" -> `cli.py`, from a
    record that said what was searched for but not where: a question about the session is not searched,
    and the symbol index knows where each name is defined."""
    ws = tmp_path / "ws"
    ws.mkdir()
    make_files(ws, 2, 400)
    (ws / "mod01.py").write_text("from mod00 import f_0_3\n\nprint(f_0_3(2))\n")
    bodies: list[dict[str, Any]] = []
    with LiveServer(make_openai_app(session_server(bodies))) as server:
        flags = ("-w", str(ws), "--base-url", server.url, "-m", "test-model", "--context-window", "8192")
        assert run_cli(*flags, "What does mod01.py print?").code == 0
        where = run_cli(*flags, "--resume", "In which file did you find f_0_3 earlier?")
        first = run_cli(*flags, "--resume", "What was my first question?")
    assert where.code == 0 and first.code == 0, where.err + first.err
    asked, plain = bodies[-2]["messages"], bodies[-1]["messages"]
    assert [m["role"] for m in asked] == ["system", "user"]  # the record in place of the conversation
    said = asked[-1]["content"]
    assert f"{DEFINED_HEADER}\n  - `f_0_3` is defined in mod00.py at line 7." in said
    assert "mod01.py at line" not in said  # it only imports it
    assert DEFINED_HEADER not in plain[-1]["content"]  # no name of code asked about: nothing looked up


def test_a_session_saved_before_the_trail_gets_the_one_its_messages_still_show() -> None:
    requests = f"<request>\n{GOAL}\n</request>\n<request>\nWhat is f?\n</request>"
    compacted = Message.user(f"{COMPACTED_HEADER} Checkpoint: cp-1.]\n\n## The requests\n{requests}")
    trail = Trail.of([compacted, Message.user("What is f?"), Message.assistant("f doubles x.")])
    assert trail.requests == (GOAL, "What is f?")
    assert trail.answers == (("What is f?", "f doubles x."),)


def test_context_and_compact_show_what_the_session_record_keeps(tmp_path: Path) -> None:
    files = make_files(tmp_path, 2, 1200)
    provider = FakeProvider(trail_model([]))
    agent, rec, _ = make_agent(tmp_path, provider, window=8192)
    store = SessionStore(tmp_path / "sessions")
    keeper = SessionKeeper(store, SessionRecord(id=store.new_id(), workspace=str(tmp_path)), rec)
    keeper.attach(agent, workspace=tmp_path, model="m", base_url="http://127.0.0.1:9")
    out = io.StringIO()
    commands = Commands(
        keeper=keeper,
        provider=provider,
        store=store,
        workspace=tmp_path,
        model="m",
        console=Console(file=out, width=200, no_color=True),
        list_sessions=lambda _arg: None,
    )
    agent.run(f"What is in {files[0]}? Never guess.")
    agent.run(f"What is in {files[1]}?")
    commands.dispatch("/compact")
    shown = out.getvalue()
    assert "session record (kept by aforo through every compaction and --resume):" in shown
    assert f"  read or searched: {files[0]}, {files[1]}" in shown and "  rules: Never guess." in shown
    out.truncate(0)
    commands.dispatch("/context")
    assert f"  goal: What is in {files[0]}? Never guess." in out.getvalue()
    keeper.close()


def test_a_plain_word_is_looked_up_only_when_the_question_asks_where(tmp_path: Path) -> None:
    """cachetools' `methodkey` reads as a word, and so does the `rule` a package may define: "In which
    file did you find methodkey?" asks where, "What rule did I give you?" does not."""
    (tmp_path / "keys.py").write_text(
        "def hashkey(*args):\n    return args\n\n\ndef methodkey(self, *args):\n    return args\n"
    )
    (tmp_path / "rules.py").write_text("def rule(text):\n    return text\n")
    found = Navigator(tmp_path, 4096, cache=False)
    assert found.defined("In which file did you find methodkey?") == (
        "`methodkey` is defined in keys.py at line 5.",
    )
    assert found.defined("What rule did I give you?") == ()
    assert found.defined("What did you say `rule` returns?") == ("`rule` is defined in rules.py at line 1.",)


def test_a_rule_or_a_decision_is_no_thing_to_search_for(tmp_path: Path) -> None:
    """A new user on more-itertools: "… Always name the file you found something in." was searched for
    `Always` and `found`; "We decided to use chunked rather than grouper, …" for the callers of
    `chunked` (its "use"), and the 1.5B listed them instead of taking the decision."""
    make_files(tmp_path, 2, 400)
    agent, seen = guided_agent(tmp_path, "Noted.")
    agent.run("What does f_0_2 return? Always name the file you found something in.")
    (found,) = seen[-1].messages[-1].tool_results
    assert "`f_0_2`" in found.content and "`Always`" not in found.content and "`found`" not in found.content
    agent.run("We decided to use f_1_1 rather than f_1_2, because it is shorter.")
    assert seen[-1].answer_only and not seen[-1].messages[-1].tool_results  # no search, no tool
    assert agent.governor.conversation.trail.decisions[-1].decision.startswith("We decided to use f_1_1")
