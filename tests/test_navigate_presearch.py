"""The pre-search: before the first model call, the regions the question names are in the request, as a
Grep call and its result the user sees, the governor clears and /undo brings back."""

from __future__ import annotations

import shutil
from collections.abc import Collection
from pathlib import Path

from aforo.cli.config import load_config
from aforo.cli.flags import build_parser, config_flags
from aforo.messages import Request, SystemPart, ToolResult
from aforo.navigate.guide import Guided, Navigator
from aforo.navigate.repomap import MAP_PART
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import make_agent


def decorators_module() -> str:
    """400 lines; `group` is defined at line 263, far past any head a capped Read would show."""
    lines = [f"def helper_{n}():\n    return {n}\n" for n in range(140)]
    body = "".join(lines).splitlines()[:262]
    body += ["def group(name=None, **attrs):", '    """Attach a group of commands."""', "    return name"]
    body += [f"CONSTANT_{n} = {n}" for n in range(400 - len(body))]
    return "\n".join(body) + "\n"


def workspace(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "decorators.py").write_text(decorators_module())
    (pkg / "core.py").write_text("from pkg.decorators import group\n\n\nclass Group:\n    pass\n")
    for name in ("util", "io", "net", "cache"):
        (pkg / f"{name}.py").write_text(f"import os\n\n\ndef {name}_main():\n    return os.sep\n")
    (pkg / "digest.py").write_text(
        '"""Checksums."""\n\nimport hashlib\n\n\ndef digest(data):\n    return 1\n'
    )
    return root


def first_results(request: Request) -> list[ToolResult]:
    return [r for m in request.messages for r in m.tool_results]


def test_the_definition_at_line_263_is_in_the_first_request(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    assert (ws / "pkg/decorators.py").read_text().splitlines()[262] == "def group(name=None, **attrs):"
    provider = FakeProvider([FakeTurn("group is defined in pkg/decorators.py at line 263.")])
    agent, rec, _ = make_agent(ws, provider)
    agent.guide = Navigator(ws, 4096).guide
    result = agent.run("where is the group decorator defined?")
    assert result.reason == "end_turn"
    (found,) = first_results(provider.requests[0])
    assert "aforo looked in the workspace for `group`" in found.content
    assert "pkg/decorators.py:263 defines group\n263\tdef group(name=None, **attrs):" in found.content
    assert "pkg/core.py:1 imports group" in found.content
    # Shown to the user as a call, like an attached file.
    (start,) = rec.of("tool_start")
    assert start.name == "Grep" and start.input == {"pattern": r"\b(group)\b"}  # type: ignore[attr-defined]
    (end,) = rec.of("tool_end")
    assert end.ok and end.tokens > 0  # type: ignore[attr-defined]
    # In the conversation as a call and its result, right after the question: clearable like any result.
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[1].tool_uses[0].id == found.tool_use_id


def test_the_module_that_imports_a_name_is_found_by_its_mention(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    provider = FakeProvider([FakeTurn("pkg/digest.py")])
    agent, _, _ = make_agent(ws, provider)
    agent.guide = Navigator(ws, 4096).guide
    agent.run("Which module imports hashlib?")
    (found,) = first_results(provider.requests[0])
    assert "pkg/digest.py:3 imports hashlib\n2\t\n3\timport hashlib\n4\t" in found.content


def test_the_search_stays_within_its_share_of_the_window(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    for n in range(40):
        (ws / f"user_{n}.py").write_text("from pkg.decorators import group\n" * 3 + "group()\n")
    navigator = Navigator(ws, 4096)
    guided = navigator.guide("where is group defined?", (), set())
    text = guided.messages[1].tool_results[0].content
    assert len(text) <= navigator.search_chars() <= 4096 * 4 // 10
    assert "pkg/decorators.py:263 defines group" in text  # the definition before the mentions
    assert "more matches not shown" in text


def test_no_search_sends_the_question_alone(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    provider = FakeProvider([FakeTurn("no idea")])
    agent, rec, _ = make_agent(ws, provider)
    agent.guide = Navigator(ws, 4096, presearch=False).guide
    agent.run("where is the group decorator defined?")
    assert first_results(provider.requests[0]) == [] and rec.of("tool_start") == []


def test_a_question_that_names_nothing_found_adds_nothing(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    guided = Navigator(ws, 4096).guide("what is the meaning of zyzzyva?", (), set())
    assert guided.messages == () and guided.events == ()


def test_the_map_is_ranked_for_the_first_question_of_a_conversation(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    navigator = Navigator(ws, 32_768)
    system = (SystemPart("base", "system prompt"), SystemPart(navigator.repo_map(0) or "", MAP_PART))
    guided = navigator.guide("what does digest return?", system, set())
    assert guided.system[1].text.splitlines()[1].startswith("pkg/digest.py: def digest:6")
    assert guided.system[0] == system[0]
    # Later in a conversation the system prompt stays as it is: the server's cache of it is kept.
    assert navigator.guide("what does digest return?", system, set(), False).system == system


def test_the_agent_asks_for_a_ranked_map_only_while_the_conversation_is_empty(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    agent, _, _ = make_agent(ws, FakeProvider([FakeTurn("one"), FakeTurn("two")]))
    asked: list[bool] = []
    navigator = Navigator(ws, 4096)

    def guide(question: str, system: tuple[SystemPart, ...], taken: Collection[str], fresh: bool) -> Guided:
        asked.append(fresh)
        return navigator.guide(question, system, taken, fresh)

    agent.guide = guide
    agent.run("where is group defined?")
    agent.run("and digest?")
    assert asked == [True, False]


def test_the_flag_and_the_config_key_turn_it_off(tmp_path: Path) -> None:
    parser = build_parser()
    assert load_config(config_flags(parser.parse_args(["-w", str(tmp_path), "q"]))).presearch is True
    assert (
        load_config(config_flags(parser.parse_args(["-w", str(tmp_path), "--no-search", "q"]))).presearch
        is False
    )
    (tmp_path / ".aforo.toml").write_text("presearch = false\n")
    assert load_config(config_flags(parser.parse_args(["-w", str(tmp_path), "q"]))).presearch is False
    (tmp_path / ".aforo.toml").write_text('presearch = "no"\n')
    try:
        load_config(config_flags(parser.parse_args(["-w", str(tmp_path), "q"])))
    except Exception as exc:
        assert "presearch must be true or false" in str(exc)
    else:
        raise AssertionError("a non-boolean presearch was accepted")


def test_an_assignment_ranks_before_prose_that_names_it(tmp_path: Path) -> None:
    (tmp_path / "a_notes.py").write_text("# the size is how much we keep\nX = 1\n")
    (tmp_path / "b_uses.py").write_text("def f(box):\n    return box.size\n")
    (tmp_path / "z_config.py").write_text('"""Config."""\n\n\nclass Config:\n    size: int = 40\n')
    text = Navigator(tmp_path, 4096).guide("what is the default value of size?", (), set()).messages[1]
    content = text.tool_results[0].content
    labels = (
        "z_config.py:5 in Config assigns size",
        "b_uses.py:2 in f uses size",
        "a_notes.py:1 mentions size",
    )
    order = [content.index(label) for label in labels]
    assert order == sorted(order), content  # by path alone, the comment would come first


def test_of_overloads_the_first_and_the_implementation(tmp_path: Path) -> None:
    source = [
        "import typing as t",
        "",
        "@t.overload",
        "def parse(x: int) -> int: ...",
        "@t.overload",
        "def parse(x: str) -> str: ...",
        *[f"# padding {n}" for n in range(10)],
        "def parse(x):",
        '    """The implementation."""',
        "    return x",
    ]
    (tmp_path / "p.py").write_text("\n".join(source) + "\n")
    guided = Navigator(tmp_path, 32_768).guide("where is parse defined?", (), set())
    content = guided.messages[1].tool_results[0].content
    assert "p.py:4 defines parse" in content and "p.py:17 defines parse" in content
    assert "p.py:6 defines parse" not in content


def test_a_name_in_lower_case_finds_its_class(tmp_path: Path) -> None:
    (tmp_path / "gov.py").write_text("class Governor:\n    def admit(self):\n        return 1\n")
    guided = Navigator(tmp_path, 4096).guide("what does the governor admit?", (), set())
    content = guided.messages[1].tool_results[0].content
    assert "gov.py:1 defines Governor\n1\tclass Governor:" in content
    assert "gov.py:2 defines Governor.admit" not in content  # its lines are shown already


def signer_module() -> str:
    """itsdangerous's shape: a method defined, called from two others (one with a signature over
    several lines), a class attribute the prose of a question names in words, a top-level call after;
    docstrings long enough that a definition's lines shown do not reach the next one."""
    lines = ["class Signer:", '    """Signs.', *["    Signs more."] * 8, '    """', ""]
    lines += ['    default_key_derivation: str = "django-concat"', ""]
    lines += ["    def derive_key(self, secret_key=None):", '        """Derives.', *["        More."] * 8]
    lines += ['        """', "        return b'k'", ""]
    lines += [
        "    def get_signature(self, value):",
        "        key = self.derive_key()",
        "        return key",
        "",
    ]
    lines += ["    def verify_signature(", "        self,", "        value,", "    ) -> bool:"]
    lines += [
        "        # one key after the other",
        "        key = self.derive_key(value)",
        "        return bool(key)",
    ]
    lines += ["", "", "KEY = Signer().derive_key()"]
    return "\n".join(lines) + "\n"


def presearch_of(root: Path, question: str, window: int = 8192) -> tuple[str, dict[str, object], str]:
    guided = Navigator(root, window).guide(question, (), set())
    (use,) = guided.messages[0].tool_uses
    return use.name, use.input, guided.messages[1].tool_results[0].content


def test_a_call_is_labelled_with_the_definition_it_is_in(tmp_path: Path) -> None:
    (tmp_path / "signer.py").write_text(signer_module())
    (tmp_path / "notes.py").write_text("derive_key = None  # an assignment, which ranks first otherwise\n")
    _, _, content = presearch_of(tmp_path, "What calls derive_key?")
    assert "signer.py:15 defines Signer.derive_key" in content
    assert "signer.py:29 in Signer.get_signature calls derive_key" in content
    # The signature's closing line is at the definition's indentation: still inside it.
    assert "signer.py:37 in Signer.verify_signature calls derive_key" in content
    # After the class, at the top level: inside nothing.
    assert "signer.py:41 calls derive_key" in content
    # Said first, in one line: the definitions the calls are in (both models named only the lines).
    assert content.startswith(
        "`derive_key` is called by Signer.get_signature (signer.py:29), Signer.verify_signature "
        "(signer.py:37) and the top level (signer.py:41).\n"
    ), content
    # Asked for callers, the calls come before the assignment of the same name.
    assert content.index("calls derive_key") < content.index("notes.py:1 assigns derive_key"), content


def test_words_in_a_row_find_the_identifier_they_spell(tmp_path: Path) -> None:
    (tmp_path / "signer.py").write_text(signer_module())
    tool, found, content = presearch_of(tmp_path, "What is the default key derivation of Signer?")
    assert tool == "Grep" and "default_key_derivation" in str(found["pattern"])
    assert (
        "signer.py:13 in Signer assigns default_key_derivation\n12\t\n"
        '13\t    default_key_derivation: str = "django-concat"' in content
    )


def test_the_files_a_question_names_come_with_their_line_counts_longest_first(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "signer.py").write_text("x = 1\n" * 266)
    (pkg / "timed.py").write_text("y = 2\n" * 228)
    tool, found, content = presearch_of(tmp_path, "Which file is longer, timed.py or signer.py?")
    # Nothing else to search for: the counts alone, as the Glob that finds the files.
    assert (tool, found) == ("Glob", {"pattern": "{src/pkg/signer.py,src/pkg/timed.py}"})
    # Two files: the answer said as a sentence (the 1.5B named the shorter, shown "the longest ...").
    assert content == "src/pkg/signer.py (266 lines) is longer than src/pkg/timed.py (228 lines)."


def test_one_named_file_alone_is_no_search(tmp_path: Path) -> None:
    (tmp_path / "counter.py").write_text("n = 1\n")
    assert Navigator(tmp_path, 8192).guide("Read counter.py and explain it.", (), set()).messages == ()


def test_named_files_with_nothing_found_are_no_search_unless_the_question_is_of_length(
    tmp_path: Path,
) -> None:
    # The three-file task (bench/real_tasks.py): their line counts do not say which defines the most
    # functions; given them as a Glob, the 0.5B called the same Glob again, then answered "alpha.py".
    shutil.copytree(Path(__file__).parents[1] / "examples" / "tasks" / "trio", tmp_path / "trio")
    question = "Read alpha.py, beta.py and gamma.py and tell me which defines the most functions"
    assert Navigator(tmp_path / "trio", 8192).guide(question, (), set()).messages == ()
    tool, _, content = presearch_of(tmp_path / "trio", "Which is longest, alpha.py, beta.py or gamma.py?")
    assert tool == "Glob" and "beta.py is the longest (17 lines)" in content, content


def test_prose_that_says_use_is_no_import(tmp_path: Path) -> None:
    (tmp_path / "CHANGES.rst").write_text("To use a different zlib, pass it.\n")
    (tmp_path / "url_safe.py").write_text("import typing\nimport zlib\n")
    _, _, content = presearch_of(tmp_path, "Which module imports zlib?")
    assert "url_safe.py:2 imports zlib" in content and "CHANGES.rst:1 mentions zlib" in content
    assert content.index("url_safe.py:2") < content.index("CHANGES.rst:1")


def test_ten_files_named_as_a_range_are_all_counted_before_the_first_call(tmp_path: Path) -> None:
    # The ten-file task (bench/real_tasks.py) in a 4 096 window: every file's count is in the first
    # request, whatever of their bodies fits.
    modules = tmp_path / "modules"
    shutil.copytree(Path(__file__).parents[1] / "examples" / "tasks" / "modules", modules)
    lines = {p.name: len(p.read_text().splitlines()) for p in modules.glob("mod*.py")}
    longest = max(lines, key=lambda name: lines[name])
    question = "Read all ten files mod00.py … mod09.py, then tell me which file is the longest"
    tool, _, content = presearch_of(modules, question, window=4096)
    assert tool == "Glob" and len(lines) == 10
    assert content.endswith(".") and content.count(" lines)") == 10, content
    assert f"{longest} is the longest ({lines[longest]} lines); then " in content


def test_an_overload_the_regions_skip_is_no_call(tmp_path: Path) -> None:
    source = ["import typing as t", "", "@t.overload", "def ctx(x: int) -> int: ...", "@t.overload"]
    source += ["def ctx(x: str) -> str: ...", "@t.overload", "def ctx(x: bytes) -> bytes: ...", "def ctx(x):"]
    source += ["    return x", "", "", "def user():", "    return ctx(1)"]
    (tmp_path / "g.py").write_text("\n".join(source) + "\n")
    _, _, content = presearch_of(tmp_path, "What calls ctx?")
    assert content.startswith("`ctx` is called by user (g.py:14).\n"), content


def test_files_of_equal_length_are_listed_with_no_longest_named(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n" * 5)
    (tmp_path / "b.py").write_text("y = 2\n" * 5)
    _, _, content = presearch_of(tmp_path, "Which is longer, a.py or b.py?")
    assert content.endswith("names: longest first, a.py (5 lines), b.py (5 lines)."), content


def test_a_word_of_the_question_finds_the_constant_its_inflection_names(tmp_path: Path) -> None:
    # "How many times does the client retry?": the retry loop says `range(MAX_RETRIES + 1)`, from which
    # the 1.5B model answered 5; the answer is the constant's value.
    body = ["import time", "", "", "MAX_RETRIES = 4", "", "", "def fetch(url):"]
    body += ["    for attempt in range(MAX_RETRIES + 1):", "        time.sleep(attempt)"]
    (tmp_path / "client.py").write_text("\n".join(body) + "\n")
    _, _, content = presearch_of(tmp_path, "How many times does the client retry a failed request?")
    assert "client.py:4 defines MAX_RETRIES\n4\tMAX_RETRIES = 4" in content, content


def test_a_definition_question_about_a_common_word_gets_where_the_index_defines_it(tmp_path: Path) -> None:
    # The 1.5B on attrs, "Where is the define decorator defined?": `define` is a word of every such
    # question, so nothing was searched and the model answered "in the `attr` module".
    ws = workspace(tmp_path / "ws")
    (ws / "pkg/next_gen.py").write_text('"""The new API."""\n\n\ndef define(cls=None):\n    return cls\n')
    (ws / "pkg/use.py").write_text("from pkg.next_gen import define\n\n\n@define\nclass C:\n    pass\n")
    guided = Navigator(ws, 4096).guide("Where is the define decorator defined?", (), set())
    text = guided.messages[1].tool_results[0].content
    assert text.startswith("`define` is defined in pkg/next_gen.py at line 4.\n")
    # A common word the index does not define is still not searched for.
    assert Navigator(ws, 4096).guide("Where is the default defined?", (), set()).messages == ()


def test_a_length_question_about_one_named_file_gets_its_count(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    guided = Navigator(ws, 4096).guide("How many lines does decorators.py have?", (), set())
    assert guided.messages[1].tool_results[0].content == "`pkg/decorators.py` has 400 lines."


def test_of_the_names_a_word_s_stem_finds_those_made_of_the_question_s_other_words_come_first(
    tmp_path: Path,
) -> None:
    # The 1.5B on attrs, "Which function in _make.py adds __repr__ to a class?": `adds` found the first
    # three names of stem `add` alphabetically (tests' classes), no `_add_repr`; it answered
    # `_Nothing.__repr__`.
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests/test_dunders.py").write_text(
        "".join(f"class TestAdd{n}:\n    pass\n\n\n" for n in ("Eq", "Hash", "Init", "Repr"))
    )
    (ws / "make.py").write_text(
        "class _Nothing:\n    def __repr__(self):\n        return 'NOTHING'\n\n\n"
        + "".join(f"def _add_{n}(cls):\n    return cls\n\n\n" for n in ("eq", "hash", "init", "repr"))
    )
    (ws / "other.py").write_text("def _add_repr(cls):\n    return cls\n")
    (ws / "lib.py").write_text("class AddRepr:\n    pass\n")
    guided = Navigator(ws, 4096).guide("Which function in make.py adds __repr__ to a class?", (), set())
    text = guided.messages[1].tool_results[0].content
    shown = [line.split(" ", 1)[0] for line in text.splitlines() if " defines " in line]
    # Made of `add` and `repr` first; of those, the one the named file defines (each place of it).
    assert shown[:4] == ["make.py:18", "other.py:1", "lib.py:1", "tests/test_dunders.py:13"]
