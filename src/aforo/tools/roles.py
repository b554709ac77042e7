"""What each line that names a word does with it, read from the file's syntax tree: defines, imports,
calls, assigns, declares or uses it in code, or only mentions it in a docstring, a comment or a string.

A small model copies what it is shown as fact, so a caller must be a call: read off the text of a line,
a function's doctest (`>>> derive_key(...)` in its own docstring) made it "called by itself", and a
`.pyi` overload or a TypeScript `.d.ts` declaration were listed as callers while the real call in the
JavaScript source was missed. Python through `ast`; the other languages of the map through their
tree-sitter grammars (`tools/syntax.py`). A type-only file (`.pyi`, `.d.ts`) declares what it names: its
code is labelled so, never a call or a definition.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator
from typing import Any

from aforo.tools.syntax import is_python, nodes, tree

DEFINES, IMPORTS, CALLS, ASSIGNS, DECLARES, USES = (
    "defines",
    "imports",
    "calls",
    "assigns",
    "declares",
    "uses",
)
TYPED = "declares (type declaration)"  # any code of a `.pyi` or `.d.ts` file
DOCSTRING, COMMENT, STRING = "docstring", "comment", "string"
TEXT = frozenset({DOCSTRING, COMMENT, STRING})  # the word is written there, not used
# When a line does several things with the word, the strongest is its role.
_RANK = {
    role: n for n, role in enumerate(reversed((DEFINES, IMPORTS, CALLS, ASSIGNS, DECLARES, TYPED, USES)))
} | {STRING: -3, COMMENT: -2, DOCSTRING: -1}
_DECLARATION_FILES = (".pyi", ".d.ts", ".d.mts", ".d.cts")

Roles = dict[int, str]  # line (1-based) -> what the code does with the word there


def is_declaration_file(path: str) -> bool:
    """A file of type declarations only (`.pyi` stubs, TypeScript's `.d.ts`): no code runs there."""
    return path.lower().endswith(_DECLARATION_FILES)


class FileRoles:
    """One file read once (its syntax tree walked once), then asked about any number of words."""

    def __init__(self, code: dict[str, Roles], texts: list[tuple[int, str, bytes]], typed: bool) -> None:
        self._code = code  # name -> its lines in code
        self._texts = texts  # (first line, DOCSTRING/COMMENT/STRING/IMPORTS/USES, text) to search for words
        self._typed = typed
        self._asked: dict[str, Roles] = {}

    def of(self, word: str) -> Roles:
        """What each line that names `word` does with it."""
        if word not in self._asked:
            self._asked[word] = self._of(word)
        return self._asked[word]

    def _of(self, word: str) -> Roles:
        found = dict(self._code.get(word, {}))
        pattern = re.compile(rb"\b" + re.escape(word.encode()) + rb"\b")
        for first, role, text in self._texts:
            if pattern.search(text):
                for offset, line in enumerate(text.split(b"\n")):
                    if pattern.search(line):
                        _put(found, first + offset, _text_role(line, role, pattern))
        if self._typed:
            return {line: role if role in TEXT else TYPED for line, role in found.items()}
        return found


def file_roles(data: bytes, path: str) -> FileRoles | None:
    """The roles of every name of the file at `path`; None when it has no syntax tree here (not code,
    its grammar missing, or it does not parse)."""
    found = _python(data) if is_python(path) else _tree_sitter(data, path)
    return None if found is None else FileRoles(*found, typed=is_declaration_file(path))


def roles(data: bytes, path: str, word: str) -> Roles | None:
    """What each line of the file at `path` that names `word` does with it (`file_roles(...).of`)."""
    found = file_roles(data, path)
    return None if found is None else found.of(word)


def _put(found: Roles, line: int, role: str) -> None:
    if line not in found or _RANK[role] > _RANK[found[line]]:
        found[line] = role


def _text_role(line: bytes, role: str, pattern: re.Pattern[bytes]) -> str:
    """A Python line outside any docstring or string (`_CODE`) is a comment after `#`, else code that
    `ast` named otherwise (a use); other roles are what their node is."""
    if role != _CODE:
        return role
    m = pattern.search(line)
    return COMMENT if m is not None and b"#" in line[: m.start()] else USES


_CODE = "code"  # a Python line that no docstring or string holds: a comment, or code `ast` did not name


# --- Python -----------------------------------------------------------------------------------------


def _python(data: bytes) -> tuple[dict[str, Roles], list[tuple[int, str, bytes]]] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape in the user's file is not ours to report
            module = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    code: dict[str, Roles] = {}
    every = list(ast.walk(module))
    called = {id(n.func) for n in every if isinstance(n, ast.Call)}
    declared = {id(n.target) for n in every if isinstance(n, ast.AnnAssign) and n.value is None}
    spans: dict[int, str] = {}  # line -> DOCSTRING / STRING
    for node in every:
        for name, line, role in _python_node(node, called, declared):
            _put(code.setdefault(name, {}), line, role)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if (doc := _docstring(node)) is not None:
                spans.update(dict.fromkeys(range(doc[0], doc[1] + 1), DOCSTRING))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                spans.setdefault(line, STRING)
    # Every line goes to the word search: what the tree named wins (`_put`), the rest is text.
    texts = [(n, spans.get(n, _CODE), text) for n, text in enumerate(data.split(b"\n"), 1)]
    return code, texts


def _python_node(node: ast.AST, called: set[int], declared: set[int]) -> Iterator[tuple[str, int, str]]:
    if isinstance(node, ast.Name | ast.Attribute):
        name = node.id if isinstance(node, ast.Name) else node.attr
        line = node.end_lineno or node.lineno  # an attribute's name ends it: `self.\n  derive_key`
        if id(node) in called:
            yield name, line, CALLS
        elif id(node) in declared:
            yield name, line, DECLARES
        else:
            yield name, line, ASSIGNS if isinstance(node.ctx, ast.Store) else USES
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name, node.lineno, DEFINES
    elif isinstance(node, ast.alias):
        for name in {*node.name.split("."), node.asname or ""} - {""}:
            yield name, node.lineno, IMPORTS
    elif isinstance(node, ast.ImportFrom):
        for name in (node.module or "").split("."):
            yield name, node.lineno, IMPORTS
    elif isinstance(node, ast.keyword | ast.arg) and node.arg:
        yield node.arg, node.lineno, USES
    elif isinstance(node, ast.Global | ast.Nonlocal):
        for name in node.names:
            yield name, node.lineno, USES


def _docstring(
    node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[int, int] | None:
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.lineno, first.end_lineno or first.lineno
    return None


# --- tree-sitter ------------------------------------------------------------------------------------

# The node types of the grammars in tools/syntax.py, by what they do with the identifier they hold.
_DEFINING = dict.fromkeys(
    (
        "function_declaration", "generator_function_declaration", "class_declaration", "method_definition",
        "abstract_class_declaration", "interface_declaration", "type_alias_declaration", "enum_declaration",
        "method_declaration", "type_spec", "function_item", "struct_item", "enum_item", "trait_item",
        "type_item", "constructor_declaration", "record_declaration", "function_declarator",
        "struct_specifier", "enum_specifier", "preproc_def", "preproc_function_def", "macro_definition",
    ),
    "name",
) | {"function_declarator": "declarator"}  # fmt: skip
# node type -> the field that names what it defines
_CALLING = {  # node type -> the field that names what it calls
    "call_expression": "function",
    "new_expression": "constructor",
    "method_invocation": "name",
    "object_creation_expression": "type",
    "macro_invocation": "macro",
}
_MEMBERS = {"member_expression": "property", "field_expression": "field", "selector_expression": "field"}
_MEMBERS |= {"scoped_identifier": "name"}
_IMPORTING = frozenset(
    {"import_statement", "import_declaration", "import_spec", "use_declaration", "preproc_include"}
)
_ASSIGNING = {"variable_declarator": "name", "assignment_expression": "left", "short_var_declaration": "left"}
_STRINGS = frozenset(
    {"string", "template_string", "string_literal", "interpreted_string_literal", "raw_string_literal"}
)
_IMPORT_DEPTH = 6  # `import {a as b} from "x"`: the identifier is a few nodes under the statement


def _tree_sitter(data: bytes, path: str) -> tuple[dict[str, Roles], list[tuple[int, str, bytes]]] | None:
    root = tree(data, path)
    if root is None:
        return None
    code: dict[str, Roles] = {}
    texts: list[tuple[int, str, bytes]] = []
    for node in nodes(root):
        kind = node.type
        if node.child_count == 0 and "identifier" in kind and node.text:
            name = node.text.decode("utf-8", "replace")
            _put(code.setdefault(name, {}), node.start_point[0] + 1, _ts_role(node))
        elif "comment" in kind or kind in _STRINGS:
            role = COMMENT if "comment" in kind else IMPORTS if _imported(node) else STRING
            texts.append((node.start_point[0] + 1, role, node.text or b""))
    return code, texts


def _ts_role(node: Any) -> str:
    parent = node.parent
    if parent is None:
        return USES
    kind = parent.type
    if _names(parent, _DEFINING.get(kind), node):
        return DEFINES
    if _names(parent, _CALLING.get(kind), node):
        return CALLS
    grand = parent.parent  # `a.b.run(1)`: the call's function is the member whose name is `run`
    member = grand is not None and _names(parent, _MEMBERS.get(kind), node)
    if member and _names(grand, _CALLING.get(grand.type), parent):
        return CALLS
    if _imported(node):
        return IMPORTS
    if _names(parent, _ASSIGNING.get(kind), node):
        return ASSIGNS
    return USES


def _names(parent: Any, field: str | None, node: Any) -> bool:
    """Whether `node` is `parent`'s child in `field` (a Go `a, b := ...` has an expression list there)."""
    if field is None:
        return False
    child = parent.child_by_field_name(field)
    return child is not None and (child == node or (child.type.endswith("_list") and node in child.children))


def _imported(node: Any) -> bool:
    """Inside an import statement, the module a `require("x")` call names, or a name a declaration
    takes from one (`const { Command } = require("./command")`)."""
    up = node
    for _ in range(_IMPORT_DEPTH):
        up = up.parent
        if up is None:
            return False
        if up.type in _IMPORTING:
            return True
        if up.type == "call_expression":
            return _requires(up)
        if up.type == "variable_declarator":
            value = up.child_by_field_name("value")
            return value is not None and value.type == "call_expression" and _requires(value)
    return False


def _requires(call: Any) -> bool:
    function = call.child_by_field_name("function")
    return function is not None and function.text == b"require"
