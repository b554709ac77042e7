"""Which nodes of each language's tree-sitter grammar define what: the table `tools/syntax` reads
definitions by, one `Grammar` per file suffix (JavaScript, TypeScript, Go, Rust, Java, C; Python is
read by its own `ast`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLASS, FUNCTION, CONSTANT = "class", "def", "const"


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
# An expression statement: `exports.run = function () {...}` defines `exports.run` (`bound`).
_JS_WRAPPERS = frozenset(
    {"export_statement", "lexical_declaration", "variable_declaration", "expression_statement"}
)
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

# A name bound to a function written in place defines that function (`const f = () => ...`, Go's `f :=
# func() {...}`, `Foo.prototype.run = function () {...}`): node type -> (its name's field, its value's).
_BINDINGS = {
    "variable_declarator": ("name", "value"),  # JavaScript, TypeScript, Java
    "assignment_expression": ("left", "right"),  # JavaScript, TypeScript
    "short_var_declaration": ("left", "right"),  # Go
    "var_spec": ("name", "value"),  # Go
    "let_declaration": ("pattern", "value"),  # Rust
}
_FUNCTION_VALUES = frozenset(
    {
        "arrow_function",
        "function_expression",
        "function",
        "generator_function",
        "func_literal",
        "closure_expression",
        "lambda_expression",
    }
)


def bound(node: Any) -> str:
    """The name `node` binds to a function written in place (`Foo.prototype.run`), or ""."""
    fields = _BINDINGS.get(node.type)
    if fields is None:
        return ""
    name, value = (_first(node.child_by_field_name(field)) for field in fields)
    if name is None or value is None or value.type not in _FUNCTION_VALUES:
        return ""
    text = "".join((name.text or b"").decode("utf-8", "replace").split())
    return text.removeprefix("this.")


def _first(node: Any) -> Any:
    """A Go expression list's first expression (`f := func() {}`); any other node itself."""
    if node is not None and node.type.endswith("_list"):
        return node.named_children[0] if node.named_children else None
    return node
