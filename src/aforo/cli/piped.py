"""Piped standard input with a question: the text the question is about, framed and cut to fit.

`cat mod.py | aforo summarize` asks about the piped text, not about the workspace: the prompt says so
and tells the model to use a tool only when the text is not enough (unframed, the 0.5B model explored
the workspace and never answered). Only the typed question is the user's words: it alone is scanned for
`@path` mentions (piped code holds `@t.overload`) and repeated after tool results.

The first answer comes from the text alone (no tool is offered) unless the typed question asks about
the workspace: it names a path, or words like `where`, `which file`, `used`, `workspace`. Told to use a
tool only when the text was not enough, the 1.5B model still read three files of click for
`cat globals.py | aforo summarize` (116 s, and an answer about the whole package); `llm` answers such
a question in seconds, and so must aforo.

Piped text the window cannot hold is cut in the middle the way a tool result is (`cap_text`: head and
tail kept, the cut marked), so that the first request stays below the compaction threshold: a
conversation of one message has nothing to compact. The user is told which lines were cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aforo.context.stages import cap_text
from aforo.loop.agent import Agent
from aforo.messages import Message
from aforo.navigate.terms import question_paths

# Blank lines around the text keep it a block of its own: a `.env` piped in is still recognised by its
# shape and redacted on disk (aforo.store.env_files.block_spans ends a block at a blank line only).
FRAME = (
    "The user piped this text; the question is about it. {how}\n<piped>\n\n{text}\n\n</piped>\n\n"
    "The question: {question}"
)
FROM_TEXT = "Answer from it."
MAY_EXPLORE = "Answer from it; use a tool only if the text is not enough."
# A typed question with one of these words asks about the workspace, not only the piped text.
_WORKSPACE = re.compile(
    r"\b(where|which|workspace|repo|repository|project|codebase|files?|modules?|used|uses|calls?|called|"
    r"callers?|defined|imports?|imported)\b",
    re.IGNORECASE,
)
PIPED_ADVICE = "They are not in this conversation: answer from the lines shown, and say that part was cut."
# Below the compaction threshold by this share, for what the count of a first request cannot know yet.
MARGIN = 0.9
TRIES = 4  # each try shrinks the cap by what the last count overshot


@dataclass(frozen=True)
class Prompt:
    """What the user asked: the words typed, and the text piped with them (None: nothing piped)."""

    typed: str
    piped: str | None = None

    @property
    def from_text(self) -> bool:
        """The first answer comes from the piped text alone: the typed words ask nothing of the workspace."""
        if not (self.piped and self.typed):
            return False
        return not (question_paths(self.typed) or _WORKSPACE.search(self.typed))

    @property
    def question(self) -> str:
        """What is repeated after tool results and scanned for mentions: the typed words, or the piped
        text when nothing was typed (then it is the question itself)."""
        return self.typed or (self.piped or "")

    def text(self, piped: str | None = None) -> str:
        """The prompt message, with `piped` in place of the piped text (its cut form)."""
        body = self.piped if piped is None else piped
        if body is None:
            return self.typed
        if not self.typed:
            return body
        how = FROM_TEXT if self.from_text else MAY_EXPLORE
        return FRAME.format(how=how, text=body, question=self.typed)


@dataclass(frozen=True)
class Fitted:
    text: str  # the prompt message
    notice: str | None = None  # for the user: what was cut (None: nothing)


def fit(prompt: Prompt, agent: Agent) -> Fitted:
    """The prompt message, its piped text cut until the first request stays below compaction."""
    if not prompt.piped:
        return Fitted(prompt.text())
    gov = agent.governor
    base = agent.request(question=prompt.question)
    limit = int(gov.policy.compact_threshold(gov.budget) * MARGIN)

    def tokens(text: str) -> int:
        return gov.count(base.with_messages((*base.messages, Message.user(text)))).tokens

    whole = prompt.text()
    used = tokens(whole)
    if used <= limit:
        return Fitted(whole)
    cap = gov.tool_cap()
    room = max(1, limit - tokens(prompt.text("")))
    for _ in range(TRIES):
        cut = cap_text(prompt.piped, room, cap.ratio, advice=PIPED_ADVICE)
        text = prompt.text(cut.content)
        used = tokens(text)
        if used <= limit:
            break
        room = max(1, int(room * limit / used * MARGIN))
    if not cut.truncated:  # the rest of the request is what does not fit: admission says so
        return Fitted(text)
    return Fitted(text, _notice(prompt.piped, cut.content, cut.removed_lines, cut.removed_chars, used, limit))


def _notice(piped: str, kept: str, removed_lines: int, removed_chars: int, used: int, limit: int) -> str:
    total = piped.count("\n") + (not piped.endswith("\n"))
    head = kept[: kept.find(f"\n[... {removed_lines} lines (")]
    first = head.count("\n") + 1  # counted from 1
    last = first + removed_lines - 1
    over = "" if used <= limit else f" (still {used} tokens of the {limit} it should keep below)"
    said = f"The piped text ({total} lines, {len(piped)} characters) is more than the window holds: "
    if removed_lines == 0:  # the cut is inside one long line: "lines 1-0" said nothing
        start = len(head) - head.rfind("\n")  # the line's first character cut, counted from 1
        return (
            f"{said}characters {start}-{start + removed_chars - 1} of line {first} were cut from its "
            f"middle and the model sees the rest{over}. To ask about them, pipe that part, or mention the "
            "file with @path."
        )
    return (
        f"{said}lines {first}-{last} were cut from its middle and the model sees the rest{over}. To ask "
        f"about them, pipe that part (sed -n {first},{last}p FILE), or mention the file with @path."
    )
