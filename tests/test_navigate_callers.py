"""A caller is named by the innermost function that holds the call (issue 41): on the npm package debug,
"what calls selectColor?" got "called by setup", the call being in `createDebug`, a function nested in
`setup`. Nested functions, closures and the methods of nested classes, in every language of the map."""

from __future__ import annotations

from pathlib import Path

import pytest

from aforo.navigate.guide import Navigator
from aforo.navigate.repomap import render
from aforo.tools.syntax import outline

# debug's shape (src/common.js): the factory's inner function calls a function set on itself.
COMMON_JS = """function setup(env) {
  createDebug.selectColor = selectColor;

  function selectColor(namespace) {
    return namespace.length;
  }

  function createDebug(namespace) {
    const color = createDebug.selectColor(namespace);
    return color;
  }

  return createDebug;
}

module.exports = setup;
"""

CLOSURES_PY = '''"""Closures."""


def outer(value):
    def inner():
        if value:

            def innermost():
                return pick(value)

            return innermost()
        return pick(0)

    class Local:
        def method(self):
            return pick(1)

    return inner, Local


def pick(n):
    return n
'''


def presearch(root: Path, question: str) -> str:
    guided = Navigator(root, 8192, cache=False).guide(question, (), set())
    return guided.messages[1].tool_results[0].content


def test_a_call_in_a_function_nested_in_another_names_the_inner_one(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "common.js").write_text(COMMON_JS)
    content = presearch(tmp_path, "What calls selectColor?")
    assert content.startswith("`selectColor` is called by setup.createDebug (src/common.js:9).\n"), content
    # The nested definition is found too, named by what holds it (its lines show the call).
    assert "src/common.js:4 defines setup.selectColor" in content


def test_python_closures_and_methods_of_local_classes_are_the_callers(tmp_path: Path) -> None:
    (tmp_path / "closures.py").write_text(CLOSURES_PY)
    content = presearch(tmp_path, "What calls pick?")
    first = content.splitlines()[0]
    assert first == (
        "`pick` is called by outer.inner.innermost (closures.py:9), outer.inner (closures.py:12) and "
        "outer.Local.method (closures.py:16)."
    ), content


@pytest.mark.parametrize(
    ("path", "source", "nested"),
    [
        (
            "m.ts",
            "function a() {\n  function b() {}\n  class C {\n    d() {}\n  }\n}\n",
            ["a.b", "a.C", "a.C.d"],
        ),
        ("m.js", "function a() {\n  const b = () => 1;\n  const n = 2;\n}\n", ["a.b"]),
        ("m.rs", "fn a() {\n    fn b() {}\n}\n", ["a.b"]),
        ("A.java", "class A {\n  class B {\n    void c() {}\n  }\n}\n", ["A.B", "A.B.c"]),
        # Closures bound to a name: Go's `f := func`, Rust's `let f = ||`, a Java lambda.
        ("m.go", "package m\nfunc a() {\n\tb := func() {}\n\tb()\n}\n", ["a.b"]),
        ("m.rs", "fn a() {\n    let b = || 1;\n}\n", ["a.b"]),
        ("A.java", "class A {\n  void c() {\n    Runnable r = () -> {};\n  }\n}\n", ["A.c", "A.c.r"]),
    ],
)
def test_nested_definitions_in_every_language_of_the_map(path: str, source: str, nested: list[str]) -> None:
    sites = outline(source, path) or []
    assert [s.name for s in sites if s.depth > 0] == nested
    assert all(s.depth == s.name.count(".") for s in sites)


def test_a_function_assigned_at_the_top_level_holds_its_calls(tmp_path: Path) -> None:
    # express's and commander's shape: methods set on a prototype, functions on `exports`.
    source = (
        "function Router() {}\n\nRouter.prototype.handle = function (req) {\n  return dispatch(req);\n};\n"
    )
    source += "\nexports.route = (path) => dispatch(path);\n"
    (tmp_path / "router.js").write_text(source)
    content = presearch(tmp_path, "What calls dispatch?")
    assert content.startswith(
        "`dispatch` is called by Router.prototype.handle (router.js:4) and exports.route (router.js:7).\n"
    ), content


def test_the_map_shows_no_nested_function_as_a_method(tmp_path: Path) -> None:
    (tmp_path / "common.js").write_text(COMMON_JS)
    (tmp_path / "closures.py").write_text(CLOSURES_PY)
    index = Navigator(tmp_path, 8192, cache=False).index()
    lines = (render(index, (), 2000) or "").splitlines()[1:]
    assert lines == ["closures.py: def outer:4, def pick:21", "common.js: def setup:1"]
    # A nested function is still where its name is defined, and the map shows it when asked for.
    assert [(s.path, s.line) for s in index.defined("createDebug")] == [("common.js", 8)]
    assert "common.js: def setup.createDebug:8, def setup:1" in (render(index, ("createDebug",), 2000) or "")
