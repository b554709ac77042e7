"""The repository map on a 5 000-file tree: the index built cold, warm (from its cache), after 50 files
changed, then the map and the pre-search for one question.

The tree is generated in a temp dir: 4 000 Python modules of ~60 lines (classes, functions, constants,
imports of each other) and 250 each of TypeScript, Go, Rust and JavaScript. Targets: a warm start (the
cache holds every file) under 1 s and at least 5 times faster than the cold build, since that is what
every start of aforo in the same workspace pays; the map and the pre-search under 1 s each.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

PYTHON, OTHERS = 4_000, 250
WARM_TARGET_S = 1.0
WARM_SPEEDUP = 5.0
QUERY_TARGET_S = 1.0


def python_module(n: int, rng: random.Random) -> str:
    other = rng.randrange(PYTHON)
    lines = [
        f'"""Module {n}."""',
        "import hashlib" if n % 50 == 0 else "import os",
        f"from pkg{other % 40}.mod{other} import Thing{other}",
        "",
    ]
    lines.append(f"LIMIT_{n} = {n}")
    for c in range(2):
        lines += [
            "",
            f"class Thing{n}{'' if c == 0 else 'Extra'}:",
            f"    def run_{c}(self, x):",
            "        return x + 1",
        ]
    for f in range(6):
        lines += [
            "",
            f"def helper_{n}_{f}(value):",
            f"    total = Thing{other}()",
            "    for i in range(3):",
            "        total = total",
            "    return total",
        ]
    return "\n".join(lines) + "\n"


OTHER_SOURCES = {
    ".ts": "export function render{n}(x: number): number {{ return x; }}\n"
    "interface Props{n} {{ a: number }}\nclass View{n} {{ draw() {{}} }}\n",
    ".go": "package p\n\nfunc Serve{n}() {{}}\n\ntype Handler{n} struct{{}}\n\nconst Max{n} = 3\n",
    ".rs": "pub struct Point{n};\nimpl Point{n} {{ pub fn norm(&self) -> f64 {{ 0.0 }} }}\n"
    "pub const K{n}: i32 = 1;\n",
    ".js": "const LIMIT{n} = 3;\nfunction mount{n}() {{ return LIMIT{n}; }}\n"
    "class Widget{n} {{ paint() {{}} }}\n",
}


def generate(root: Path) -> list[Path]:
    rng = random.Random(33)
    made = []
    for n in range(PYTHON):
        path = root / f"pkg{n % 40}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(python_module(n, rng))
        made.append(path)
    for ext, source in OTHER_SOURCES.items():
        for n in range(OTHERS):
            path = root / f"web{ext[1:]}" / f"file{n}{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source.format(n=n))
            made.append(path)
    return made


def timed(label: str, call):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    out = call()
    took = time.perf_counter() - started
    print(f"{label:<34} {took:7.3f} s")
    return out, took


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AFORO_HOME"] = str(Path(tmp) / "state")  # the cache goes here, not in the user's state
        from aforo.navigate.guide import Navigator
        from aforo.navigate.index import SymbolIndex, build_index
        from aforo.tools.symbol_cache import SymbolCache, cache_path

        root = Path(tmp) / "ws"
        files = generate(root)
        cache = cache_path(root)

        def start() -> SymbolIndex:  # what a start of aforo does: a new cache, read from its file
            return build_index(SymbolCache(root, cache))

        cold, cold_s = timed(f"index, cold ({len(files)} files)", start)
        warm, warm_s = timed("index, warm (cache)", start)
        for path in files[:50]:
            path.write_text(path.read_text() + "\nEXTRA = 1\n")
        timed("index, 50 files changed", start)
        navigator = Navigator(root, 4096)
        navigator.index()  # what a start does, once; each question then refreshes it from memory
        text, map_s = timed(
            "map for a question (4096 window)", lambda: navigator.repo_map(700, "what is Thing17?")
        )
        question = "where is helper_17_3 defined?"
        guided, search_s = timed("refresh, then pre-search", lambda: navigator.guide(question, (), set()))
        definitions = sum(len(e.symbols.definitions) for e in cold.files.values())
        print(f"indexed {len(cold.files)} files, {definitions} definitions")
        print(f"parsed: cold {cold.parsed}, warm {warm.parsed}; cache file {cache.stat().st_size:,} bytes")
        print(f"map {len(text or '')} chars; pre-search {len(guided.messages)} messages")
        print(f"warm / cold: {warm_s / cold_s:.3f} ({cold_s / warm_s:.1f}x faster)")
        fast = warm_s < WARM_TARGET_S and cold_s / warm_s >= WARM_SPEEDUP
        fast = fast and map_s < QUERY_TARGET_S and search_s < QUERY_TARGET_S
        whole = warm.parsed == 0 and len(cold.files) == len(files) and bool(text) and bool(guided.messages)
        ok = fast and whole
        print("target met" if ok else "TARGET MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
