"""What a run does once an answer is acted on: go on (telling why, when it changed what it asks for)
or end, named.

An answer that only repeats calls whose results the model has is not kept: the next request allows only
the answer, and a model that still calls tools then ends the run `no_progress` (`time_budget` past the
deadline, `max_turns` on the last turn). An answer that says nothing (`...`, the reply format copied
back) is not kept either: the model is asked once more, for an answer that must start with a letter or a
digit, and one that says nothing again ends `empty_answer`. An answer that is one of aforo's own formats
(`loop.copied`: a list of places, `Read a.py`, the pre-search's heading) is treated the same way, and
the request that asks again says, after the conversation, to answer in words.

An answer that ends the run has its citations checked first (`aforo.citations`): where one does not
hold, the answer stays in the conversation, followed by the exact facts, and the model is asked once to
write it again (no tool allowed). What still does not hold after that is carried by the run's result,
each citation with whether it held, for the user's screen to mark. No correction is asked for on the
last turn or past the time budget, nor for an answer cut at the output limit: its citations are marked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aforo.citations import Verdict
from aforo.context.conversation import Conversation
from aforo.context.ledger import CORRECTION, IN_WORDS
from aforo.events import Cited
from aforo.loop.budgets import RunBudget, late_note
from aforo.loop.reading import ReadReply
from aforo.loop.record_check import read_correction
from aforo.loop.run import End, RunState, out_of_turns
from aforo.loop.tool_batch import Batch
from aforo.messages import Message

# How much of an answer that said nothing its ending quotes.
SAID_CHARS = 40
# Checks an answer's citations (aforo.loop.cited.Checker).
CitationCheck = Callable[[str], Sequence[Verdict]]


def next_step(
    batch: Batch,
    read: ReadReply,
    run: RunState,
    conversation: Conversation,
    *,
    last: bool,
    budget: RunBudget,
    reserve: int,
    check: CitationCheck | None = None,
) -> str | None:
    """The step to tell when the run goes on asking for something else, None when it simply goes on;
    raises `End` when the run ends here. `last`: this was the last turn; `reserve`: the output limit;
    `check`: what checks the citations of the answer that ends the run (None: none is checked)."""
    if batch.ran:
        if not batch.summarised:
            return None
        run.answer_only = True  # nothing new was asked: the next request allows only the answer
        return f"asked again for what the compaction summarised ({batch.summarised}); answer requested"
    if batch.said_nothing:
        said = read.reply.text.strip()[:SAID_CHARS]
        what = f"was {batch.copied}, aforo's own format" if batch.copied else "said nothing"
        if run.worded:
            raise End("empty_answer", f"the model's answer {what} ({said!r}), twice")
        run.worded = True  # asked once more, for an answer that starts with a letter or a digit
        if batch.copied:
            conversation.append(Message.user(in_words(batch.copied, run.question)))
        return f"the answer {what} ({said!r}); asked again for one in words"
    if batch.stalled and run.answer_only:
        if last:
            raise out_of_turns(budget.turns)
        if run.late:
            late = late_note(budget.seconds)
            raise End("time_budget", f"the model kept calling tools ({batch.stalled}) {late}")
        raise End("no_progress", f"the model kept calling tools ({batch.stalled}) when asked to answer")
    if batch.stalled:
        run.answer_only = True  # the next request allows only the answer
        return f"asked again for results it has ({batch.stalled}); answer requested"
    end = read.reply.end
    if end.stop_reason == "max_tokens":  # shown as far as it came: its citations marked, none corrected
        limit = f"the answer hit the output limit of {reserve} tokens"
        raise End("max_tokens", limit, read.answer, marked(read.answer, check))
    if end.stop_reason == "refusal":
        raise End("refusal", "the model refused to answer", read.answer)
    return _checked(read.answer, run, conversation, check, last=last)


def in_words(copied: str, question: str) -> str:
    """What the request after a copied format says: the question again, to answer in words."""
    asked = f": {question}" if question else "."
    return f"{IN_WORDS} {copied} as aforo shows them{asked}"


def _checked(
    answer: str, run: RunState, conversation: Conversation, check: CitationCheck | None, *, last: bool
) -> str:
    """Ask once for a correction of the citations that do not hold, or end the run with each marked."""
    verdicts = tuple(check(answer)) if check is not None and answer else ()
    wrong = [v for v in verdicts if not v.held]
    # What does not hold, first the citations, then the files read as aforo's record has them.
    told: str | None
    if wrong:
        told = correction(wrong)
        step = f"the answer cites what does not hold ({_facts(wrong)}); asked once to correct it"
    else:
        told = read_correction(answer, run.files_read) if run.files_read is not None and answer else None
        step = "the answer does not name exactly the files aforo's record says were read; asked once again"
    if told and not (run.corrected or last or run.late):
        run.corrected, run.answer_only = True, True
        conversation.append(Message.user(told))
        return step
    raise End("end_turn", answer=answer, citations=tuple(_cited(v) for v in verdicts))


def marked(answer: str, check: CitationCheck | None) -> tuple[Cited, ...]:
    """Each citation of `answer`, checked."""
    return tuple(_cited(v) for v in check(answer)) if check is not None and answer else ()


def correction(wrong: Sequence[Verdict]) -> str:
    """The user's turn that asks for the correction, with each exact fact."""
    facts = "\n".join(f"- {v.citation.text}: {v.fact}." for v in wrong)
    return (
        f"{CORRECTION}; these do not hold:\n"
        f"{facts}\nWrite your whole answer again, corrected: cite only files and lines that exist."
    )


def _facts(wrong: Sequence[Verdict]) -> str:
    return "; ".join(v.fact for v in wrong)


def _cited(v: Verdict) -> Cited:
    c = v.citation
    return Cited(text=c.text, path=c.path, line=c.start, end=c.end, name=c.name, held=v.held, fact=v.fact)
