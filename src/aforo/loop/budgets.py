"""The run's budgets of turns and of time: on its last turn, and past its deadline, only an answer may
come. Past the deadline it is asked for once (and once more if it says nothing); a run still going
after that ends `time_budget`.

The time is a bound on the whole question (issue 41: two runs went 55 s past the 150 s budget, a call
started before it streaming on, then the answer's): a step that comes back after the deadline with calls
has them not run, the answer is asked for at once, and at `hard_end` (the budget and its
`late_answer_share` more) any call still streaming is stopped, its answer kept as far as it got."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aforo.limits import LATE_ANSWER_SHARE, RUN_SECONDS, SUMMARY_TIME_SHARE
from aforo.loop.run import End, RunState

# Turns past the time budget: the answer asked for, and once more if it said nothing.
LATE_TURNS = 2


@dataclass(frozen=True)
class RunBudget:
    """What one question may take: model calls (--max-turns) and seconds (--time-budget); on its last
    turn, and past its seconds, the model is asked to answer from what it has."""

    turns: int = 25
    seconds: float = RUN_SECONDS.value


def late_note(seconds: float) -> str:
    return f"when asked to answer after the time budget of {seconds:g} s (raise --time-budget)"


def late_seconds(seconds: float) -> float:
    """The time the answer asked for after a budget of `seconds` has."""
    return seconds * LATE_ANSWER_SHARE.value


def spent_during(seconds: float) -> str:
    return (
        f"the time budget of {seconds:g} s was spent while the model chose its calls; none is run; "
        "answer requested"
    )


def stopped_note(seconds: float) -> str:
    return (
        f"the answer was stopped at the end of the question's time: the time budget of {seconds:g} s and "
        f"{late_seconds(seconds):g} s for the answer asked for after it (raise --time-budget)"
    )


def past_summary_share(clock: Callable[[], float], run: RunState, seconds: float) -> bool:
    """A compaction's summary has had its share of the question's time (a budget of `seconds`)."""
    return clock() >= run.deadline - seconds * (1 - SUMMARY_TIME_SHARE.value)


def past_hard_end(clock: Callable[[], float], run: RunState) -> bool:
    """The question's time is up: its budget and the answer's share after it."""
    return clock() >= run.hard


def before_turn(run: RunState, turn: int, budget: RunBudget, now: float) -> list[str]:
    """Before `turn` starts at `now`: the steps to tell where a budget is spent just now (the answer is
    asked for); raises `End` when the late turns are used up."""
    steps, max_turns, seconds = [], budget.turns, budget.seconds
    if now >= run.hard:
        raise End("time_budget", f"no time was left for an answer {late_note(seconds)}")
    if now >= run.deadline:
        run.late += 1
        if run.late > LATE_TURNS:
            raise End("time_budget", f"no answer came {late_note(seconds)}")
        if not run.answer_only:
            run.answer_only = True
            steps.append(f"the time budget of {seconds:g} s is spent; answer requested")
    if turn == max_turns and not run.answer_only and max_turns > 1:
        run.answer_only = True  # the last call: an answer from what it has, rather than none
        steps.append(f"the last of {max_turns} model calls (--max-turns); answer requested")
    return steps
