"""The REPL's slash commands: each one a method, each through the governor, each ending in a saved session.

Commands never change the conversation behind the governor's back: compaction, reset and undo are the
governor's transactions (checkpoint first); this class only adopts their result, says what happened
in a sentence, and saves the session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rich.console import Console

from aforo.cancel import cancel_on_sigint
from aforo.cli.context_view import render_context, trail_lines
from aforo.cli.render import fmt_tokens
from aforo.cli.session_keeper import SessionKeeper, find_session, mismatch_warnings
from aforo.errors import StoreError, TransformError
from aforo.messages import Request
from aforo.protocols import Provider
from aforo.store.sessions import SessionRecord, SessionStore

HELP = """\
/context               what fills the window: sections, free space, reserve
/compact [instructions] summarize the conversation now (instructions go to the summarizer)
/clear                 start over (checkpointed: /undo brings the conversation back)
/undo [ID]             one transformation back (again: further back); ID: that checkpoint
/dropped               what the last clearing, compaction or /clear removed
/sessions [--all]      saved conversations of this workspace (--all: of every one), newest first
/resume [ID]           continue a saved conversation (default: the previous one of this workspace)
/help                  this list
/quit                  leave (Ctrl-D too); Ctrl-C cancels a running answer
Esc Enter, Alt-Enter   a new line in the question (Enter sends it)
Tab                    complete a /command, or a workspace path after @
@path                  attach that workspace file to the question (read with Read, capped like it)"""


class Commands:
    def __init__(
        self,
        *,
        keeper: SessionKeeper,
        provider: Provider,
        store: SessionStore,
        workspace: Path,
        model: str,
        console: Console,
        list_sessions: Callable[[str], object],
    ) -> None:
        if keeper.agent is None:
            raise ValueError("the session keeper must be attached to the agent first")
        self.keeper = keeper
        self.agent = keeper.agent
        self.governor = keeper.agent.governor
        self.provider = provider
        self.store = store
        self.workspace = workspace
        self.model = model
        self.console = console
        self.list_sessions = list_sessions
        self.table: dict[str, Callable[[str], object]] = {
            "/context": self.context,
            "/compact": self.compact,
            "/clear": self.clear,
            "/undo": self.undo,
            "/dropped": self.dropped,
            "/sessions": self.list_sessions,
            "/resume": self.resume,
            "/help": lambda _arg: self.say(HELP),
        }

    def dispatch(self, line: str) -> bool:
        """Run one command line; False when the user asked to leave."""
        name, _, arg = line.strip().partition(" ")
        if name in ("/quit", "/exit"):
            return False
        action = self.table.get(name)
        if action is None:
            close = [c for c in (*self.table, "/quit") if c.startswith(name[:3])]
            hint = f" Did you mean {', '.join(close)}?" if close and name != "/" else ""
            self.say(f"unknown command {name!r}.{hint} /help lists the commands.")
            return True
        action(arg.strip())
        return True

    def say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    # --- the commands ----------------------------------------------------------------------------

    def context(self, _arg: str) -> None:
        render_context(self.governor.breakdown(self.agent.request()), self.console)
        self._trail()

    def _trail(self) -> None:
        """What aforo keeps of the session whatever is compacted."""
        for line in trail_lines(self.governor.conversation.trail):
            self.say(line)

    def compact(self, instructions: str) -> None:
        # Ctrl-C stops the summary request at once, as it stops a model call (aforo.cancel).
        cancel = threading.Event()
        compact = partial(
            self.governor.compact_now,
            provider=self.provider,
            instructions=instructions or None,
            cancel=cancel,
        )
        with cancel_on_sigint(cancel):
            if self._transform(compact, "not compacted: {}. The conversation is unchanged."):
                self._trail()

    def clear(self, _arg: str) -> None:
        self._transform(self.governor.start_over, "not cleared: {}")

    def _transform(self, action: Callable[[Request], None], refused: str) -> bool:
        """Run a transformation of the governor's and save the session; or say why it was not applied."""
        try:
            action(self.agent.request())
        except TransformError as exc:
            self.say(refused.format(exc))
            return False
        except KeyboardInterrupt:
            self.say(refused.format("cancelled by the user"))
            return False
        self.keeper.save()
        return True

    def undo(self, wanted: str) -> None:
        try:
            undone = self.governor.undo(self.agent.request(), wanted.strip() or None)
        except (StoreError, TransformError) as exc:
            self.say(f"cannot undo: {exc}")
            return
        if undone is None:
            self.say(
                f"no checkpoint {wanted.strip()!r} in this session (/dropped and the ~ lines name them)."
                if wanted.strip()
                else "nothing to undo: no clearing, compaction or /clear before this point in this session."
            )
            return
        restore, kept = undone
        self.keeper.save()
        results = sum(len(m.tool_results) for m in restore.messages)
        # The governor's event line above gives the tokens before -> after; this one, what came back.
        self.say(
            f"undo: {len(restore.messages)} messages came back ({results} tool results) from checkpoint "
            f"{restore.checkpoint}"
            + (f"; the conversation it replaced is kept in checkpoint {kept} (/undo {kept})" if kept else "")
        )

    def dropped(self, _arg: str) -> None:
        try:
            found = self.governor.dropped()
        except StoreError as exc:
            self.say(f"cannot read the last checkpoint: {exc}")
            return
        if found is None:
            self.say("nothing was dropped: no clearing, compaction or /clear has happened in this session.")
            return
        checkpoint, report = found
        self.say(f"{report.describe()} (checkpoint {checkpoint}; /undo restores it)")

    def resume(self, wanted: str) -> None:
        current = self.keeper.record.id
        try:
            if wanted:
                record, notes = find_session(self.store, wanted, self.workspace)
            else:
                record, notes = self._previous(current)
        except StoreError as exc:
            self.say(f"cannot resume: {exc}")
            return
        if record.id == current:
            self.say(f"session {current} is the one open.")
            return
        for note in notes + mismatch_warnings(record, self.workspace, self.model):
            self.say(f"! {note}")
        try:
            self.keeper.switch(record)
        except StoreError as exc:  # SessionBusy: another aforo has it open; this session stays open
            self.say(f"cannot resume: {exc}")
            return
        self.keeper.save()
        tokens = self.governor.count(self.agent.request()).tokens
        self.say(
            f"resumed session {record.id}: {len(self.agent.messages)} messages, {fmt_tokens(tokens)} tokens"
        )

    def _previous(self, current: str) -> tuple[SessionRecord, list[str]]:
        """The newest saved session of this workspace other than the open one."""
        record, notes = self.store.latest(self.workspace, exclude=current)
        if record is None:
            raise StoreError(
                "no other saved session for this workspace; /sessions lists them all and /resume ID opens one"
            )
        return record, notes
