"""An answer about the session checked against aforo's record of it: the harness remembers, the model
explains.

Asked "Which files have you read in this session?" and shown the record, which names the three files
read, the 1.5B named a fourth it had never read (pluggy, a held-out session, 4 096). The record knows
the files read exactly: an answer that names a file it does not, or leaves one out, is sent back once
with the list, as an answer citing a line that does not exist is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from aforo.citations import PATH
from aforo.context.ledger import RECORD_CHECK
from aforo.context.trail import Trail

# A question about the files read: "Which files have you read?", "List the files you opened so far",
# "What have you read in this session?".
_ASKS_READ = re.compile(
    r"\b(files?|modules?)\b[^?.!]*\b(read|opened|looked at)\b|\bwhat (have|did) you (read|open)",
    re.IGNORECASE,
)
# A file as an answer names it: the citations' path (a code or text file's ending, maybe behind folders).
_FILE = re.compile(rf"(?<![\w/.-]){PATH}")


def asks_files_read(question: str) -> bool:
    return bool(_ASKS_READ.search(question))


def files_read(trail: Trail) -> tuple[str, ...]:
    """The files the session read, each once, in order (a Read of lines names its file)."""
    read = (s.partition(" ")[2].split(" ", 1)[0] for s, _ in trail.read if s.startswith("Read "))
    return tuple(dict.fromkeys(re.sub(r"(?::\d+(?:-\d+)?|#\w+)$", "", path) for path in read if path))


def read_correction(answer: str, read: Sequence[str]) -> str | None:
    """What the model is told when `answer` does not name exactly the files `read`, None when it does."""
    named = {PurePosixPath(m.group(0)).name for m in _FILE.finditer(answer)}
    wanted = {PurePosixPath(path).name for path in read}
    if named == wanted:
        return None
    exact = ", ".join(f"`{path}`" for path in read) if read else "none (aforo only searched)"
    wrong = [f"`{n}` was not read" for n in sorted(named - wanted)]
    wrong += [f"`{n}` is missing" for n in sorted(wanted - named)]
    return (
        f"{RECORD_CHECK}: the files read in this session are exactly {exact}; in your answer "
        f"{'; '.join(wrong)}. Answer the question again, naming exactly those files."
    )
