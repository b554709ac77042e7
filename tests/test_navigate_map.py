"""The repository map: definitions from syntax trees, ranked for the question, cut to a budget that scales
with the window, cached by mtime, shown by /context."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from aforo.context.breakdown import break_down
from aforo.context.budget import Budget
from aforo.context.tokens import Count
from aforo.loop.prompt import system_prompt
from aforo.messages import Request
from aforo.navigate.guide import Navigator
from aforo.navigate.index import SymbolIndex, build_index
from aforo.navigate.repomap import MAP_PART
from aforo.navigate.terms import compound_terms, parts, question_paths, question_terms, stem
from aforo.reply_format import definition_chars
from aforo.tools import syntax as module
from aforo.tools.registry import default_registry
from aforo.tools.symbol_cache import SymbolCache, cache_path, symbols
from aforo.tools.syntax import CLASS, CONSTANT, FUNCTION

WINDOW = 4096


def long_module(defs_at: dict[int, str], total: int = 400) -> str:
    """A Python module of `total` lines with each of `defs_at`'s lines holding the given text."""
    lines = [f"# filler line {n}" for n in range(1, total + 1)]
    for line, text in defs_at.items():
        lines[line - 1] = text
    return "\n".join(lines) + "\n"


def big_workspace(root: Path, files: int = 60) -> Path:
    """More files than the overview lists, with a known shape: `Widget` (pkg/widgets.py) is used by every
    other module, `group` is defined at line 263 of pkg/decorators.py and used nowhere else."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "widgets.py").write_text("class Widget:\n    def paint(self):\n        return 1\n\nLIMIT = 3\n")
    (pkg / "decorators.py").write_text(
        long_module(
            {
                263: "def group(name=None, **attrs):",
                264: '    """Make a group."""',
                300: "class Command:",
                301: "    pass",
            }
        )
    )
    for n in range(files):
        (pkg / f"feature_module_number_{n:03}.py").write_text(
            f"from pkg.widgets import Widget\n\n\ndef feature_{n}():\n    return Widget()\n"
        )
    return root


def test_python_definitions_come_from_the_syntax_tree() -> None:
    source = long_module(
        {263: "class Group:", 264: "    def group(self):", 265: "        pass", 10: "MAX = 3"}
    )
    found = symbols("pkg/core.py", source.encode())
    defined = {(d.name, d.kind, d.line, d.parent) for d in found.definitions}
    assert {
        ("Group", CLASS, 263, ""),
        ("Group.group", FUNCTION, 264, "Group"),
        ("MAX", CONSTANT, 10, ""),
    } <= defined
    # A comment that reads like a definition is not one (no regex).
    assert not [d for d in symbols("x.py", b"# def fake():\n").definitions]


def test_other_languages_through_tree_sitter() -> None:
    cases = {
        "web/app.ts": (
            b"\n\nexport function render() {}\ninterface Props {}\nclass View { draw() {} }\n",
            "render",
            3,
        ),
        "srv/main.go": (b"package main\n\nfunc Serve() {}\ntype Handler struct{}\n", "Serve", 3),
        "src/lib.rs": (b"// a comment\nstruct Point;\nimpl Point { fn norm() {} }\n", "Point", 2),
        "App.java": (b"\npublic class App { void run() {} }\n", "App", 2),
        "lib/x.c": (b"#define MAX 3\n\nint *parse(int a) { return 0; }\n", "parse", 3),
        "ui/widget.js": (b"const LIMIT = 3;\n\nfunction mount() {}\n", "mount", 3),
    }
    for path, (source, name, line) in cases.items():
        found = symbols(path, source).definitions
        assert any(d.name == name and d.line == line and not d.parent for d in found), (path, found)
    methods = {
        (d.parent, d.short) for path in cases for d in symbols(path, cases[path][0]).definitions if d.parent
    }
    assert {("View", "draw"), ("Point", "norm"), ("App", "run")} <= methods


def test_question_terms_skip_the_words_every_question_has() -> None:
    assert question_terms("where is the group decorator defined?") == ("group",)
    assert question_terms("Which module imports hashlib?") == ("hashlib",)
    assert question_terms("Read all ten files: which is the longest?") == ()

    assert question_terms("what does `raise_for_status` return in HttpClient?")[:2] == (
        "raise_for_status",
        "HttpClient",
    )


def test_question_terms_skip_the_verbs_of_conversation() -> None:
    # A new user's first question on attrs was pre-searched for `want|understand`.
    assert question_terms("I want to understand how attrs builds a class.") == ("attrs", "builds")
    # `help` stays: it names things in code (click's `help=`).
    assert question_terms("I'd like to learn what the tokenizer is; help me understand it") == (
        "tokenizer",
        "help",
    )


def test_question_terms_leave_the_paths_it_names_to_the_model() -> None:
    # Searched for, its parts put a Grep before the Read the question asks for; the model repeated it.
    assert question_terms("Read wordfreq/counter.py and explain it.") == ()
    assert question_terms("What does @pkg/globals.py do?") == ()
    assert question_terms("Read mod00.py, mod01.py and tell me which is the longest") == ()
    assert question_terms("Read app/handlers.py: what does handler_3 return?") == ("handler_3",)
    assert question_terms("What does `os.path` do?") == ("os", "path")
    assert question_paths("Read mod00.py, @app/handlers.py and mod00.py.") == ("mod00.py", "app/handlers.py")
    # A numbered range names every file in it (bench/real_tasks.py's ten-file task asks it so).
    ten = question_paths("Read all ten files mod00.py … mod09.py, then tell me which file is the longest")
    assert ten == tuple(f"mod{n:02d}.py" for n in range(10))
    assert question_paths("t1.py to t3.py, and a.py") == ("t1.py", "t2.py", "t3.py", "a.py")
    assert question_paths("mod09.py ... mod00.py") == ("mod09.py", "mod00.py")  # no range: as written


def test_words_in_a_row_spell_the_identifiers_they_may_name() -> None:
    # itsdangerous: "the default key derivation of Signer" is `default_key_derivation`.
    assert compound_terms("What is the default key derivation of Signer?") == (
        "default_key_derivation",
        "default_key",
        "key_derivation",
    )
    # The grammar and the verbs of a question break a run; a path is no word of it.
    assert compound_terms("Where is the group decorator defined?") == ("group_decorator",)
    assert compound_terms("Which file is longer, signer.py or timed.py?") == ()
    assert compound_terms("Read the ten files and tell me which is the longest") == ()


def _map(navigator: Navigator, ws: Path, tools_chars: int) -> str:
    prompt = system_prompt(ws, lambda chars: navigator.repo_map(chars + tools_chars))
    (part,) = [p for p in prompt.parts if p.name == MAP_PART]
    return part.text


def test_the_map_replaces_the_folder_counts_of_a_large_workspace(tmp_path: Path) -> None:
    ws = big_workspace(tmp_path / "ws")
    prompt = system_prompt(ws, Navigator(ws, WINDOW).repo_map)
    names = [p.name for p in prompt.parts]
    assert names == ["system prompt", MAP_PART] and "workspace files" not in names
    # Without a map (the old behaviour) the same workspace is one folder and a count.
    assert [p.text for p in system_prompt(ws).parts][1] == "The workspace's files:\npkg/ (62 files)"


def test_a_small_workspace_keeps_its_list_of_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    pass\n")
    prompt = system_prompt(tmp_path, Navigator(tmp_path, WINDOW).repo_map)
    assert [p.name for p in prompt.parts] == ["system prompt", "workspace files"]


def test_the_most_used_definition_ranks_first_and_the_questions_name_before_it(tmp_path: Path) -> None:
    ws = big_workspace(tmp_path / "ws")
    navigator = Navigator(ws, 32_768)
    plain = navigator.repo_map(0).splitlines()
    assert plain[1].startswith("pkg/widgets.py: class Widget:1")  # used by 60 other files, last by name
    asked = navigator.repo_map(0, "where is the group decorator defined?").splitlines()
    assert asked[1].startswith("pkg/decorators.py: def group:263")
    assert "class Command:300" in asked[1]


def test_the_map_keeps_the_fixed_prompt_under_a_tenth_of_a_4096_window(tmp_path: Path) -> None:
    ws = big_workspace(tmp_path / "ws", files=400)
    registry = default_registry(ws)
    for constrained in (True, False):
        probe = Request("m", (), registry.specs_for(WINDOW), (), 0, constrained=constrained)
        tools_chars = definition_chars(probe)
        navigator = Navigator(ws, WINDOW)
        prompt = system_prompt(ws, lambda chars, n=navigator, t=tools_chars: n.repo_map(chars + t))
        request = Request("m", prompt.parts, registry.specs_for(WINDOW), (), 0, constrained=constrained)
        fixed = math.ceil((len(request.system_text) + definition_chars(request)) / 4)
        has_map = any(p.name == MAP_PART for p in prompt.parts)
        # Constrained steps leave room for a map; tool definitions alone take a tenth: no map then.
        assert has_map == constrained
        if has_map:
            assert fixed <= WINDOW // 10, fixed
    # A larger window gets a larger map.
    small = len(Navigator(ws, WINDOW).repo_map(700) or "")
    large = len(Navigator(ws, 32_768).repo_map(700) or "")
    assert 0 < small < large


def test_context_shows_the_map_as_its_own_section(tmp_path: Path) -> None:
    ws = big_workspace(tmp_path / "ws")
    budget, count = Budget(WINDOW, 512, "test"), Count(500, False, "estimate", 500)
    mapped = system_prompt(ws, Navigator(ws, WINDOW).repo_map)
    view = break_down(Request("m", mapped.parts, (), (), 512), budget, count, 1.0)
    assert {s.name: s.tokens for s in view.sections}[MAP_PART] > 50
    listed = system_prompt(ws)  # no map: no row for one
    view = break_down(Request("m", listed.parts, (), (), 512), budget, count, 1.0)
    assert MAP_PART not in {s.name for s in view.sections}


def test_the_index_is_cached_by_mtime_and_size(tmp_path: Path) -> None:
    ws = big_workspace(tmp_path / "ws", files=5)
    cache = cache_path(ws)
    cold = build_index(SymbolCache(ws, cache))
    assert cold.parsed == 7 and cache.is_file()
    warm = build_index(SymbolCache(ws, cache))  # the next start
    assert warm.parsed == 0 and held(warm) == held(cold)
    core = ws / "pkg" / "widgets.py"
    core.write_text("class Gadget:\n    pass\n")
    os.utime(core, ns=(1, 1))  # a different mtime even on a coarse clock
    changed = build_index(SymbolCache(ws, cache))
    assert changed.parsed == 1
    assert [d.name for d in changed.files["pkg/widgets.py"].symbols.definitions] == ["Gadget"]
    cache.write_text("{broken")  # a broken cache costs a rebuild, not the map
    assert build_index(SymbolCache(ws, cache)).parsed == 7


def held(index: SymbolIndex) -> dict[str, object]:
    """What the index shows of each file, but the signatures (the cache keeps none on disk)."""
    return {
        path: ([(*s[1:6], s.depth) for s in index.shown[path]], e.symbols.names, e.size)
        for path, e in index.files.items()
    }


def test_a_language_without_its_grammar_defines_nothing_but_its_names_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = module.Grammar("tree_sitter_not_installed", "language", {"function_declaration": FUNCTION})
    monkeypatch.setitem(module.GRAMMARS, ".go", missing)
    found = symbols("srv/main.go", b"package main\n\nfunc Serve() { hashlib() }\n")
    assert found.definitions == () and {"Serve", "hashlib"} <= set(found.names)


def test_a_listing_that_fails_keeps_what_was_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aforo.errors import ToolError
    from aforo.navigate import index as index_module

    ws = big_workspace(tmp_path / "ws", files=3)
    cache = cache_path(ws)
    before = build_index(SymbolCache(ws, cache))
    saved = cache.read_bytes()

    def fail(*_: object) -> set[str]:
        raise ToolError("rg was interrupted")

    monkeypatch.setattr(index_module, "list_files", fail)
    after = build_index(SymbolCache(ws, cache))
    assert held(after) == held(before) and cache.read_bytes() == saved


def test_a_word_and_an_identifier_meet_at_their_stems() -> None:
    assert {stem(w) for w in ("retry", "retries", "retried", "retrying")} == {"retry"}
    assert (stem("requests"), stem("classes"), stem("class"), stem("status")) == (
        "request",
        "class",
        "class",
        "status",
    )
    assert parts("MAX_RETRIES") == ["max", "retries"] and parts("HTTPClient") == ["http", "client"]


def test_the_tools_and_the_map_share_one_symbol_cache_that_keeps_no_source_on_disk(tmp_path: Path) -> None:
    ws = big_workspace(tmp_path / "ws", files=3)
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    (ws / "pkg" / "keys.py").write_text(f'GITHUB_TOKEN = "{token}"\n\n\ndef sign(value):\n    return value\n')
    symbols = SymbolCache(ws, cache_path(ws))
    navigator = Navigator(ws, WINDOW, symbols=symbols)
    index = navigator.index()
    parsed = symbols.files["pkg/keys.py"]
    assert index.files["pkg/keys.py"] is parsed
    found = default_registry(ws, symbols).execute("Find", {"name": "sign"})
    assert "pkg/keys.py:4: def sign(value):" in found.content
    assert symbols.files["pkg/keys.py"] is parsed  # Find parsed nothing again: the map's entry served
    # The next start reads the cache from disk: no signature, no source text, so no secret.
    assert token not in cache_path(ws).read_text() and "def sign" not in cache_path(ws).read_text()
    again = SymbolCache(ws, cache_path(ws))
    assert build_index(again).parsed == 0
    found = default_registry(ws, again).execute("Find", {"name": "GITHUB_TOKEN"})
    assert f'pkg/keys.py:1: GITHUB_TOKEN = "{token}"' in found.content  # parsed again for its signature
    navigator = Navigator(ws, WINDOW, symbols=again)
    navigator.index(refresh=True)
    assert token not in cache_path(ws).read_text()


def test_a_secret_in_a_file_that_does_not_parse_is_no_name_on_disk(tmp_path: Path) -> None:
    # Without a syntax tree, the names a file uses come from a scan of its text, strings and all.
    ws = tmp_path / "ws"
    ws.mkdir()
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    (ws / "keys.py").write_text(f'GITHUB_TOKEN = "{token}"\ndef broken(:\n    hashlib()\n')
    index = build_index(SymbolCache(ws, cache_path(ws)))
    assert {"GITHUB_TOKEN", "hashlib"} <= set(index.files["keys.py"].symbols.names)
    assert token not in cache_path(ws).read_text()
