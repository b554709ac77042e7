"""Finding by name on a large tree: Find over 5 000 Python files, and Read's view of a long module.

The tree spells `group` in 500 files and defines it in 3 (one a method), as a real package spells a
common name far more often than it defines it; Find parses only the files with a line that looks like a
definition. Targets: Find under 5 s cold and under 1 s warm (parsed files are kept by mtime), its three
definitions all found; a 3 000-line module read in a 4 096 window (a cap of 2 456 characters) shows the
definition the question names, within the cap.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from aforo.context.tokens import chars_for
from aforo.tools import default_registry

FILES = 5_000
SPELLED_IN = 500
CAP_CHARS = chars_for(614, 1.0)  # the cap of a 4 096 window: a fifth of 3 072 tokens
LONG_FUNCTIONS = 600


def module(i: int) -> str:
    uses = (
        f"from pkg.core import group\n\n\nresult_{i} = group({i})\n" if i % (FILES // SPELLED_IN) == 0 else ""
    )
    body = "".join(f"def f_{i}_{n}(x):\n    return x + {n}\n\n\n" for n in range(5))
    return f'"""Module {i}."""\n\n{uses}\n\n{body}'


def build(root: Path) -> None:
    for i in range(FILES):
        folder = root / "pkg" / f"sub{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i:04d}.py").write_text(module(i))
    (root / "pkg" / "core.py").write_text("def group(value):\n    return [value]\n")
    (root / "pkg" / "sub07" / "extra.py").write_text("group = None\n")
    (root / "pkg" / "sub09" / "klass.py").write_text(
        "class Registry:\n    def group(self):\n        return 1\n"
    )
    long = "".join(
        f"def helper_{n}(x):\n    y = x * {n}\n    return y + 1\n\n\n" for n in range(LONG_FUNCTIONS)
    )
    long += 'def wanted_function(x):\n    """The one asked for."""\n    return "WANTED"\n'
    (root / "long.py").write_text(long)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="aforo-bench-symbols-") as tmp:
        root = Path(tmp)
        build(root)
        registry = default_registry(root)
        times = []
        for _ in range(2):
            started = time.perf_counter()
            out = registry.execute("Find", {"name": "group"})
            times.append(time.perf_counter() - started)
        defined = out.content.split(" is used in ")[0]
        found = sum(site in defined for site in ("core.py:1", "extra.py:1", "klass.py:2"))
        print(
            f"Find group over {FILES:,} files (spelled in {SPELLED_IN + 3}, defined in 3): "
            f"cold {times[0]:.2f} s, warm {times[1]:.2f} s (targets < 5 s, < 1 s); "
            f"{found} of 3 definitions found"
        )
        read = registry.execute(
            "Read",
            {"file_path": "long.py"},
            max_chars=CAP_CHARS,
            question="What does wanted_function return?",
        )
        lines = (root / "long.py").read_text().count("\n")
        landed = '"WANTED"' in read.content
        print(
            f"Read of a {lines:,}-line module, cap {CAP_CHARS:,} characters: {len(read.content):,} "
            f"characters ({len(read.content) / CAP_CHARS:.2f} of the cap), "
            f"the definition asked for shown: {landed}"
        )
        ok = times[0] < 5 and times[1] < 1 and found == 3 and landed and len(read.content) <= CAP_CHARS
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
