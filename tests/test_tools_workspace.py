"""Confinement: every hostile path is refused with a ToolError, every honest one resolves inside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aforo.errors import ToolError
from aforo.tools.workspace import relative, resolve


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET\n")
    return root


def test_relative_paths_resolve_inside(ws: Path) -> None:
    assert resolve(ws, "src/main.py") == (ws / "src" / "main.py").resolve()
    assert resolve(ws, "src/../src/main.py") == (ws / "src" / "main.py").resolve()
    assert resolve(ws, "./src") == (ws / "src").resolve()


def test_empty_or_missing_path_is_the_root(ws: Path) -> None:
    assert resolve(ws, None) == ws.resolve()
    assert resolve(ws, "") == ws.resolve()
    assert resolve(ws, ".") == ws.resolve()


def test_missing_file_inside_is_not_a_confinement_error(ws: Path) -> None:
    assert resolve(ws, "src/nope.py") == ws.resolve() / "src" / "nope.py"


def test_absolute_path_inside_is_accepted(ws: Path) -> None:
    assert resolve(ws, str(ws / "src" / "main.py")) == (ws / "src" / "main.py").resolve()


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "src/../../outside", "src/../.."])
def test_dotdot_escapes_are_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve(ws, path)


def test_absolute_path_outside_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve(ws, "/etc/passwd")
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve(ws, str(ws.parent / "outside" / "secret.txt"))


def test_sibling_with_common_prefix_is_outside(ws: Path) -> None:
    sibling = ws.parent / "ws-evil"
    sibling.mkdir()
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve(ws, str(sibling))


def test_symlink_to_file_outside_is_refused(ws: Path) -> None:
    (ws / "link.txt").symlink_to(ws.parent / "outside" / "secret.txt")
    with pytest.raises(ToolError, match="symlink"):
        resolve(ws, "link.txt")


def test_symlink_to_dir_outside_is_refused_for_paths_through_it(ws: Path) -> None:
    (ws / "out").symlink_to(ws.parent / "outside", target_is_directory=True)
    with pytest.raises(ToolError, match="symlink"):
        resolve(ws, "out")
    with pytest.raises(ToolError, match="symlink"):
        resolve(ws, "out/secret.txt")


def test_symlink_dotdot_follows_the_link_like_the_os(ws: Path) -> None:
    # out/.. is the parent of `outside` for the OS, which is outside the workspace.
    (ws / "out").symlink_to(ws.parent / "outside", target_is_directory=True)
    with pytest.raises(ToolError):
        resolve(ws, "out/../outside/secret.txt")


def test_symlink_inside_pointing_inside_is_fine(ws: Path) -> None:
    (ws / "alias.py").symlink_to(ws / "src" / "main.py")
    (ws / "code").symlink_to(ws / "src", target_is_directory=True)
    assert resolve(ws, "alias.py") == (ws / "src" / "main.py").resolve()
    assert resolve(ws, "code/main.py") == (ws / "src" / "main.py").resolve()


def test_symlink_to_device_outside_is_refused(ws: Path) -> None:
    (ws / "null").symlink_to(os.devnull)
    with pytest.raises(ToolError, match="symlink"):
        resolve(ws, "null")


def test_symlink_loop_is_a_tool_error(ws: Path) -> None:
    (ws / "a").symlink_to(ws / "b")
    (ws / "b").symlink_to(ws / "a")
    with pytest.raises(ToolError):
        resolve(ws, "a")


def test_nul_byte_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="NUL"):
        resolve(ws, "src/main.py\0.txt")


def test_home_shorthand_is_outside(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws.parent / "outside"))
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve(ws, "~/secret.txt")


def test_workspace_given_through_a_symlink(ws: Path) -> None:
    alias = ws.parent / "alias-ws"
    alias.symlink_to(ws, target_is_directory=True)
    assert resolve(alias, "src/main.py") == (ws / "src" / "main.py").resolve()
    # An absolute path spelled through the alias is inside too.
    assert resolve(alias, str(alias / "src" / "main.py")) == (ws / "src" / "main.py").resolve()


def test_missing_workspace_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        resolve(tmp_path / "gone", "x")


def test_relative_display(ws: Path) -> None:
    root = ws.resolve()
    assert relative(root, root) == "."
    assert relative(root, root / "src" / "main.py") == "src/main.py"
