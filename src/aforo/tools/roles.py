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


def roles(data: bytes, path: str, word: str) -> Roles | None:
    """What each line of the file at `path` that names `word` does with it; None when the file has no
    syntax tree here (not code, its grammar missing, or it does not parse)."""
    found = _python(data, word) if is_python(path) else _tree_sitter(data, path, word)
    if found is None or not is_declaration_file(path):
        return found
    return {line: role if role in TEXT else TYPED for line, role in found.items()}


def _put(found: Roles, line: int, role: str) -> None:
    if line not in found or _RANK[role] > _RANK[found[line]]:
        found[line] = role


# --- Python -----------------------------------------------------------------------------------------


def _python(data: bytes, word: str) -> Roles | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape in the user's file is not ours to report
            module = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: Roles = {}
    called = {id(n.func) for n in ast.walk(module) if isinstance(n, ast.Call)}
    declared = {id(n.target) for n in ast.walk(module) if isinstance(n, ast.AnnAssign) and n.value is None}
    docstrings: list[tuple[int, int]] = []
    strings: list[tuple[int, int]] = []
    for node in ast.walk(module):
        for line, role in _python_node(node, word, called, declared):
            _put(found, line, role)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if (doc := _docstring(node)) is not None:
                docstrings.append(doc)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append((node.lineno, node.end_lineno or node.lineno))
    _text_lines(found, data, word, docstrings, strings)
    return found


def _python_node(node: ast.AST, word: str, called: set[int], declared: set[int]) -> Iterator[tuple[int, str]]:
    if isinstance(node, ast.Name | ast.Attribute):
        if (node.id if isinstance(node, ast.Name) else node.attr) != word:
            return
        line = node.end_lineno or node.lineno  # an attribute's name ends it: `self.\n  derive_key`
        if id(node) in called:
            yield line, CALLS
        elif id(node) in declared:
            yield line, DECLARES
        else:
            yield line, ASSIGNS if isinstance(node.ctx, ast.Store) else USES
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == word:
        yield node.lineno, DEFINES
    elif (isinstance(node, ast.alias) and (word in node.name.split(".") or node.asname == word)) or (
        isinstance(node, ast.ImportFrom) and word in (node.module or "").split(".")
    ):
        yield node.lineno, IMPORTS
    elif (isinstance(node, ast.keyword | ast.arg) and node.arg == word) or (
        isinstance(node, ast.Global | ast.Nonlocal) and word in node.names
    ):
        yield node.lineno, USES


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


def _text_lines(
    found: Roles, data: bytes, word: str, docstrings: list[tuple[int, int]], strings: list[tuple[int, int]]
) -> None:
    """The lines that name `word` with no code doing anything with it: in a docstring, a string, or
    (what `ast` drops) a comment; anything else is code `ast` names otherwise (a use)."""
    pattern = re.compile(rb"\b" + re.escape(word.encode()) + rb"\b")
    for number, text in enumerate(data.splitlines(), 1):
        if number in found or not (m := pattern.search(text)):
            continue
        if any(a <= number <= b for a, b in docstrings):
            found[number] = DOCSTRING
        elif any(a <= number <= b for a, b in strings):
            found[number] = STRING
        elif b"#" in text[: m.start()]:
            found[number] = COMMENT
        else:
            found[number] = USES


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


def _tree_sitter(data: bytes, path: str, word: str) -> Roles | None:
    root = tree(data, path)
    if root is None:
        return None
    found: Roles = {}
    name = word.encode()
    pattern = re.compile(rb"\b" + re.escape(name) + rb"\b")
    for node in nodes(root):
        kind = node.type
        if node.child_count == 0 and "identifier" in kind and node.text == name:
            _put(found, node.start_point[0] + 1, _ts_role(node))
        elif ("comment" in kind or kind in _STRINGS) and pattern.search(node.text or b""):
            role = COMMENT if "comment" in kind else IMPORTS if _imported(node) else STRING
            first = node.start_point[0]
            for offset, text in enumerate((node.text or b"").splitlines()):
                if pattern.search(text):
                    _put(found, first + offset + 1, role)
    return found


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
