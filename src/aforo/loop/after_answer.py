"""What a run does once an answer is acted on: go on (telling why, when it changed what it asks for)
or end, named.

An answer that only repeats calls whose results the model has is not kept: the next request allows only
the answer, and a model that still calls tools then ends the run `no_progress` (`time_budget` past the
deadline, `max_turns` on the last turn). An answer that says nothing (`...`, the reply format copied
back) is not kept either: the model is asked once more, for an answer that must start with a letter or a
digit, and one that says nothing again ends `empty_answer`.
"""

from __future__ import annotations

from aforo.loop.budgets import late_note
from aforo.loop.reading import ReadReply
from aforo.loop.run import End, RunState, out_of_turns
from aforo.loop.tool_batch import Batch

# How much of an answer that said nothing its ending quotes.
SAID_CHARS = 40


def next_step(
    batch: Batch, read: ReadReply, run: RunState, *, last: bool, max_turns: int, reserve: int, seconds: float
) -> str | None:
    """The step to tell when the run goes on asking for something else, None when it simply goes on;
    raises `End` when the run ends here. `last`: this was the last turn; `reserve`: the output limit."""
    if batch.ran:
        if not batch.summarised:
            return None
        run.answer_only = True  # nothing new was asked: the next request allows only the answer
        return f"asked again for what the compaction summarised ({batch.summarised}); answer requested"
    if batch.said_nothing:
        said = read.reply.text.strip()[:SAID_CHARS]
        if run.worded:
            raise End("empty_answer", f"the model's answer said nothing ({said!r}), twice")
        run.worded = True  # asked once more, for an answer that starts with a letter or a digit
        return f"the answer said nothing ({said!r}); asked again for one in words"
    if batch.stalled and run.answer_only:
        if last:
            raise out_of_turns(max_turns)
        if run.late:
            raise End("time_budget", f"the model kept calling tools ({batch.stalled}) {late_note(seconds)}")
        raise End("no_progress", f"the model kept calling tools ({batch.stalled}) when asked to answer")
    if batch.stalled:
        run.answer_only = True  # the next request allows only the answer
        return f"asked again for results it has ({batch.stalled}); answer requested"
    end = read.reply.end
    if end.stop_reason == "max_tokens":
        raise End("max_tokens", f"the answer hit the output limit of {reserve} tokens", read.answer)
    if end.stop_reason == "refusal":
        raise End("refusal", "the model refused to answer", read.answer)
    raise End("end_turn", answer=read.answer)
