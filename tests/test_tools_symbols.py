"""Finding one's way by name: the symbol index, Find, Read's `path:N-M` and `path#Name`, a long Python file
shown as its outline plus what the question names, and a name given to Read as a path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from aforo import reply_format
from aforo.cli.mentions import attach
from aforo.context.stages import Cap
from aforo.limits import SYMBOL_FILES
from aforo.protocols import ToolContext
from aforo.tools import Find, Read, read_tool, symbols
from aforo.tools.registry import default_registry
from aforo.tools.symbol_cache import SymbolCache
from aforo.tools.symbols import definitions, file_sites, mentions
from aforo.tools.syntax import outline

SHAPES = '''import hashlib

RATE = 3


class Shape:
    """A shape."""

    sides = 0

    def area(self) -> float:
        return 0.0


@staticmethod
def group(name=None,
          **attrs):
    """Make a group."""
    return Shape()
'''


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "shapes.py").write_text(SHAPES)
    (root / "pkg" / "use.py").write_text("from pkg.shapes import group\n\nx = group()\n")
    (root / "notes.md").write_text("We call group() twice.\n")
    return root


def ctx(ws: Path, max_chars: int | None = None, question: str = "") -> ToolContext:
    return ToolContext(ws, max_chars=max_chars, question=question)


def read(ws: Path, path: str, **kw: object) -> str:
    return Read().run({"file_path": path}, ctx(ws, **kw)).content  # type: ignore[arg-type]


def test_an_outline_has_the_top_level_and_the_classes_with_lines_and_signatures() -> None:
    sites = outline(SHAPES, "shapes.py")
    assert sites is not None
    got = [(s.name, s.kind, s.line, s.start, s.end, s.depth) for s in sites]
    assert got == [
        ("RATE", "const", 3, 3, 3, 0),
        ("Shape", "class", 6, 6, 12, 0),
        ("Shape.sides", "const", 9, 9, 9, 1),
        ("Shape.area", "def", 11, 11, 12, 1),
        # The decorator starts the definition; the `def` line is the one cited.
        ("group", "def", 16, 15, 19, 0),
    ]
    # A signature over two lines is joined into one.
    assert sites[-1].cite() == "shapes.py:16: def group(name=None, **attrs):"
    assert outline("def (:\n") is None


def test_definitions_by_name_and_by_qualified_name(ws: Path) -> None:
    assert [s.cite() for s in definitions(SymbolCache(ws), "group", ctx(ws))] == [
        "pkg/shapes.py:16: def group(name=None, **attrs):"
    ]
    assert [(s.path, s.line) for s in definitions(SymbolCache(ws), "Shape.area", ctx(ws))] == [
        ("pkg/shapes.py", 11)
    ]
    assert [(s.path, s.line) for s in definitions(SymbolCache(ws), "area", ctx(ws))] == [
        ("pkg/shapes.py", 11)
    ]
    assert definitions(SymbolCache(ws), "Other.area", ctx(ws)) == []
    assert definitions(SymbolCache(ws), "not a name", ctx(ws)) == []


def test_mentions_are_whole_words_in_any_text_file_in_path_order(ws: Path) -> None:
    (ws / "pkg" / "other.py").write_text("grouping = 1\n")
    used = mentions(ws, "group", ctx(ws), limit=2)
    found, total = used.items, used.total
    assert total == 5 and used.exact  # shapes.py: the def and the docstring; use.py: two; notes.md: one
    cited = ["notes.md:1: We call group() twice.", "pkg/shapes.py:16: def group(name=None,"]
    assert [m.cite() for m in found] == cited


def test_a_changed_file_is_parsed_again(ws: Path) -> None:
    path, cache = ws / "pkg" / "use.py", SymbolCache(ws)
    assert [s.name for s in file_sites(cache, path)] == ["x"]
    path.write_text("def y():\n    pass\n\n\ndef zz():\n    pass\n")
    assert [s.name for s in file_sites(cache, path)] == ["y", "zz"]


def test_find_gives_definitions_with_signatures_then_uses(ws: Path) -> None:
    out = Find().run({"name": "group"}, ctx(ws))
    assert out.content.splitlines() == [
        "group is defined at:",
        "pkg/shapes.py:16: def group(name=None, **attrs):",
        "group is used in 4 lines:",
        "notes.md:1: We call group() twice.",
        'pkg/shapes.py:18: """Make a group."""',
        "pkg/use.py:1: from pkg.shapes import group",
        "pkg/use.py:3: x = group()",
    ]
    assert out.facts == "Find group: defined at pkg/shapes.py:16; used in 4 lines"


def test_find_of_a_module_name_finds_its_imports(ws: Path) -> None:
    out = Find().run({"name": "hashlib"}, ctx(ws)).content
    assert out.splitlines() == [
        "No definition of hashlib found.",
        "hashlib is used in 1 line:",
        "pkg/shapes.py:1: import hashlib",
    ]
    assert "neither defined nor used" in Find().run({"name": "nowhere"}, ctx(ws)).content


def test_find_is_a_default_tool_the_registry_runs_and_a_step_batches(ws: Path) -> None:
    registry = default_registry(ws)
    assert "Find" in registry.names and Find.spec.batch
    out = registry.execute("Find", {"name": "Shape"})
    assert not out.is_error and "pkg/shapes.py:6: class Shape:" in out.content
    bad = registry.execute("Find", {"name": "a b"})
    assert bad.is_error and "Find takes one identifier" in bad.content


def test_read_path_colon_lines_shows_those_lines(ws: Path) -> None:
    assert read(ws, "pkg/shapes.py:11-12").splitlines() == [
        "11\t    def area(self) -> float:",
        "        return 0.0",
        "(showing lines 11-12 of 19. Use offset=13 to read more.)",
    ]
    # Swapped ends are the same range.
    assert read(ws, "pkg/shapes.py:12-11") == read(ws, "pkg/shapes.py:11-12")


def test_read_path_colon_one_line_shows_it_with_the_lines_around(ws: Path) -> None:
    out = read(ws, "pkg/shapes.py:16")
    assert out.startswith("11\t    def area(self) -> float:")  # five lines before
    assert "def group(name=None," in out and "(showing lines 11-19 of 19.)" in out


def test_explicit_offset_and_limit_win_over_the_range_in_the_path(ws: Path) -> None:
    out = Read().run({"file_path": "pkg/shapes.py:11-12", "offset": 3, "limit": 1}, ctx(ws)).content
    assert out.splitlines()[0] == "3\tRATE = 3" and "showing lines 3-3" in out


def test_a_file_whose_name_holds_a_colon_or_hash_is_read_as_named(ws: Path) -> None:
    (ws / "odd:2").write_text("colon\n")
    (ws / "odd#x").write_text("hash\n")
    assert read(ws, "odd:2") == "1\tcolon"
    assert read(ws, "odd#x") == "1\thash"


def test_read_path_hash_name_shows_one_definition_with_its_decorators(ws: Path) -> None:
    assert read(ws, "pkg/shapes.py#group").splitlines()[:2] == ["15\t@staticmethod", "def group(name=None,"]
    assert "showing lines 15-19 of 19" in read(ws, "pkg/shapes.py#group")
    assert read(ws, "pkg/shapes.py#Shape.area").splitlines()[0] == "11\t    def area(self) -> float:"


def test_read_hash_of_a_name_the_file_lacks_lists_what_it_defines(ws: Path) -> None:
    out = default_registry(ws).execute("Read", {"file_path": "pkg/shapes.py#nope"})
    assert out.is_error
    assert "pkg/shapes.py defines no 'nope'; it defines RATE, Shape, group. Find nope looks" in out.content
    md = default_registry(ws).execute("Read", {"file_path": "notes.md#group"})
    assert md.is_error and "Grep finds a name in other files" in md.content


def test_a_module_name_read_as_a_file_is_answered_with_where_it_is_used(ws: Path) -> None:
    out = default_registry(ws).execute("Read", {"file_path": "hashlib.py"})
    assert out.is_error
    said = "hashlib.py does not exist. As a name: the name hashlib is used at pkg/shapes.py:1: import hashlib"
    assert said in out.content


def test_a_symbol_read_as_a_file_is_answered_with_its_definition(ws: Path) -> None:
    out = default_registry(ws).execute("Read", {"file_path": "group"}).content
    assert "the name group is defined at pkg/shapes.py:16: def group(name=None, **attrs):" in out
    assert "it is used at notes.md:1: We call group() twice." in out


def long_module(functions: int) -> str:
    parts = ['"""A long module."""\n']
    for i in range(functions):
        body = "".join(f"    x += {n}\n" for n in range(8))
        parts.append(f"\n\ndef helper_{i:03d}(x):\n{body}    return x\n")
    parts.append('\n\ndef group(name=None):\n    """The one asked for."""\n    return "GROUP-BODY"\n')
    return "".join(parts)


def test_a_long_python_file_shows_its_outline_and_the_definition_the_question_names(ws: Path) -> None:
    source = long_module(200)
    (ws / "big.py").write_text(source)
    line = source.splitlines().index("def group(name=None):") + 1
    out = read(ws, "big.py", max_chars=3000, question="Where is the group decorator defined?")
    # The head alone (the old behaviour) never reaches the definition at the end of the file.
    assert f"{line}\tdef group(name=None):" in out and '"GROUP-BODY"' in out
    assert "2\tdef helper_000(x):" not in out  # helpers are listed by their def line, not read
    assert "4\tdef helper_000(x):" in out
    assert f"big.py: {len(source.splitlines())} lines, more than one Read shows" in out
    assert "Read big.py:N-M" in out and "more definitions not shown" in out
    assert len(out) <= 3000


def test_a_long_python_file_without_question_names_is_its_outline(ws: Path) -> None:
    (ws / "big.py").write_text(long_module(20))
    result = Read().run({"file_path": "big.py"}, ctx(ws, max_chars=1500))
    assert "def helper_019(x):" in result.content and "GROUP-BODY" not in result.content
    assert result.facts.startswith("big.py: 246 lines; 21 functions: helper_000, helper_001")


def test_a_long_files_outline_lists_no_function_nested_in_a_function(ws: Path) -> None:
    wrapped = "\n\ndef traced(f):\n    def wrapper(*a):\n        return f(*a)\n\n    return wrapper\n"
    (ws / "big.py").write_text(
        long_module(20) + wrapped + "\n\nclass Box:\n    def open(self):\n        pass\n"
    )
    result = Read().run({"file_path": "big.py"}, ctx(ws, max_chars=1500))
    assert "def traced(f):" in result.content and "    def open(self):" in result.content
    assert "def wrapper" not in result.content


def test_a_long_file_read_with_a_range_is_not_outlined(ws: Path) -> None:
    (ws / "big.py").write_text(long_module(60))
    out = read(ws, "big.py:1-3", max_chars=3000, question="group")
    assert out.splitlines()[0] == '1\t"""A long module."""' and "more than one Read shows" not in out


def test_reads_give_their_facts(ws: Path) -> None:
    whole = Read().run({"file_path": "pkg/shapes.py"}, ctx(ws))
    assert whole.facts == "pkg/shapes.py: 19 lines; 1 function: group; 1 class: Shape"
    part = Read().run({"file_path": "pkg/shapes.py:11-12"}, ctx(ws))
    assert part.facts == "pkg/shapes.py: lines 11-12 of 19"


def test_a_long_python_file_that_defines_nothing_is_shown_from_its_head(ws: Path) -> None:
    (ws / "data.py").write_text("".join(f"x_{n} = {n}\n" for n in range(500)))
    out = read(ws, "data.py", max_chars=1000, question="what is x_1?")
    assert out.startswith("1\tx_0 = 0\n") and "more than one Read shows" not in out


def test_a_constrained_step_batches_find_like_read(ws: Path) -> None:
    specs = default_registry(ws).specs
    assert reply_format.parse('{"find": ["group", "Shape"]}', specs) == reply_format.Step(
        calls=(("Find", {"name": "group"}), ("Find", {"name": "Shape"}))
    )


def test_the_long_file_view_never_passes_the_cap(ws: Path) -> None:
    # Past the cap, the context stage would cut the view in its middle.
    (ws / "big.py").write_text(long_module(100))
    for cap in (300, 700, 1500, 3000, 6000):
        for question in ("", "Where is group defined?", "what does helper_007 do with `x_total`?"):
            assert len(read(ws, "big.py", max_chars=cap, question=question)) <= cap, (cap, question)


def test_the_definition_the_question_names_most_precisely_comes_first(ws: Path) -> None:
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(40))
    docs = "Docs. " * 200
    source = f'class Console:\n    """{docs}"""\n\n{methods}    def print(self):\n        return "PRINTED"\n'
    (ws / "console.py").write_text(source)
    out = read(ws, "console.py", max_chars=1500, question="Where is the print method of Console defined?")
    assert "(lines 124-125: Console.print)" in out and '"PRINTED"' in out
    assert out.index("Console.print)") < out.index("(lines 1-40: Console)")


def test_a_python_file_not_much_longer_than_the_cap_is_shown_from_its_head(ws: Path) -> None:
    # The cut of the context stage keeps its head and tail, more of it than an outline would show.
    source = long_module(20)
    (ws / "big.py").write_text(source)
    cap = int(len(source) / read_tool.OUTLINE_PAST) + 10
    head = read(ws, "big.py", max_chars=cap)
    assert '1\t"""A long module."""' in head and "more than one Read shows" not in head
    assert "more than one Read shows" in read(ws, "big.py", max_chars=cap - 20)


def test_a_file_named_without_its_directory_is_read_when_only_one_file_has_that_name(ws: Path) -> None:
    out = read(ws, "shapes.py:11-12")
    assert out.splitlines()[:2] == ["(shapes.py is pkg/shapes.py)", "11\t    def area(self) -> float:"]
    assert read(ws, "shapes.py#group").startswith("(shapes.py is pkg/shapes.py)\n15\t@staticmethod")
    whole = Read().run({"file_path": "use.py"}, ctx(ws))
    assert whole.content.startswith("(use.py is pkg/use.py)\n1\tfrom pkg.shapes")
    assert whole.facts.startswith("pkg/use.py: 3 lines")
    # Two files of that name: no guess, the error names both.
    (ws / "other").mkdir()
    (ws / "other" / "use.py").write_text("y = 2\n")
    out = default_registry(ws).execute("Read", {"file_path": "use.py"})
    assert out.is_error and "other/use.py" in out.content and "pkg/use.py" in out.content


def test_find_says_how_many_files_it_could_not_parse(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(3):
        (ws / f"def{i}.py").write_text(f"def group():\n    return {i}\n")
    monkeypatch.setattr(symbols, "SYMBOL_FILES", dataclasses.replace(SYMBOL_FILES, value=2))
    out = Find().run({"name": "group"}, ctx(ws)).content
    # Files in path order: def0.py and def1.py parsed, def2.py and pkg/shapes.py not.
    defined = out.split(" is used in ")[0]
    assert "def0.py:1: def group():" in defined and "def1.py:1" in defined and "def2.py:1" not in defined
    assert (
        "(2 more files that may define it were not parsed: the limits symbol_files and symbol_file_bytes)"
        in out
    )


def test_uses_past_a_hundred_times_the_shown_are_counted_as_at_least(ws: Path) -> None:
    (ws / "many.txt").write_text("group\n" * 300_000)  # more than a pipe holds: rg is stopped
    used = mentions(ws, "group", ctx(ws), limit=2)
    assert not used.exact and used.total > 200
    assert "group is used in at least " in Find().run({"name": "group"}, ctx(ws)).content


@pytest.mark.parametrize("spelled", ["Shape.area", "area()", "`area`", "area.py:3"])
def test_a_qualified_or_called_name_read_as_a_path_is_answered_with_its_definition(
    ws: Path, spelled: str
) -> None:
    out = default_registry(ws).execute("Read", {"file_path": spelled})
    assert out.is_error and "is defined at pkg/shapes.py:11: def area(self) -> float:" in out.content


def test_a_long_file_mentioned_with_at_shows_what_the_prompt_names(ws: Path) -> None:
    (ws / "big.py").write_text(long_module(200))
    cap = Cap(500)  # about 2 000 characters: the file is ten times that
    attached = attach("what does group in @big.py return?", default_registry(ws), cap, (), lambda event: None)
    result = attached.messages[-1].tool_results[0].content
    assert "more than one Read shows" in result and '"GROUP-BODY"' in result


def test_a_long_text_file_shows_its_head_and_the_lines_the_question_names(ws: Path) -> None:
    body = [f"const filler{n} = {n};" for n in range(600)]
    body[450] = "const retryDelay = 250; // RETRY-LINE"
    (ws / "client.js").write_text("\n".join(body) + "\n")
    out = read(ws, "client.js", max_chars=1500, question="What is the default retryDelay?")
    assert out.startswith("(client.js: 600 lines, more than one Read shows. Its first lines")
    assert "1\tconst filler0 = 0;" in out and "451\tconst retryDelay = 250; // RETRY-LINE" in out
    assert "(lines 448-454: retryDelay is used)" in out and len(out) <= 1500
    # No word only code has: the head, as before.
    plain = read(ws, "client.js", max_chars=1500, question="What does this file do?")
    assert plain.startswith("1\tconst filler0 = 0;") and "RETRY-LINE" not in plain


@pytest.mark.parametrize(
    "question", ["Which TODO is in client.js?", "Is the JSON valid?", "What does it do?"]
)
def test_a_long_text_file_keeps_its_head_for_a_question_in_prose(ws: Path, question: str) -> None:
    body = [f"line {n} of prose" for n in range(600)]
    body[450] = "TODO: JSON it"
    (ws / "notes.txt").write_text("\n".join(body) + "\n")
    assert read(ws, "notes.txt", max_chars=1500, question=question).startswith("1\tline 0 of prose")


GO = """package srv

import "io"

// Serve writes the greeting.
func Serve(w io.Writer,
\tname string) error {
\t_, err := w.Write([]byte("GO-BODY " + name))
\treturn err
}

type Server struct{}

func (s *Server) Start() error {
\treturn Serve(nil, "x")
}
"""

TS = """import { Base } from "./base";

export class View extends Base {
  draw(): string {
    return "TS-BODY";
  }
}

const view = new View();
"""


@pytest.fixture
def polyglot(tmp_path: Path) -> Path:
    root = tmp_path / "poly"
    (root / "srv").mkdir(parents=True)
    (root / "web").mkdir()
    (root / "srv" / "serve.go").write_text(GO)
    (root / "web" / "view.ts").write_text(TS)
    return root


def test_find_gives_the_definitions_of_other_languages_from_their_syntax_trees(polyglot: Path) -> None:
    serve = Find().run({"name": "Serve"}, ctx(polyglot))
    assert serve.content.splitlines()[:2] == [
        "Serve is defined at:",
        "srv/serve.go:6: func Serve(w io.Writer, name string) error",  # the header, to its body
    ]
    assert serve.facts.startswith("Find Serve: defined at srv/serve.go:6;")
    view = Find().run({"name": "View"}, ctx(polyglot)).content
    assert view.splitlines()[:2] == ["View is defined at:", "web/view.ts:3: export class View extends Base"]
    assert "web/view.ts:4: draw(): string" in Find().run({"name": "View.draw"}, ctx(polyglot)).content
    assert (
        "srv/serve.go:14: func (s *Server) Start() error"
        in Find().run({"name": "Start"}, ctx(polyglot)).content
    )


def test_read_hash_name_reads_a_definition_of_go_and_typescript(polyglot: Path) -> None:
    go = read(polyglot, "srv/serve.go#Serve").splitlines()
    assert (
        go[0] == "6\tfunc Serve(w io.Writer,"
        and go[-1] == "(showing lines 6-10 of 16. Use offset=11 to read more.)"
    )
    assert "GO-BODY" in "\n".join(go)
    ts = read(polyglot, "web/view.ts#View.draw").splitlines()
    assert ts == [
        "4\t  draw(): string {",
        '    return "TS-BODY";',
        "  }",
        "(showing lines 4-6 of 9. Use offset=7 to read more.)",
    ]
    out = default_registry(polyglot).execute("Read", {"file_path": "srv/serve.go#nope"})
    assert out.is_error and "srv/serve.go defines no 'nope'; it defines Serve, Server, Start." in out.content


def test_the_tools_and_the_map_read_one_syntax_tree(polyglot: Path) -> None:
    from aforo.tools.symbol_cache import symbols

    for path in ("srv/serve.go", "web/view.ts", "pkg/shapes.py"):
        source = SHAPES if path.endswith(".py") else (polyglot / path).read_text()
        sites = {(s.short, s.line) for s in outline(source, path) or ()}
        mapped = {(d.short, d.line) for d in symbols(path, source.encode()).definitions}
        # The map shows a subset (no nested or lower-case Python constants), at the same lines.
        assert mapped and mapped <= sites, path


@pytest.mark.parametrize(
    ("path", "source", "name", "cited"),
    [
        ("App.java", "class App {\n  void run(int x) {}\n}\n", "run", "App.java:2: void run(int x)"),
        ("x.c", "#define MAX 3\n", "MAX", "x.c:1: #define MAX 3"),
        ("x.c", "static int *\nparse(int a)\n{\n}\n", "parse", "x.c:1: static int * parse(int a)"),
        ("x.c", "typedef struct {\n  int x;\n} Point;\n", "Point", "x.c:1: typedef struct {"),
        ("lib.rs", "impl Display for Dot {\n  fn fmt(&self) {}\n}\n", "fmt", "lib.rs:2: fn fmt(&self)"),
        ("lib.rs", "macro_rules! mac { () => {} }\n", "mac", "lib.rs:1: macro_rules! mac { () => {} }"),
        ("w.js", "class Widget {\n  async paint(x) {\n  }\n}\n", "paint", "w.js:2: async paint(x)"),
        ("w.js", "export const LIMIT = 3;\n", "LIMIT", "w.js:1: export const LIMIT = 3;"),
        ("b.go", "package p\n\nconst (\n\tMax = 3\n)\n", "Max", "b.go:4: Max = 3"),
        ("b.go", "package p\n\ntype (\n\tHandler struct{}\n)\n", "Handler", "b.go:4: Handler struct{}"),
    ],
)
def test_find_looks_in_the_files_of_each_language_that_may_define_the_name(
    tmp_path: Path, path: str, source: str, name: str, cited: str
) -> None:
    # The ripgrep pass picks the files to parse by a line that may define the name: each of these must pass.
    (tmp_path / path).write_text(source)
    assert Find().run({"name": name}, ctx(tmp_path)).content.splitlines()[:2] == [
        f"{name} is defined at:",
        cited,
    ]


def test_the_tools_never_import_navigate() -> None:
    # navigate sits above tools (it reads tools/syntax): an import back would make a circle.
    import ast as syntax_tree

    tools = Path(symbols.__file__).parent
    for module in tools.glob("*.py"):
        for node in syntax_tree.walk(syntax_tree.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, syntax_tree.Import) else []
            if isinstance(node, syntax_tree.ImportFrom):
                names = [node.module or ""]
            assert not any(n.startswith("aforo.navigate") for n in names), module


def test_a_go_name_read_as_a_file_is_answered_with_its_definition(polyglot: Path) -> None:
    out = default_registry(polyglot).execute("Read", {"file_path": "Serve"})
    assert out.is_error
    said = "the name Serve is defined at srv/serve.go:6: func Serve(w io.Writer, name string) error"
    assert said in out.content
