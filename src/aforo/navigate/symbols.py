"""What a source file defines and which names it uses: the facts the repository map and the pre-search
rank by.

Definitions come from a syntax tree, never from regexes: Python's own `ast`, other languages through
tree-sitter grammars (one wheel each, from PyPI: the parsers aider's map uses). A definition is a
top-level class, function or constant, or a method of a top-level class (`parent` names the class).
The names a file uses (identifiers, attribute names, imported modules) are what references are
counted from: a definition used by many other files matters more.

A file that does not parse, or whose language has no grammar installed, defines nothing here; its
names still count (a bare identifier scan), so `import hashlib` in a Rust-free Python file is found.
"""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from aforo.limits import MAP_NAMES

CLASS, FUNCTION, CONSTANT = "class", "def", "const"
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


class Definition(NamedTuple):
    """A tuple, not a dataclass: an index holds tens of thousands, made again from the cache at each start."""

    name: str
    kind: str  # CLASS, FUNCTION or CONSTANT
    line: int  # 1-based
    parent: str = ""  # the class a method belongs to; "" at the top level


@dataclass(frozen=True)
class FileSymbols:
    definitions: tuple[Definition, ...]
    names: tuple[str, ...]  # each name the file uses, once, at most MAP_NAMES of them


@dataclass(frozen=True)
class Grammar:
    """How one language's tree-sitter nodes define names."""

    module: str  # the grammar wheel's import name
    entry: str  # its function that returns the language
    kinds: dict[str, str]  # node type -> CLASS / FUNCTION / CONSTANT
    wrappers: frozenset[str] = frozenset()  # nodes whose children define (export, const blocks)
    members: frozenset[str] = frozenset()  # method nodes inside a class body


_JS_KINDS = {
    "function_declaration": FUNCTION,
    "generator_function_declaration": FUNCTION,
    "class_declaration": CLASS,
    "variable_declarator": CONSTANT,
}
_JS_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration"})
_TS_KINDS = _JS_KINDS | {
    "abstract_class_declaration": CLASS,
    "interface_declaration": CLASS,
    "type_alias_declaration": CLASS,
    "enum_declaration": CLASS,
}
_METHODS = frozenset({"method_definition", "method_declaration", "function_item", "constructor_declaration"})

GRAMMARS: dict[str, Grammar] = {
    ".js": Grammar("tree_sitter_javascript", "language", _JS_KINDS, _JS_WRAPPERS, _METHODS),
    ".ts": Grammar("tree_sitter_typescript", "language_typescript", _TS_KINDS, _JS_WRAPPERS, _METHODS),
    ".tsx": Grammar("tree_sitter_typescript", "language_tsx", _TS_KINDS, _JS_WRAPPERS, _METHODS),
    ".go": Grammar(
        "tree_sitter_go",
        "language",
        {
            "function_declaration": FUNCTION,
            "method_declaration": FUNCTION,
            "type_spec": CLASS,
            "const_spec": CONSTANT,
            "var_spec": CONSTANT,
        },
        frozenset({"type_declaration", "const_declaration", "var_declaration"}),
    ),
    ".rs": Grammar(
        "tree_sitter_rust",
        "language",
        {
            "function_item": FUNCTION,
            "struct_item": CLASS,
            "enum_item": CLASS,
            "trait_item": CLASS,
            "type_item": CLASS,
            "impl_item": CLASS,
            "const_item": CONSTANT,
            "static_item": CONSTANT,
            "macro_definition": FUNCTION,
        },
        members=_METHODS,
    ),
    ".java": Grammar(
        "tree_sitter_java",
        "language",
        {
            "class_declaration": CLASS,
            "interface_declaration": CLASS,
            "enum_declaration": CLASS,
            "record_declaration": CLASS,
        },
        members=_METHODS,
    ),
    ".c": Grammar(
        "tree_sitter_c",
        "language",
        {
            "function_definition": FUNCTION,
            "struct_specifier": CLASS,
            "enum_specifier": CLASS,
            "type_definition": CLASS,
            "preproc_def": CONSTANT,
            "preproc_function_def": FUNCTION,
        },
    ),
}
GRAMMARS[".mjs"] = GRAMMARS[".jsx"] = GRAMMARS[".js"]
GRAMMARS[".h"] = GRAMMARS[".c"]
SOURCE_SUFFIXES = frozenset({".py", *GRAMMARS})


def suffix(path: str) -> str:
    dot = path.rfind(".")
    return path[dot:].lower() if dot > path.rfind("/") else ""


def symbols(path: str, data: bytes) -> FileSymbols:
    """The definitions and used names of the file at `path` (its name picks the language)."""
    ext = suffix(path)
    found = _python(data) if ext == ".py" else _tree_sitter(GRAMMARS[ext], data) if ext in GRAMMARS else None
    if found is None:
        return FileSymbols((), _first_names(m.group().decode() for m in _IDENTIFIER.finditer(data)))
    return found


# --- Python -----------------------------------------------------------------------------------------


def _python(data: bytes) -> FileSymbols | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape in the user's file is not ours to report
            tree = ast.parse(data)
    # As in tools/outline.py: a NUL byte (3.11 before 3.11.4), nesting deeper than the parser's stack.
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: list[Definition] = []
    for node in tree.body:
        found.extend(_python_definitions(node))
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.append(Definition(member.name, FUNCTION, member.lineno, node.name))
    return FileSymbols(tuple(found), _first_names(_python_names(tree)))


def _python_definitions(node: ast.stmt) -> Iterator[Definition]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        yield Definition(node.name, FUNCTION, node.lineno)
    elif isinstance(node, ast.ClassDef):
        yield Definition(node.name, CLASS, node.lineno)
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            # Constants by convention; a module's `logger = ...` or `app = ...` would crowd the map.
            if isinstance(target, ast.Name) and target.id.isupper() and not target.id.startswith("__"):
                yield Definition(target.id, CONSTANT, node.lineno)


def _python_names(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield from node.name.split(".")
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from node.module.split(".")


# --- tree-sitter ------------------------------------------------------------------------------------


@cache
def _parser(module: str, entry: str) -> Any | None:
    """A parser for the grammar, or None when tree-sitter or the grammar's wheel is not installed."""
    try:
        from tree_sitter import Language, Parser

        language = getattr(importlib.import_module(module), entry)()
    except (ImportError, AttributeError):
        return None
    return Parser(Language(language))


def _tree_sitter(grammar: Grammar, data: bytes) -> FileSymbols | None:
    parser = _parser(grammar.module, grammar.entry)
    if parser is None:
        return None
    root = parser.parse(data).root_node
    found: list[Definition] = []
    for node in root.named_children:
        for top in _unwrap(grammar, node):
            name = _name(top)
            if not name:
                continue
            found.append(Definition(name, grammar.kinds[top.type], top.start_point[0] + 1))
            body = top.child_by_field_name("body")
            for member in body.named_children if body is not None else ():
                if member.type in grammar.members and (method := _name(member)):
                    found.append(Definition(method, FUNCTION, member.start_point[0] + 1, name))
    return FileSymbols(tuple(found), _first_names(_leaf_names(root)))


def _unwrap(grammar: Grammar, node: Any) -> Iterator[Any]:
    if node.type in grammar.kinds:
        yield node
    elif node.type in grammar.wrappers:
        for child in node.named_children:
            yield from _unwrap(grammar, child)


def _name(node: Any) -> str:
    """A definition's name: its `name` field, or (C) the identifier its declarator declares, or
    (Rust's impl) the type it implements."""
    for _ in range(8):  # declarators nest (pointer of function of ...), never deeply in real code
        child = node.child_by_field_name("name") or node.child_by_field_name("declarator")
        if child is None:
            child = node.child_by_field_name("type")
        if child is None:
            return ""
        if child.child_count == 0 or child.type.endswith("identifier"):
            text: bytes = child.text or b""
            return text.decode("utf-8", "replace")
        node = child
    return ""


def _leaf_names(root: Any) -> Iterator[str]:
    cursor = root.walk()
    while True:
        node = cursor.node
        if node.child_count == 0 and node.type.endswith("identifier") and node.text:
            yield node.text.decode("utf-8", "replace")
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return


def _first_names(names: Iterator[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name, None)
        if len(seen) >= MAP_NAMES.value:
            break
    return tuple(seen)
