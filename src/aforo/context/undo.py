"""Which checkpoint `/undo` restores: one transformation further back on every call.

A user who compacted, then cleared, then typed /undo twice expects to be back before the compaction,
not before the clearing twice. So the governor remembers the checkpoint it restored last and the next
undo starts below it. Checkpoints that would restore what the user already has (one taken before a
compaction that was then rejected, say) are skipped: restoring them would change nothing. Before any
restore the conversation as it stands is checkpointed too, as `UNDO_REASON`, so an undo never loses
turns; those safety checkpoints are never picked by a plain /undo, only by name (`/undo ID`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aforo.messages import Message

UNDO_REASON = "undo"


@dataclass(frozen=True)
class Restore:
    checkpoint: str
    reason: str
    messages: tuple[Message, ...]


def choose(
    history: Iterable[tuple[str, str, list[Message]]],
    current: tuple[Message, ...],
    *,
    below: str | None = None,
    wanted: str | None = None,
) -> Restore | None:
    """The checkpoint to restore from `history` (newest first), or None when there is nothing to undo.

    `below`: the checkpoint the previous undo restored; only older ones qualify. `wanted`: a checkpoint
    named by the user (its full id or the unique end of it), whatever its reason or age.
    """
    passed = below is None
    for cp_id, reason, messages in history:
        if wanted is not None:
            if cp_id == wanted or cp_id.endswith(f"-{wanted}"):
                return Restore(cp_id, reason, tuple(messages))
            continue
        if not passed:
            passed = cp_id == below
            continue
        if reason == UNDO_REASON or tuple(messages) == current:
            continue
        return Restore(cp_id, reason, tuple(messages))
    return None
