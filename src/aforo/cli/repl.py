"""The interactive assistant: read a line, run it (or a slash command), show the context, repeat.

prompt_toolkit gives line editing and a history persisted in the state directory. While a run streams,
the terminal is back in cooked mode, so Ctrl-C arrives as SIGINT: the agent turns it into an `aborted`
ending with every tool call answered, and the REPL goes on. At the prompt, Ctrl-C clears the line and
Ctrl-D (or /quit) leaves.
"""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, InMemoryHistory
from rich.console import Console

from aforo.cli.commands import Commands
from aforo.cli.history import RedactedHistory
from aforo.cli.render import ctx_line
from aforo.cli.sanitize import safe_console
from aforo.cli.session_keeper import INTERRUPTED_RESULT, SessionKeeper
from aforo.errors import StoreError
from aforo.protocols import Provider
from aforo.store.paths import history_path
from aforo.store.sessions import SessionStore

PROMPT = "aforo> "
GREETING = "Ask about the workspace; /help lists the commands, Ctrl-D leaves."


class Repl:
    def __init__(self, keeper: SessionKeeper, commands: Commands, console: Console) -> None:
        if keeper.agent is None:
            raise ValueError("the session keeper must be attached to the agent first")
        self.keeper = keeper
        self.agent = keeper.agent
        self.commands = commands
        self.console = console
        self.prompt: PromptSession[str] = PromptSession(history=_history())

    def loop(self) -> int:
        self.console.print(GREETING, markup=False, highlight=False)
        if self.agent.messages:
            self.status()
        while True:
            try:
                line = self.prompt.prompt(PROMPT).strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return 0
            if not line:
                continue
            if line.startswith("/"):
                if not self.commands.dispatch(line):
                    return 0
                continue
            self.run(line)

    def run(self, prompt: str) -> None:
        self.keeper.begin(prompt)
        try:
            self.agent.run(prompt)
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
        line = ctx_line(count.tokens, gov.budget.window, count.exact)
        self.console.print(f"{line} · {len(self.agent.messages)} messages", style="cyan", markup=False)


def _history() -> FileHistory | InMemoryHistory:
    """The persisted line history, 0600 and redacted; in memory when the state directory cannot be written."""
    try:
        return RedactedHistory(history_path())
    except StoreError:
        return InMemoryHistory()


def start_repl(
    keeper: SessionKeeper, provider: Provider, store: SessionStore, workspace: Path, model: str
) -> int:
    """Open the interactive session on the keeper's conversation; returns the exit status."""
    from aforo.cli.subcommands import sessions_main

    # Every line the REPL prints may carry text from the model, a tool or a server: sanitized.
    console = safe_console()
    commands = Commands(
        keeper=keeper,
        provider=provider,
        store=store,
        workspace=workspace,
        model=model,
        console=console,
        list_sessions=lambda: sessions_main(["--limit", "10"]),
    )
    return Repl(keeper, commands, console).loop()
