"""Generate the silent-truncation corpus (seeded, so the committed JSON is reproducible).

    .venv/bin/python bench/overflow_corpus/generate.py

No tokenizer model is available offline, so "true" token counts are synthetic: each piece of content
gets a tokens-per-estimated-token ratio drawn from the range measured for its kind (seed §4 and common
BPE behaviour: code 1.00-1.06, JSON 1.45-1.48, prose 0.9-1.1, whitespace-heavy 0.20-0.24, CJK 2-3,
Cyrillic 1.4-2.0, prose with emoji 1.2-1.8), times 1.5 % gaussian noise. The raw estimate is aforo's:
4 characters per token plus 4 tokens of framing per message; the true framing is 5 tokens per message
plus 3 for the generation prompt.

Each session is a list of requests (turns). Per turn: `reported` (what the server says it read),
`estimate` (aforo's raw estimate of the request), `new_estimate` (raw estimate of the messages added
since the previous request), `new_tokens` (their true count), `probe` (what the governor's probe of
the new part would measure: the true count give or take 2 tokens of framing), `true_tokens` (the true
count of the whole request, what an exact counter gives) and `truncated`. Servers simulated:

- ok: never truncates (windows large enough).
- keep_newest: Ollama, drops the oldest non-system messages until the rest fits; if even the newest
  message does not fit, its runner cuts tokens and reports exactly the window.
- first_crossing_small: keep_newest whose crossing turn overshoots the window by less than the first
  user message, so only the user's request is dropped and the report still grows.
- plateau / collapse: the fake provider of SPEC §1.3 (floor(window*0.9), 63).
- telltale_window / telltale_half: reports exactly the window, or window/2 + 2 (context shift).
- first_request_collapse: one huge first request reported as 63 (the seed's measurement).
- blind_spots.json: first_crossing_small at windows that are neither common nor believed.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SEED = 20240605
HERE = Path(__file__).parent

RATIOS = {
    "code": (1.00, 1.06),
    "json": (1.45, 1.48),
    "prose": (0.90, 1.10),
    "whitespace": (0.20, 0.24),
    "cjk": (2.0, 3.0),
    "cyrillic": (1.4, 2.0),
    "emoji": (1.2, 1.8),
}
RESULT_KINDS = ("code", "json", "prose", "whitespace", "cjk", "cyrillic", "emoji", "mixed")
RESULT_WEIGHTS = (5, 3, 2, 1, 1, 1, 1, 2)
EST_FRAMING = 4
TRUE_FRAMING = 5
GEN_PROMPT = 3
COMMON = (2048, 4096, 8192, 16384)
UNCOMMON = (3000, 5000, 6000, 10000, 12000, 24000)


@dataclass
class Msg:
    est: int
    true: int
    system: bool = False


def piece(rng: random.Random, kind: str, est: int) -> tuple[int, int]:
    lo, hi = RATIOS[kind]
    ratio = rng.uniform(lo, hi) * min(1.05, max(0.95, rng.gauss(1.0, 0.015)))
    return est, max(1, round(est * ratio))


def message(rng: random.Random, parts: list[tuple[str, int]], system: bool = False) -> Msg:
    pieces = [piece(rng, kind, est) for kind, est in parts]
    return Msg(sum(e for e, _ in pieces) + EST_FRAMING, sum(t for _, t in pieces) + TRUE_FRAMING, system)


def tool_result(rng: random.Random, scale: float) -> Msg:
    kind = rng.choices(RESULT_KINDS, RESULT_WEIGHTS)[0]
    size = round(math.exp(rng.uniform(math.log(30), math.log(2500))) * scale)
    if kind != "mixed":
        return message(rng, [(kind, size)])
    kinds = rng.sample([k for k in RATIOS if k != "mixed"], rng.randint(2, 3))
    return message(rng, [(k, max(5, size // len(kinds))) for k in kinds])


def opening(rng: random.Random, user_est: int | None = None) -> list[Msg]:
    system = message(rng, [("prose", rng.randint(150, 600)), ("json", rng.randint(300, 900))], system=True)
    lang = rng.choices(["prose", "cjk", "cyrillic"], [6, 1, 1])[0]
    return [system, message(rng, [(lang, user_est or rng.randint(6, 60))])]


def new_part(rng: random.Random, scale: float) -> list[Msg]:
    assistant = message(rng, [("prose", rng.randint(10, 80)), ("json", rng.randint(10, 60))])
    return [assistant] + [tool_result(rng, scale) for _ in range(rng.choice((1, 1, 1, 2, 3)))]


def total(msgs: list[Msg]) -> tuple[int, int]:
    return sum(m.est for m in msgs), sum(m.true for m in msgs) + GEN_PROMPT


def keep_newest(msgs: list[Msg], window: int) -> int:
    """Ollama: keep system messages and the newest messages that fit; the last one always."""
    system = [m for m in msgs if m.system]
    rest = [m for m in msgs if not m.system]
    for start in range(len(rest) - 1):
        kept = total(system + rest[start:])[1]
        if kept <= window:
            return kept
    return window  # even the newest message alone is too long: the runner cuts tokens to the window


def served(mode: str, msgs: list[Msg], window: int | None) -> tuple[int, bool]:
    true = total(msgs)[1]
    if window is None or true <= window:
        return true, False
    reported = {
        "plateau": math.floor(window * 0.9),
        "collapse": 63,
        "first_request_collapse": 63,
        "telltale_window": window,
        "telltale_half": window // 2 + 2,
    }.get(mode)
    return (reported if reported is not None else keep_newest(msgs, window)), True


def turn(rng: random.Random, msgs: list[Msg], new: list[Msg], mode: str, window: int | None) -> dict:
    est, true = total(msgs)
    reported, truncated = served(mode, msgs, window)
    new_tokens = sum(m.true for m in new)
    return {
        "reported": reported,
        "estimate": est,
        "new_estimate": sum(m.est for m in new),
        "new_tokens": new_tokens,
        "probe": max(1, new_tokens + rng.randint(-2, 2)),
        "true_tokens": true,
        "truncated": truncated,
    }


def fit_crossing(rng: random.Random, msgs: list[Msg], new: list[Msg], window: int) -> bool:
    """Resize the last tool result so the request overshoots the window by less than the user message."""
    user = msgs[1].true
    if user < 2:
        return False
    target = window + rng.randint(1, user - 1)
    rest = total(msgs)[1] + sum(m.true for m in new[:-1])
    need = target - rest - TRUE_FRAMING
    if need < 10:
        return False
    kind = rng.choice(["code", "json", "prose", "whitespace", "cjk"])
    lo, hi = RATIOS[kind]
    new[-1] = Msg(round(need / ((lo + hi) / 2)) + EST_FRAMING, need + TRUE_FRAMING)
    return True


def session(
    rng: random.Random, name: str, mode: str, window: int | None, believed: int | None
) -> dict | None:
    scale = rng.uniform(0.3, 1.5)
    if mode == "first_request_collapse":
        msgs = opening(rng, user_est=rng.randint(3975, 17701))
    else:
        msgs = opening(rng)
    turns = [turn(rng, msgs, msgs, mode, window)]
    if turns[0]["truncated"] and mode != "first_request_collapse":
        return None
    # aforo keeps prompts under the window it believes (it clears and compacts before), so do clean ones.
    ceiling = 0.75 * believed if believed else 40000
    target = rng.uniform(min(1500, ceiling), ceiling) if window is None else math.inf
    after = rng.randint(0, 4)
    while len(turns) < 60:
        new = new_part(rng, scale)
        crossing = window is not None and total(msgs + new)[1] > window and not turns[-1]["truncated"]
        if (
            crossing
            and window
            and mode == "first_crossing_small"
            and not fit_crossing(rng, msgs, new, window)
        ):
            return None
        msgs = msgs + new
        turns.append(turn(rng, msgs, new, mode, window))
        if window is None and total(msgs)[1] >= target:
            break
        if turns[-1]["truncated"]:
            if after == 0:
                break
            after -= 1
    first = next((i for i, t in enumerate(turns) if t["truncated"]), None)
    if window is not None and first is None:
        return None
    return {
        "name": name,
        "mode": mode,
        "server_window": window,
        "believed_window": believed,
        "first_truncated": first,
        "turns": turns,
    }


Picker = Callable[[random.Random], tuple[str, int | None, int | None]]


def build(rng: random.Random, prefix: str, count: int, pick: Picker) -> list[dict]:
    out: list[dict] = []
    while len(out) < count:
        mode, window, believed = pick(rng)
        made = session(rng, f"{prefix}-{len(out):03d}", mode, window, believed)
        if made is not None:
            out.append(made)
    return out


def pick_ok(rng: random.Random) -> tuple[str, None, int | None]:
    return "ok", None, rng.choice([None, 4096, 8192, 32768, 131072])


def pick_truncated(rng: random.Random) -> tuple[str, int, int | None]:
    mode = rng.choices(
        [
            "keep_newest",
            "first_crossing_small",
            "plateau",
            "collapse",
            "telltale_window",
            "telltale_half",
            "first_request_collapse",
        ],
        [6, 6, 2, 2, 1, 1, 1],
    )[0]
    window = 4096 if mode == "first_request_collapse" else rng.choice(COMMON)
    believed = rng.choice([None, 32768, 131072, window, 2 * window])
    return mode, window, believed


def pick_blind(rng: random.Random) -> tuple[str, int, int | None]:
    return "first_crossing_small", rng.choice(UNCOMMON), 32768


def write(path: Path, sessions: list[dict]) -> None:
    lines = ",\n".join(json.dumps(s, separators=(",", ":")) for s in sessions)
    path.write_text("[\n" + lines + "\n]\n", encoding="utf-8")


def main(out: Path = HERE) -> None:
    rng = random.Random(SEED)
    write(out / "non_truncated.json", build(rng, "ok", 150, pick_ok))
    write(out / "truncated.json", build(rng, "trunc", 300, pick_truncated))
    write(out / "blind_spots.json", build(rng, "blind", 40, pick_blind))


if __name__ == "__main__":
    main()
