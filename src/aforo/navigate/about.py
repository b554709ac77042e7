"""What a project says about itself, for "What does this package do?": its README, its metadata's
description (pyproject.toml, setup.cfg, setup.py, package.json), its package's `__init__` docstring,
and, when those say little, the first line of the docstrings of what the package exports.

Asked that question, the 1.5B model wandered the files for 204–207 s on two Python packages and then
described one module, or repeated one word until its output limit; the JavaScript one, which read its
`package.json`, answered well in 32 s. A project's front page is written to answer exactly that, so it
is read first, within the pre-search's budget, and the model answers from it in one pass.
Everything here is read as a tool reads: inside the workspace, regular files only, at most
`map_file_bytes` of each.
"""

from __future__ import annotations

import ast
import configparser
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

from aforo.limits import MAP_FILE_BYTES
from aforo.navigate.index import SymbolIndex
from aforo.tools.names import show
from aforo.tools.syntax import CLASS, FUNCTION

README_CHARS = 1200  # the opening of a README: what it is, before installation and examples
SAYS_ENOUGH = 400  # with this much from the README, metadata and docstring, the exports are not needed
EXPORTS_SHOWN = 10
# Folders whose `__init__.py` is not the package's: its tests, docs and examples.
_NOT_THE_PACKAGE = re.compile(r"(^|/)(tests?|testing|docs?|examples?|benchmarks?)/", re.IGNORECASE)
_README = re.compile(r"README(\.(md|rst|txt|markdown))?", re.IGNORECASE)
# Lines of a README that say nothing of what the project does: badges, images, HTML, link targets.
_NOISE = re.compile(
    r"^\s*(\[!\[|!\[|<|\.\. (image|figure|\|)|\[[^\]]+\]:\s|:target:|:alt:|\|"
    r"|(?P<rule>[=~^*#+-])(?P=rule){2,}\s*$)"  # the last: a reStructuredText heading's underline
)


def about(workspace: Path, index: SymbolIndex, max_chars: int) -> tuple[list[str], str] | None:
    """The files read and the text, within `max_chars`, of what the project says about itself; None
    when it says nothing."""
    parts: list[tuple[str, str]] = []  # (file, what it says)
    parts += _readme(workspace)
    parts += _metadata(workspace)
    inits = _package_inits(index)
    parts += [
        (path, f"the package's docstring: {doc}") for path in inits if (doc := _docstring(workspace, path))
    ]
    if sum(len(text) for _, text in parts) < SAYS_ENOUGH:
        parts += _exports(workspace, index, inits)
    if not parts:
        return None
    lines, used = [], 0
    for path, text in parts:
        line = f"{show(path)}: {text}"
        if used + len(line) > max_chars:
            line = line[: max(0, max_chars - used - 1)].rstrip() + "…"
        if len(line) > len(show(path)) + 3:
            lines.append(line)
            used += len(line) + 1
        if used >= max_chars:
            break
    return list(dict.fromkeys(path for path, _ in parts)), "\n".join(lines)


def _read(workspace: Path, name: str) -> str | None:
    path = workspace / name
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with open(path, "rb") as f:
            return f.read(int(MAP_FILE_BYTES.value)).decode("utf-8", "replace")
    except OSError:
        return None


def _readme(workspace: Path) -> Iterator[tuple[str, str]]:
    try:
        names = sorted(p.name for p in workspace.iterdir() if _README.fullmatch(p.name))
    except OSError:
        return
    for name in names[:1]:
        text = _read(workspace, name)
        if text:
            yield name, " ".join(" ".join(_prose(text)).split())[:README_CHARS]


def _prose(text: str) -> Iterator[str]:
    """The lines of prose: no badge, image, HTML, heading rule or code (fenced, indented, or a `>>>`
    session and its output, which runs to the next blank line)."""
    fenced = session = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        session = bool(stripped) and (session or stripped.startswith(">>>"))
        if stripped and not (fenced or session or _NOISE.match(line) or line.startswith(("    ", "\t"))):
            yield line


def _metadata(workspace: Path) -> Iterator[tuple[str, str]]:
    """The description the packaging files give, each that has one."""
    readers = {
        "pyproject.toml": _pyproject,
        "setup.cfg": _setup_cfg,
        "setup.py": _setup_py,
        "package.json": _package_json,
    }
    for name, read in readers.items():
        text = _read(workspace, name)
        if text and (said := read(text)):
            yield name, said


def _pyproject(text: str) -> str:
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError:
        return ""
    return _described(project.get("name"), project.get("description"))


def _setup_cfg(text: str) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ""
    return _described(
        parser.get("metadata", "name", fallback=None), parser.get("metadata", "description", fallback=None)
    )


def _setup_py(text: str) -> str:
    """`setup(name=..., description=...)` when they are written as plain strings (never run)."""
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    found: dict[str, str] = {}
    for node in ast.walk(module):
        if (
            isinstance(node, ast.keyword)
            and node.arg in ("name", "description")
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found.setdefault(node.arg, node.value.value)
    return _described(found.get("name"), found.get("description"))


def _package_json(text: str) -> str:
    try:
        package = json.loads(text)
    except ValueError:
        return ""
    return _described(package.get("name"), package.get("description")) if isinstance(package, dict) else ""


def _described(name: object, description: object) -> str:
    if not isinstance(description, str) or not description.strip():
        return ""
    named = f"{name}: " if isinstance(name, str) and name else ""
    return f'the description of {named}"{" ".join(description.split())}"'


def _package_inits(index: SymbolIndex) -> list[str]:
    """The `__init__.py` files nearest the workspace's root (the package it is, or holds), not those of
    its tests, docs or examples."""
    inits = [
        path
        for path in index.files
        if path.rsplit("/", 1)[-1] == "__init__.py" and not _NOT_THE_PACKAGE.search(path)
    ]
    if not inits:
        return []
    top = min(path.count("/") for path in inits)
    return [path for path in inits if path.count("/") == top][:3]


def _docstring(workspace: Path, path: str) -> str:
    text = _read(workspace, path)
    try:
        doc = ast.get_docstring(ast.parse(text)) if text else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    return " ".join(" ".join(_prose(doc)).split())[:README_CHARS] if doc else ""


def _exports(workspace: Path, index: SymbolIndex, inits: list[str]) -> list[tuple[str, str]]:
    """The first line of the docstring of each class and function an `__init__.py` imports (what the
    package offers), where it is defined."""
    names = [name for path in inits for name in _imported_names(workspace, path)]
    found = []
    # The most used first: itsdangerous's `Signer` and `Serializer` before its base64 helpers.
    for name in sorted(dict.fromkeys(names), key=lambda name: -index.references[name]):
        sites = [s for s in index.definitions.get(name, ()) if s.kind in (CLASS, FUNCTION) and not s.parent]
        if sites and (line := _first_line(workspace, sites[0].path, sites[0].name)):
            found.append((sites[0].path, f"{sites[0].kind} {name}: {line}"))
        if len(found) >= EXPORTS_SHOWN:
            break
    return found


def _imported_names(workspace: Path, path: str) -> list[str]:
    text = _read(workspace, path)
    try:
        module = ast.parse(text) if text else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if module is None:
        return []
    return [
        alias.asname or alias.name
        for node in module.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]


def _first_line(workspace: Path, path: str, name: str) -> str:
    text = _read(workspace, path)
    try:
        module = ast.parse(text) if text else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    for node in module.body if module else ():
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            doc = ast.get_docstring(node)
            return _first_sentence(" ".join(doc.split("\n\n", 1)[0].split())) if doc else ""
    return ""


def _first_sentence(text: str) -> str:
    end = re.search(r"[.!?](\s|$)", text)
    return text[: end.end()].strip() if end else text
