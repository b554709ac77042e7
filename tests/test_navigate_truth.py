"""What the pre-search tells the model must be true (issue 41): callers, importers and definitions from
the syntax tree of code, never from a docstring, a doctest, a comment or a type declaration; the fact
that answers the question said first, in words; an overview from what the project says about itself,
answered in one pass; an empty workspace said before the model is asked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aforo.context import tokens
from aforo.events import Warning
from aforo.messages import fresh_call_ids
from aforo.navigate.guide import Navigator
from aforo.providers.fake import FakeProvider, FakeTurn
from aforo.tools.roles import CALLS, COMMENT, DOCSTRING, IMPORTS, TYPED, roles
from support.scenario import make_agent

DERIVE = '''"""Keys."""


def derive(secret):
    """Derive a key from `secret`.

    >>> derive("a")
    'a!'
    """
    return secret + "!"


def sign(value):
    # derive first, then sign
    return derive(value) + value
'''
DERIVE_STUB = "def derive(secret: str) -> str: ...\n"


def pyi_package(root: Path) -> Path:
    """A Python package whose function's doctest calls it, with a `.pyi` overload of it."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "keys.py").write_text(DERIVE)
    (root / "pkg" / "keys.pyi").write_text(DERIVE_STUB)
    return root


COMMAND_JS = """class Command {
  constructor(name) {
    this.name = name;
  }

  createCommand(name) {
    return new Command(name);
  }
}

exports.Command = Command;
"""
INDEX_JS = """const { Command } = require('./lib/command');

// a Command is made for each program
function createProgram(name) {
  return new Command('main').createCommand(`${name}-sub`);
}

exports.createProgram = createProgram;
"""
INDEX_D_TS = """export declare class Command {
  constructor(name?: string);
  createCommand(name?: string): Command;
}
export declare function createProgram(name?: string): Command;
"""


def js_package(root: Path) -> Path:
    """commander's shape: the class in lib/, the real call in index.js (a template literal in it), a
    .d.ts declaring both."""
    (root / "lib").mkdir(parents=True)
    (root / "typings").mkdir()
    (root / "lib" / "command.js").write_text(COMMAND_JS)
    (root / "index.js").write_text(INDEX_JS)
    (root / "typings" / "index.d.ts").write_text(INDEX_D_TS)
    return root


def presearch(root: Path, question: str, window: int = 8192) -> str:
    guided = Navigator(root, window, cache=False).guide(question, (), set())
    return guided.messages[1].tool_results[0].content


def test_a_doctest_is_no_call_and_a_stub_is_a_declaration(tmp_path: Path) -> None:
    content = presearch(pyi_package(tmp_path), "What calls derive?")
    # Said first, as the fact: the one call in code; the doctest of `derive` does not make it its caller.
    assert content.startswith("`derive` is called by sign (pkg/keys.py:15).\n"), content
    assert "called by derive" not in content and "pkg/keys.py:7" not in content.splitlines()[0]
    assert "pkg/keys.pyi:1 declares derive (type declaration)" in content
    assert "pkg/keys.py:15 in sign calls derive" in content


def test_the_roles_of_a_python_file_come_from_its_syntax_tree() -> None:
    found = roles(DERIVE.encode(), "pkg/keys.py", "derive")
    assert found == {4: "defines", 7: DOCSTRING, 14: COMMENT, 15: CALLS}
    assert roles(DERIVE_STUB.encode(), "pkg/keys.pyi", "derive") == {1: TYPED}
    assert roles(b"We call derive() twice.\n", "NOTES.md", "derive") is None  # no syntax tree: prose


def test_a_javascript_call_is_found_and_a_d_ts_declaration_is_no_caller(tmp_path: Path) -> None:
    root = js_package(tmp_path)
    content = presearch(root, "What calls createCommand?")
    assert content.startswith("`createCommand` is called by createProgram (index.js:5).\n"), content
    assert "typings/index.d.ts:3 declares createCommand (type declaration)" in content
    assert "lib/command.js:6 defines Command.createCommand" in content
    content = presearch(root, "What calls Command?")
    assert content.startswith(
        "`Command` is called by createProgram (index.js:5) and Command.createCommand (lib/command.js:7).\n"
    ), content
    assert "index.js:3 mentions Command in a comment" in content


@pytest.mark.parametrize(
    ("path", "source", "word", "line", "role"),
    [
        ("index.ts", b"import { Command } from './command';\nnew Command();\n", "Command", 1, IMPORTS),
        ("index.ts", b"import { Command } from './command';\nnew Command();\n", "Command", 2, CALLS),
        ("app.js", b'const zlib = require("zlib");\nzlib.gzip(1);\n', "zlib", 1, IMPORTS),
        ("app.js", b'const zlib = require("zlib");\nzlib.gzip(1);\n', "gzip", 2, CALLS),
        ("m.go", b'package m\nimport "fmt"\nfunc F() {\n\tfmt.Println(1)\n}\n', "Println", 4, CALLS),
        ("m.go", b'package m\nimport "fmt"\nfunc F() {\n\tfmt.Println(1)\n}\n', "fmt", 2, IMPORTS),
        ("m.rs", b"use std::io;\nfn f() {\n    g::norm(1);\n}\n", "norm", 3, CALLS),
        ("m.rs", b"use std::io;\nfn f() {\n    g::norm(1);\n}\n", "io", 1, IMPORTS),
        ("A.java", b"class A {\n  void f() {\n    this.run(1);\n  }\n}\n", "run", 3, CALLS),
        ("x.c", b"#include <zlib.h>\nint f(void) {\n  return parse(1);\n}\n", "parse", 3, CALLS),
        ("x.c", b"int f(void) {\n  /* parse it */\n  return 0;\n}\n", "parse", 2, COMMENT),
    ],
)
def test_calls_and_imports_in_every_language_of_the_map(
    path: str, source: bytes, word: str, line: int, role: str
) -> None:
    assert (roles(source, path, word) or {}).get(line) == role


def test_which_imports_names_the_importing_module_not_the_defining_one(tmp_path: Path) -> None:
    (tmp_path / "adapters.py").write_text('"""Adapters."""\n\n\nclass HTTPAdapter:\n    pass\n')
    lines = ['"""Sessions."""', *["import os"] * 13, "from .adapters import HTTPAdapter", "", "x = os"]
    (tmp_path / "sessions.py").write_text("\n".join(lines) + "\n")
    content = presearch(tmp_path, "Which module imports HTTPAdapter?")
    assert content.startswith("`HTTPAdapter` is imported by sessions.py (line 15).\n"), content


def test_where_defined_is_said_as_a_sentence_with_declarations_apart(tmp_path: Path) -> None:
    content = presearch(js_package(tmp_path), "Where is createProgram defined?")
    assert content.startswith(
        "`createProgram` is defined in index.js at line 4, and declared in typings/index.d.ts:5 "
        "(type declaration).\n"
    ), content


def test_where_defined_in_python(tmp_path: Path) -> None:
    content = presearch(pyi_package(tmp_path), "Where is derive defined?")
    assert content.startswith("`derive` is defined in pkg/keys.py at line 4"), content


def test_the_index_says_where_a_name_is_defined_for_a_check_of_an_answer(tmp_path: Path) -> None:
    index = Navigator(js_package(tmp_path), 8192, cache=False).index()
    # Code only: a .d.ts declares (the pre-search says so from its lines), it defines nothing.
    assert [(s.path, s.line) for s in index.defined("createCommand")] == [("lib/command.js", 6)]
    assert [(s.path, s.line) for s in index.defined("Command.createCommand")] == [("lib/command.js", 6)]
    assert index.defined("nowhere") == [] and index.defined("Other.createCommand") == []


def overview_workspace(root: Path) -> Path:
    (root / "wordy").mkdir(parents=True)
    (root / "README.md").write_text(
        "[![build](https://ci.example/badge.svg)](https://ci.example)\n\n# wordy\n\n"
        "Wordy counts how often each word appears in a text, and ranks them.\n\n"
        "```python\nimport wordy\n\nwordy.top(text)\n```\n\n>>> wordy.top('a a b', 1)\n['a']\n\n"
        "Usage\n=====\n\n    wordy FILE\n"
    )
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text('"""The tests."""\n')
    (root / "pyproject.toml").write_text('[project]\nname = "wordy"\ndescription = "Word frequencies"\n')
    (root / "wordy" / "__init__.py").write_text('"""Count words in texts."""\n\nfrom .count import top\n')
    (root / "wordy" / "count.py").write_text(
        'def top(text, n):\n    """The n most common words."""\n    return n\n'
    )
    return root


def test_an_overview_starts_from_what_the_project_says_about_itself(tmp_path: Path) -> None:
    guided = Navigator(overview_workspace(tmp_path), 8192, cache=False).guide(
        "What does this package do?", (), set()
    )
    content = guided.messages[1].tool_results[0].content
    assert "README.md: # wordy Wordy counts how often each word appears in a text" in content
    # Its prose, not its badges, code, sessions, indented blocks or heading rules.
    assert "Wordy counts how often each word appears in a text, and ranks them. Usage\n" in content
    assert not any(
        code in content for code in ("badge.svg", "import wordy", "wordy.top", "['a']", "FILE", "===")
    )
    assert "The tests." not in content  # the package's docstring, not its tests'
    assert 'pyproject.toml: the description of wordy: "Word frequencies"' in content
    assert "wordy/__init__.py: the package's docstring: Count words in texts." in content
    assert guided.answer_only


def test_an_overview_is_answered_in_one_pass(tmp_path: Path) -> None:
    provider = FakeProvider([FakeTurn("It counts words.")])
    agent, _, _ = make_agent(overview_workspace(tmp_path), provider)
    agent.guide = Navigator(tmp_path, 8192, cache=False).guide
    result = agent.run("What does this package do?")
    assert result.reason == "end_turn" and len(provider.requests) == 1
    assert provider.requests[0].answer_only  # no tool offered: the answer from the project's own words


def test_a_package_that_says_nothing_is_told_by_the_docstrings_of_what_it_exports(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("from .main import load_env, find_env\n")
    main = [
        "def find_env():",
        '    """Search in increasingly higher folders for the given file."""',
        "",
        "def load_env(path=None):",
        '    """Parse a .env file and then load all the variables found as environment variables.',
        "",
        "    More details.",
        '    """',
    ]
    (tmp_path / "main.py").write_text("\n".join(main) + "\n")
    content = presearch(tmp_path, "What does this package do?")
    assert (
        "main.py: def load_env: Parse a .env file and then load all the variables found as environment "
        "variables." in content
    ), content
    assert "main.py: def find_env: Search in increasingly higher folders" in content
    assert "More details" not in content


def test_a_package_json_description_is_read(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(
        '{"name": "cmdr", "description": "the complete solution for CLIs"}'
    )
    (tmp_path / "index.js").write_text("exports.x = 1;\n")
    content = presearch(tmp_path, "what is this project?")
    assert 'package.json: the description of cmdr: "the complete solution for CLIs"' in content


def test_an_empty_workspace_is_said_before_the_model_is_asked(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    provider = FakeProvider([FakeTurn("The workspace is empty."), FakeTurn("Still empty.")])
    agent, rec, _ = make_agent(empty, provider)
    agent.guide = Navigator(empty, 4096, presearch=False, cache=False).guide  # said even with --no-search
    agent.run("What does main.py do?")
    (warned,) = [e for e in rec.events if isinstance(e, Warning)]
    assert warned.message == "the workspace empty is empty: it has no files: the model is told so"
    assert rec.events.index(warned) < rec.events.index(rec.of("turn_end")[0])
    told = (
        "The workspace empty is empty: it has no files: there is no file to read or cite; "
        "answer without naming any."
    )
    assert [p.text for p in provider.requests[0].system if p.name == "empty workspace"] == [told]
    # Once it has a file, the line goes: it is said only while it is true.
    (empty / "main.py").write_text("x = 1\n")
    agent.run("And now?")
    assert all(p.name != "empty workspace" for p in provider.requests[1].system)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder whatever its mode")
def test_an_unreadable_workspace_is_said(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.py").write_text("x = 1\n")
    locked.chmod(0)
    try:
        guided = Navigator(locked, 4096, cache=False).guide("what is x?", (), set())
    finally:
        locked.chmod(0o755)
    (warned,) = [e for e in guided.events if isinstance(e, Warning)]
    assert "cannot be read (Permission denied)" in warned.message


def test_fresh_call_ids_skip_those_taken() -> None:
    ids = fresh_call_ids({"call_1", "call_3"})
    assert [next(ids), next(ids)] == ["call_4", "call_5"]


def test_the_budgets_are_in_the_governors_token_estimate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    navigator = Navigator(tmp_path, 8192, cache=False)
    before = navigator.search_chars()
    monkeypatch.setattr(tokens, "CHARS_PER_TOKEN", 2)  # a calibration of the estimate moves both
    assert navigator.search_chars() == before // 2
