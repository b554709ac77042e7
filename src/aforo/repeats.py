"""An answer that has begun to repeat itself word for word, told while it streams.

At temperature 0 (aforo's default) a small model can fall into a loop: asked to explain a 32-line file,
Qwen2.5-Coder 1.5B wrote four good sentences, then "The file is not used in the project." until the
2 048-token output limit, 110 s on 2 cores, and the run ended `max_tokens` with the loop as its answer;
asked what a package does, it printed one word 437 times. The reader of a stream stops such an answer
and keeps it up to the end of the loop's first copy: what came before the loop is the answer, said once.

What repeats decides what is a loop (issue 39 D15, issue 41):
- a passage of prose (at least `MIN_CHARS` long, `MIN_WORDS` words), or the same block of lines, is a
  loop at its `COPIES`th copy in a row;
- a line that is a table's row or a statement of code (`| n/a | n/a |`, `x = 1`) is no loop however
  often it comes: a table of identical rows and code of identical lines are content, and the next row,
  the closing fence and the sentence after must survive;
- anything shorter (one word, a few characters, a line of a word or two) is a loop only once it has
  come `MANY_COPIES` times and over `MANY_CHARS` characters: `word word word` is stopped, a rule of
  `=====` is not; blank lines at their `MANY_COPIES`th.

A check runs every `EVERY` characters on the last `TAIL` characters only: where its newest characters
came before (a substring search, in C; in most text they did not) gives the unit, and halving finds
how many copies of it end the text, each step one comparison. A hostile server's megabyte costs a
fraction of a second, not the ~8 s of the check that sliced every size at every sentence end.
"""

from __future__ import annotations

COPIES = 4
MIN_CHARS = 16
MIN_WORDS = 4
MAX_CHARS = 600  # the longest passage looked for: a few sentences
MANY_COPIES = 16
MANY_CHARS = 500
EVERY = 64  # characters between two checks
TAIL = COPIES * MAX_CHARS  # what a check looks at: four copies of the longest passage
_MARKS = ".!?\n"
CANDIDATES = 16  # units one check tries: the places its newest characters came before, nearest first
_CODE = frozenset("=(){}[]<>;:,|")


class Repeats:
    """Feed it an answer's text as it streams; `loop_at` is where the answer should end once it loops."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._length = 0
        self._tail = ""  # the last TAIL characters
        self._checked = 0
        self.loop_at: int | None = None  # the answer's length up to the end of the loop's first copy

    def feed(self, piece: str) -> bool:
        """True once the text fed so far ends in a loop (then `loop_at` says where to cut)."""
        self._pieces.append(piece)
        self._length += len(piece)
        self._tail = (self._tail + piece)[-TAIL:]
        if self.loop_at is None and self._length - self._checked >= EVERY:
            self._checked = self._length
            size = _loop_size(self._tail)
            if size is not None:
                self.loop_at = _first_copy_end("".join(self._pieces), size)
        return self.loop_at is not None


def _loop_size(tail: str) -> int | None:
    """The length of the unit that `tail` ends by repeating when that is a loop, else None.

    A loop's newest characters came one unit before: the places they came before, nearest first, are
    the units to try (in most text there is none); the shortest with COPIES copies decides."""
    probe = min(EVERY, len(tail) // COPIES)
    newest = tail[-probe:] if probe else ""
    lo, hi = max(0, len(tail) - probe - MAX_CHARS), len(tail) - 1
    for _ in range(CANDIDATES):
        at = tail.rfind(newest, lo, hi) if newest else -1
        if at < 0:
            return None
        size = len(tail) - probe - at
        if _ends_in(tail, size, COPIES):
            need = _needed(tail[-size:])
            return size if need is not None and _ends_in(tail, size, need) else None
        hi = at + probe - 1
    return None


def _ends_in(tail: str, size: int, copies: int) -> bool:
    """Whether `tail` ends with `copies` copies of its last `size` characters (the last maybe in part):
    one comparison, of the stretch before the last copy with the one a copy earlier."""
    stretch = (copies - 1) * size
    return stretch + size <= len(tail) and tail[-stretch - size : -size] == tail[-stretch:]


def _needed(unit: str) -> int | None:
    """The copies of `unit` in a row that are a loop (the rules of the module's docstring); None: never."""
    if "\n" in unit.rstrip("\n"):
        at = unit.rfind("\n") + 1
        unit = unit[at:] + unit[:at]  # as the lines it is: ending at a line's end
    line = unit.endswith("\n") and unit.count("\n") == 1
    text = unit.strip()
    passage = len(unit) >= MIN_CHARS and len(unit.split()) >= MIN_WORDS
    if passage and not (line and text[-1] not in _MARKS):
        return COPIES  # prose, a sentence on a line, or a block of lines
    if line and text and (unit[0].isspace() or not _CODE.isdisjoint(text)):
        return None  # a table's row, a statement of code
    if not text and "\n" in unit:
        return MANY_COPIES  # blank lines: no answer has a page of them
    # Many, over many characters: as many as the tail holds for a long unit of few words.
    return max(COPIES, -(-MANY_CHARS // len(unit)), min(MANY_COPIES, TAIL // len(unit)))


def _first_copy_end(text: str, size: int) -> int:
    """Where the loop's first copy ends in `text`: back to where the repetition of `size` characters
    begins, one copy on, then on to the end of its sentence or line when one ends within a copy."""
    start = len(text) - size
    while start >= size and text[start - size : start] == text[start : start + size]:
        start -= size
    while start > 0 and text[start - 1] == text[start - 1 + size]:
        start -= 1
    end = start + size
    marks = [at for at in (text.find(mark, end - 1, end - 1 + size) for mark in _MARKS) if at >= 0]
    return min(marks) + 1 if marks else end
