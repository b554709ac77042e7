"""The interactive assistant: read a line, run it (or a slash command), show the context, repeat.

prompt_toolkit gives line editing and a history persisted in the state directory. Enter sends the
question; Esc Enter (Alt-Enter on most terminals, which send it as Esc then Enter) starts a new line in
it. Tab completes a slash command, or a workspace path after `@` (listed through the tools'
confinement: a path outside the workspace completes to nothing). While a run streams, the terminal is
back in cooked mode, so Ctrl-C arrives as SIGINT: the agent turns it into an `aborted` ending with every
tool call answered, and the REPL goes on. At the prompt, Ctrl-C clears the line and Ctrl-D (or /quit)
leaves.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console

from aforo.cli.commands import Commands
from aforo.cli.history import RedactedHistory
from aforo.cli.mentions import complete_path
from aforo.cli.parsing import Subcommand
from aforo.cli.piped import Prompt
from aforo.cli.render import ctx_line
from aforo.cli.runs import RunLog, ask
from aforo.cli.sanitize import safe_console
from aforo.cli.session_keeper import INTERRUPTED_RESULT, SessionKeeper
from aforo.cli.sessions_command import sessions_parser, sessions_run
from aforo.cli.typeahead import Typed, held
from aforo.errors import StoreError
from aforo.protocols import Provider
from aforo.store.paths import history_path
from aforo.store.sessions import SessionStore

PROMPT = "aforo> "
CONTINUATION = "     . "
GREETING = "Ask about the workspace; /help lists the commands, Ctrl-D leaves."
# Commands that wait on the model, during which the user may type ahead.
WAITED_ON = ("/compact",)


class ReplCompleter(Completer):
    """Slash commands at the start of the line; workspace paths in a word that starts with `@`."""

    def __init__(self, commands: Iterable[str], workspace: Path) -> None:
        self.commands = sorted(commands)
        self.workspace = workspace

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for name in self.commands:
                if name.startswith(before):
                    yield Completion(name, start_position=-len(before))
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            partial = word[1:]
            for path in complete_path(self.workspace, partial):
                yield Completion(path, start_position=-len(partial))


def key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        # Enter sends; Esc Enter (what Alt-Enter sends) writes a line break into the question.
        event.current_buffer.insert_text("\n")

    return bindings


class Repl:
    def __init__(self, keeper: SessionKeeper, log: RunLog, commands: Commands, console: Console) -> None:
        if keeper.agent is None:
            raise ValueError("the session keeper must be attached to the agent first")
        self.keeper = keeper
        self.log = log
        self.agent = keeper.agent
        self.commands = commands
        self.console = console
        self.prompt: PromptSession[str] = PromptSession(
            history=_history(),
            completer=ReplCompleter([*commands.table, "/quit"], commands.workspace),
            complete_while_typing=False,
            key_bindings=key_bindings(),
            prompt_continuation=CONTINUATION,
        )

    def loop(self) -> int:
        self.console.print(GREETING, markup=False, highlight=False)
        if self.agent.messages:
            self.status()
        typed = Typed()
        while True:
            try:
                line = self.prompt.prompt(PROMPT, default=typed.text).strip()
            except KeyboardInterrupt:
                typed = Typed()
                continue
            except EOFError:
                return 0
            if not line:
                continue
            typed = Typed()
            if line.startswith("/") and line.split()[0] not in WAITED_ON:
                if not self.commands.dispatch(line):  # it may ask on the terminal (/sessions prune)
                    return 0
                continue
            # What is typed while a run or a compaction works is kept for the next prompt (typeahead).
            with held() as typed:
                if line.startswith("/"):
                    self.commands.dispatch(line)
                else:
                    self.run(line)
            if typed.dropped:
                self.console.print(
                    f"! {typed.dropped} bytes typed during the run were left out (typeahead_bytes)",
                    style="yellow",
                    markup=False,
                )

    def run(self, prompt: str) -> None:
        try:
            ask(self.agent, self.keeper, self.log, Prompt(prompt))
        except KeyboardInterrupt:
            # A second Ctrl-C can land after the agent's own handler (while it ends the run): the
            # conversation must still be well-formed before it is saved.
            self.agent.governor.conversation.close_pending(INTERRUPTED_RESULT)
            self.console.print("\n[aborted] cancelled by the user", markup=False, highlight=False)
        self.keeper.save()
        self.status()

    def status(self) -> None:
        gov = self.agent.governor
        count = gov.count(self.agent.request())
        line = ctx_line(count.tokens, gov.window, count.exact)
        self.console.print(f"{line} · {len(self.agent.messages)} messages", style="cyan", markup=False)


def _history() -> FileHistory | InMemoryHistory:
    """The persisted line history, 0600 and redacted; in memory when the state directory cannot be written."""
    try:
        return RedactedHistory(history_path())
    except StoreError:
        return InMemoryHistory()


def list_sessions(workspace: Path, arg: str) -> None:
    """`/sessions [flags]`: `aforo sessions` for this workspace; a bad flag is said, the REPL goes on."""
    try:
        Subcommand(sessions_parser, sessions_run)(["--limit", "10", "-w", str(workspace), *shlex.split(arg)])
    except SystemExit:  # argparse ends --help and usage errors so, after saying why
        pass
    except ValueError as exc:  # shlex: an unclosed quote
        print(f"/sessions: {exc}")


def start_repl(
    keeper: SessionKeeper, log: RunLog, provider: Provider, store: SessionStore, workspace: Path, model: str
) -> int:
    """Open the interactive session on the keeper's conversation; returns the exit status."""
    # Every line the REPL prints may carry text from the model, a tool or a server: sanitized.
    console = safe_console()
    commands = Commands(
        keeper=keeper,
        provider=provider,
        store=store,
        workspace=workspace,
        model=model,
        console=console,
        list_sessions=lambda arg: list_sessions(workspace, arg),
    )
    return Repl(keeper, log, commands, console).loop()
