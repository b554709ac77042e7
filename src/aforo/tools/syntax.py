"""What a source file defines, from its syntax tree: the one place that knows how, for every language.

Python through its own `ast`; JavaScript, TypeScript, Go, Rust, Java and C through tree-sitter grammars
(one wheel each, from PyPI: the parsers aider's map uses), never regexes. A definition is a `Site`:
a class, function or constant with its qualified name, its lines and its signature. Python's are its
top level and its classes' bodies, at any depth; another language's are its top level and the methods
of its top-level types. The tools (Find, Read's outline, `path#Name` and long-file view) and the
repository map (navigate/, which also counts the names a file uses) read them from here.
"""

from __future__ import annotations

import ast
import importlib
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from aforo.tools.grammars import CLASS, CONSTANT, FUNCTION, GRAMMARS, Grammar, bound
from aforo.tools.names import show

PYTHON_SUFFIXES = (".py", ".pyi")
_SIGNATURE_CHARS = 160


class Site(NamedTuple):
    """One definition, the one type the tools, the symbol index, the map and the pre-search share (as
    aider's one `Tag`): `name` is qualified within its file (`Group.command`), `line` its `def`/`class`
    line (decorators start at `start`), `end` its last line. A tuple, not a dataclass: an index holds
    tens of thousands, made again from its cache at each start (a frozen dataclass took twice as long)."""

    path: str
    name: str
    kind: str  # CLASS, FUNCTION or CONSTANT
    line: int
    start: int
    end: int
    signature: str
    depth: int  # 0 at the top level, 1 in a class, ...

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        """The class a method belongs to; "" at the top level."""
        return self.name.rpartition(".")[0]

    def cite(self) -> str:
        return f"{show(self.path)}:{self.line}: {self.signature}"


class Parsed(NamedTuple):
    sites: list[Site]
    names: Iterator[str]  # the names the file uses (identifiers, attributes, modules), read as asked


SOURCE_SUFFIXES = frozenset({".py", *GRAMMARS})


def suffix(path: str) -> str:
    dot = path.rfind(".")
    return path[dot:].lower() if dot > path.rfind("/") else ""


def is_python(path: str) -> bool:
    return PurePosixPath(path).suffix in PYTHON_SUFFIXES


def has_syntax(path: str) -> bool:
    """Whether the file at `path` has its definitions from a syntax tree here (its name says the language)."""
    return is_python(path) or suffix(path) in GRAMMARS


def outline(source: str | bytes, path: str = "") -> list[Site] | None:
    """The definitions of `source` in file order, citing `path`; Python unless `path` names another
    language; None when it does not parse or its grammar is not installed."""
    found = parse(source, path)
    return None if found is None else found.sites


def parse(source: str | bytes, path: str = "") -> Parsed | None:
    """`outline`, with the names the file uses."""
    grammar = GRAMMARS.get(suffix(path))
    return _python(source, path) if grammar is None else _tree_sitter(grammar, source, path)


# --- Python -----------------------------------------------------------------------------------------


def _python(source: str | bytes, path: str) -> Parsed | None:
    try:
        with warnings.catch_warnings():
            # An invalid escape in the user's file is their business: no SyntaxWarning on our stderr.
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    # ValueError: a NUL byte (Python 3.11 before 3.11.4). MemoryError and RecursionError: nesting
    # deeper than the parser's stack or the tree builder's recursion.
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    sites: list[Site] = []
    _walk(tree.body, "", 0, text.splitlines(), path, sites, False)
    return Parsed(sites, _python_names(tree))


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _walk(
    body: list[ast.stmt], prefix: str, depth: int, lines: list[str], path: str, out: list[Site], local: bool
) -> None:
    """The definitions of `body`, those nested in its definitions under a qualified name (`Group.command`,
    `outer.inner`); its constants unless it is a function's (`local`: its assignments are its state)."""
    for node in _statements(body):
        if isinstance(node, _DEFINITIONS):
            kind = CLASS if isinstance(node, ast.ClassDef) else FUNCTION
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            # The header runs to the line before the body's first statement (or is the only line).
            header_end = max(node.lineno, node.body[0].lineno - 1) if node.body else node.lineno
            signature = _joined(lines[node.lineno - 1 : header_end])
            out.append(Site(path, prefix + node.name, kind, node.lineno, start, end, signature, depth))
            _walk(node.body, f"{prefix}{node.name}.", depth + 1, lines, path, out, kind == FUNCTION)
        elif not local and isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            end = node.end_lineno or node.lineno
            signature = _joined(lines[node.lineno - 1 : node.lineno])
            for target in targets:
                if isinstance(target, ast.Name):
                    name, line = prefix + target.id, node.lineno
                    out.append(Site(path, name, CONSTANT, line, line, end, signature, depth))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a block, then the definitions in its compound statements' blocks (a `def` under
    `if`, `try` or `with` is defined there all the same)."""
    for node in body:
        yield node
        if not isinstance(node, _DEFINITIONS):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, ()):
                    block = [child] if isinstance(child, ast.stmt) else child.body
                    yield from (n for n in _statements(block) if isinstance(n, _DEFINITIONS))


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


def _joined(lines: list[str]) -> str:
    text = " ".join(line.strip() for line in lines)
    return text if len(text) <= _SIGNATURE_CHARS else text[:_SIGNATURE_CHARS] + "…"


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


def tree(data: bytes, path: str) -> Any | None:
    """The root of the tree-sitter tree of a file whose name says a language with a grammar here (not
    Python: `ast` reads it), or None when it has none or its wheel is not installed."""
    grammar = GRAMMARS.get(suffix(path))
    parser = None if grammar is None else _parser(grammar.module, grammar.entry)
    return None if parser is None else parser.parse(data).root_node


def _tree_sitter(grammar: Grammar, source: str | bytes, path: str) -> Parsed | None:
    parser = _parser(grammar.module, grammar.entry)
    if parser is None:
        return None
    data = source.encode("utf-8", errors="surrogatepass") if isinstance(source, str) else source
    root = parser.parse(data).root_node
    lines = data.splitlines()
    sites: list[Site] = []
    for node in root.named_children:
        for top in _unwrap(grammar, node):
            kind, name = _kind(grammar, top, nested=False), bound(top) or _name(top)
            if kind and name:
                sites.append(_site(path, name, kind, top, 0, lines))
                sites += _nested(grammar, top, name, path, lines)
    return Parsed(sites, _leaf_names(root))


def _kind(grammar: Grammar, node: Any, nested: bool) -> str | None:
    """What `node` defines; inside a definition only functions, methods and classes with a body (a
    function's `const n = 2` is its state, C's `struct s *p` names a type it does not define)."""
    if bound(node):
        return FUNCTION
    kind = FUNCTION if nested and node.type in grammar.members else grammar.kinds.get(node.type)
    if not nested or kind == FUNCTION:
        return kind
    return kind if kind == CLASS and node.child_by_field_name("body") is not None else None


def _nested(grammar: Grammar, top: Any, name: str, path: str, lines: list[bytes]) -> Iterator[Site]:
    """The definitions inside `top` at any depth, each qualified by those that hold it (`Command.run`,
    `setup.createDebug`): the innermost holds a call, and names its caller."""
    holding = [(top.end_byte, name)]  # the definitions around the node, innermost last
    for node in nodes(top):
        while len(holding) > 1 and node.start_byte >= holding[-1][0]:
            holding.pop()
        if node == top or not (kind := _kind(grammar, node, nested=True)):
            continue
        if not (own := bound(node) or _name(node)):
            continue
        qualified = f"{holding[-1][1]}.{own}"
        yield _site(path, qualified, kind, node, len(holding), lines)
        holding.append((node.end_byte, qualified))


def _site(path: str, name: str, kind: str, node: Any, depth: int, lines: list[bytes]) -> Site:
    """The signature is the definition's lines up to where its body begins (all of its first line when it
    has none): `func Serve(w io.Writer) error`, `export class View extends Base`."""
    first, last = node.start_point[0], node.end_point[0]
    body = node.child_by_field_name("body")
    row, column = body.start_point if body is not None else (first, None)
    header = lines[first : row + 1] or [b""]
    header[-1] = header[-1][:column]
    signature = _joined([text for line in header if (text := line.decode("utf-8", errors="replace").strip())])
    return Site(
        path=path,
        name=name,
        kind=kind,
        line=first + 1,
        start=first + 1,
        end=last + 1,
        signature=signature,
        depth=depth,
    )


def _unwrap(grammar: Grammar, node: Any) -> Iterator[Any]:
    if node.type in grammar.kinds or bound(node):
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
    for node in nodes(root):
        if node.child_count == 0 and node.type.endswith("identifier") and node.text:
            yield node.text.decode("utf-8", "replace")


def nodes(root: Any) -> Iterator[Any]:
    """Every node of a tree-sitter tree, in document order (a cursor: no recursion, however deep)."""
    cursor = root.walk()
    while True:
        yield cursor.node
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return
