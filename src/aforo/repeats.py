"""An answer that has begun to repeat itself word for word, told while it streams.

At temperature 0 (aforo's default) a small model can fall into a loop: asked to explain a 32-line file,
Qwen2.5-Coder 1.5B wrote four good sentences, then "The file is not used in the project." until the
2 048-token output limit, 110 s on 2 cores, and the run ended `max_tokens` with the loop as its answer.
The reader of a stream stops such an answer once the same passage has come `COPIES` times in a row, and
keeps it up to the end of the first: what came before the loop is the answer, said once.

A passage counts when it is at least `MIN_CHARS` long and holds at least `MIN_WORDS` words, so a rule of
`=====`, a repeated short code line or a table's identical cells are not taken for a loop. The check
runs every `EVERY` characters and costs at most ENDS × MAX_CHARS comparisons: linear in the answer.
"""

from __future__ import annotations

COPIES = 4
MIN_CHARS = 16
MIN_WORDS = 4
MAX_CHARS = 600  # the longest passage looked for: a few sentences
EVERY = 64  # characters between two checks
ENDS = 4  # sentence ends a check tries


class Repeats:
    """Feed it an answer's text as it streams; `loop_at` is where the answer should end once it loops."""

    def __init__(self) -> None:
        self._text = ""
        self._checked = 0
        self.loop_at: int | None = None  # the answer's length up to the end of the first copy

    def feed(self, piece: str) -> bool:
        """True once the text fed so far ends in a loop (then `loop_at` says where to cut)."""
        self._text += piece
        if self.loop_at is None and len(self._text) - self._checked >= EVERY:
            self._checked = len(self._text)
            self.loop_at = _loop_end(self._text)
        return self.loop_at is not None


def _loop_end(text: str) -> int | None:
    """Where the first of `COPIES` identical passages that end the text ends, or None.

    The stream may stop anywhere inside the last copy, so the copies are looked for ending at the last
    few sentence ends (a loop of sentences ends each copy at the same mark), not only at the text's end."""
    for end in _ends(text):
        for size in range(1, min(MAX_CHARS, end // COPIES) + 1):
            unit = text[end - size : end]
            if text[end - 2 * size : end - size] != unit:  # most sizes fail here, at once
                continue
            if all(text[end - (k + 1) * size : end - k * size] == unit for k in range(2, COPIES)):
                # The shortest passage that repeats: too short a one (`=====`, `x = 1`) is no loop of
                # sentences, and neither is any multiple of it.
                if size >= MIN_CHARS and len(unit.split()) >= MIN_WORDS:
                    first = end - COPIES * size  # back to the loop's first copy, however many came
                    while text[first - size : first] == unit:
                        first -= size
                    return first + size
                break
    return None


def _ends(text: str) -> list[int]:
    """The last ENDS places after a sentence's mark or a line's end within the last MAX_CHARS, else the
    text's end."""
    start = max(0, len(text) - MAX_CHARS)
    marks = [i + 1 for i in range(len(text) - 1, start - 1, -1) if text[i] in ".!?\n"]
    return marks[:ENDS] or [len(text)]
