"""The run's budgets of turns and of time: on its last turn, and past its deadline, only an answer may
come. Past the deadline it is asked for once (and once more if it says nothing); a run still going
after that ends `time_budget`."""

from __future__ import annotations

from aforo.loop.run import End, RunState

# Turns past the time budget: the answer asked for, and once more if it said nothing.
LATE_TURNS = 2


def late_note(seconds: float) -> str:
    return f"when asked to answer after the time budget of {seconds:g} s (raise --time-budget)"


def before_turn(run: RunState, turn: int, max_turns: int, now: float, seconds: float) -> list[str]:
    """Before `turn` starts at `now`: the steps to tell where a budget is spent just now (the answer is
    asked for); raises `End` when the late turns are used up."""
    steps = []
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
