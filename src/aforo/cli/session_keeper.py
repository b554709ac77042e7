"""Keep the conversation on disk while it happens, so `aforo --resume` survives an exit, a crash or a kill.

The keeper sits in the event stream between the agent and the renderer: after any event that follows a
change of the conversation it saves the session (an atomic replace, so a kill leaves the previous or the
new state). The prompt is saved before the run starts, so a kill while the model thinks loses nothing
the user typed. A saved conversation may end with tool calls whose results never came (killed while a
tool ran or the next call was in flight): loading closes them with error results, as the agent does
after a cancel, so the model never sees an action without its consequence. The open session's record is
where its id lives: checkpoints and telemetry ask the keeper for it (`session_id`).

The session's trail (context/trail) is saved with it, and given back to the conversation on resume: a
session saved before aforo kept one gets the trail its messages still show.

Saves happen when the conversation changed (a new tuple): the prompt, each answer, each batch of tool
results, a transformation, the end of the run; streamed text changes nothing, so it costs no save.
The keeper holds the open session's lock from the moment it opens it: a second aforo on the same
session stops with `SessionBusy` instead of writing over this one's turns.
"""

from __future__ import annotations

from pathlib import Path

from aforo.context.trail import Trail
from aforo.errors import StoreError
from aforo.events import Event, EventSink, Warning
from aforo.loop.agent import Agent
from aforo.messages import Message
from aforo.store.sessions import SessionLock, SessionRecord, SessionStore

LATEST = "latest"
INTERRUPTED_RESULT = "[aforo stopped before this tool call finished; run the tool again if you need it.]"


def find_session(store: SessionStore, wanted: str, workspace: Path) -> tuple[SessionRecord, list[str]]:
    """The session to resume (`wanted` is an id or LATEST: the newest of `workspace`) and warnings.

    Raises StoreError naming the file when it is corrupt: a broken session is never silently used.
    """
    if wanted != LATEST:
        return store.load(wanted), []
    record, notes = store.latest(workspace)
    if record is None:
        raise StoreError(
            f"no saved session for the workspace {workspace.resolve()}; `aforo sessions` lists them, "
            "and `aforo --resume ID` resumes one from anywhere." + "".join(f" Also: {n}." for n in notes)
        )
    return record, notes


def mismatch_warnings(rec: SessionRecord, workspace: Path, model: str) -> list[str]:
    """Say so before continuing a conversation held with another workspace or model."""
    out = []
    if rec.workspace and rec.workspace != str(workspace.resolve()):
        out.append(
            f"session {rec.id} was held in the workspace {rec.workspace}; continuing it in {workspace}: "
            "paths the model saw may not exist here (pass --workspace to use the original)."
        )
    if rec.model and rec.model != model:
        out.append(
            f"session {rec.id} was held with the model {rec.model}; continuing it with {model}: "
            "its answers and token counts may differ."
        )
    return out


def trail_of(record: SessionRecord) -> tuple[Trail, str | None]:
    """The trail saved with `record`, or one rebuilt from its messages when it has none or a broken one
    (then with a note saying so: what the messages show is kept either way)."""
    if not record.trail:
        return Trail.of(record.messages), None
    try:
        return Trail.from_dict(record.trail), None
    except ValueError as exc:
        note = f"session {record.id}'s trail is unreadable ({exc}); rebuilt from its conversation"
        return Trail.of(record.messages), note


class SessionKeeper:
    """An EventSink that forwards to `inner` and saves the session whenever the conversation changed."""

    def __init__(self, store: SessionStore, record: SessionRecord, inner: EventSink) -> None:
        """Raises SessionBusy (a StoreError) when another process has `record` open."""
        self.store = store
        self._lock, record = self._open(record)
        self.record = record
        self.inner = inner
        self.agent: Agent | None = None
        # The conversation as last saved: a change makes a new tuple, so identity tells.
        self._saved: tuple[Message, ...] | None = None
        self._where = (record.workspace, record.model, record.base_url)
        self._failed = False

    def attach(self, agent: Agent, *, workspace: Path, model: str, base_url: str) -> None:
        """Hand the (repaired) saved conversation to `agent` and follow it from now on."""
        self.agent = agent
        self._where = (str(workspace.resolve()), model, base_url)
        self.switch(self.record)

    def session_id(self) -> str:
        """The open session: checkpoints and telemetry follow it, so /undo restores this session's."""
        return self.record.id

    def switch(self, record: SessionRecord) -> None:
        """Continue `record` here: from now on it is saved with this workspace, model and server.

        Raises SessionBusy, with the open session unchanged, when another process has `record` open."""
        if record.id != self._lock.session_id:
            taken, record = self._open(record)
            self._lock.release()
            self._lock = taken
        self.record = record
        self._saved = None
        record.workspace, record.model, record.base_url = self._where
        if self.agent is not None:
            governor = self.agent.governor
            trail, note = trail_of(record)
            governor.conversation.restore(record.messages, trail)
            if note:
                self.inner(Warning(message=note))
            governor.conversation.close_pending(INTERRUPTED_RESULT)
            record.window = governor.window

    def _open(self, record: SessionRecord) -> tuple[SessionLock, SessionRecord]:
        """Lock `record`'s session, then read it again: a process that held it until now may have
        saved a turn since `record` was read, and writing the older copy would lose that turn."""
        lock = self.store.lock(record.id)
        try:
            if self.store.path(record.id).exists():
                record = self.store.load(record.id)
        except BaseException:
            lock.release()
            raise
        return lock, record

    def __call__(self, event: Event) -> None:
        self.inner(event)
        if self.agent is not None and self.agent.messages is not self._saved:
            self.save()

    def begin(self, prompt: str) -> None:
        """Save the prompt before the run, so a kill before the first answer keeps it."""
        if self.agent is not None:
            self._saved = None  # what is on disk is not the conversation yet
            asked = Message.user(prompt)
            trail = self.agent.governor.conversation.trail.absorb(asked)
            self._write([*self.agent.messages, asked], self.agent.governor.window, trail)

    def save(self) -> None:
        if self.agent is not None:
            messages = self.agent.messages
            trail = self.agent.governor.conversation.trail
            written = self._write(list(messages), self.agent.governor.window, trail)
            self._saved = messages if written else None

    def _write(self, messages: list[Message], window: int, trail: Trail) -> bool:
        self.record.messages = messages
        self.record.window = window
        self.record.trail = trail.to_dict()
        try:
            self.store.save(self.record)
        except StoreError as exc:
            if not self._failed:
                self.inner(
                    Warning(message=f"The session is not being saved ({exc}); --resume will miss this run.")
                )
            self._failed = True
            return False
        return True

    def close(self) -> None:
        """Let another process open the session (the end of the process does it too)."""
        self._lock.release()
