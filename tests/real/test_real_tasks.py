"""A fast subset of the real-model task suite (bench/real_tasks.py, `make bench-real`): the model keeps
working past its first call, never copies aforo's own text, and aforo's truncation checks do not cost
the conversation its place in the server's prompt cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from real_tasks import AFORO, TASKS, Task, run_task
from recording_proxy import Recorded, RecordingProxy

pytestmark = pytest.mark.real


def task(name: str) -> Task:
    return next(t for t in TASKS if t.name == name)


def test_three_files_are_read_in_one_constrained_step_and_the_run_answers(
    real_base_url: str, real_model: str
) -> None:
    row = run_task(task("three-files"), real_base_url, real_model, no_counter=False)
    assert row.files_ok, row.answers  # alpha.py, beta.py and gamma.py: not one file, then prose
    assert row.endings == ["end_turn"] and row.answers[0].strip()
    assert row.copied == 0


def test_follow_ups_each_read_their_file_answer_and_none_copies_aforo(
    real_base_url: str, real_model: str
) -> None:
    follow = task("follow-ups")
    short = Task(follow.name, follow.workspace, follow.asks[:3], follow.what)
    row = run_task(short, real_base_url, real_model, no_counter=False)
    assert row.files_ok and row.endings == ["end_turn"] * 3
    assert row.copied == 0, row.answers  # the measurement: 18 of 18 copied a hint line
    # 4, 7 and 2 functions: with Read's "(4 functions: …)" the model copies the count; without it, it
    # answered `1` to each (bench-real, 2026-12-03).
    assert row.correct >= 2, row.answers


# The ten files with Read's outlines report 2 066 prompt tokens: past a 2048 window, which leaves no
# window the step could have crossed unseen and so nothing to check. Nine, without the longest
# (mod06.py), report 1 743. Named one by one: asked for "the nine files mod00.py … mod08.py", the
# model read all ten.
NINE_FILES = (
    "Read mod00.py, mod01.py, mod02.py, mod03.py, mod04.py, mod05.py, mod07.py, mod08.py and mod09.py, "
    "then tell me which file is the longest"
)


def ten_files(
    server_url: str, prompt: str = task("ten-files").asks[0].prompt, **proxy: Any
) -> tuple[subprocess.CompletedProcess[str], list[Recorded], dict[str, Any]]:
    """The ten-file task (or another `prompt` on its files) with no counter and no window, from an empty
    prompt cache, through a recording proxy (`proxy`: how it plays another server). What aforo did, what
    the server evaluated, the result."""
    ws = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "modules"
    # No pre-search: it would count the files' lines before the first call, and these tests are about
    # the reads of one step and what the governor checks after them.
    args = ["-w", str(ws), "-m", "m", "--server", "openai", "--no-search"]
    args += ["--tool-mode", "constrained", "--json"]
    with RecordingProxy(server_url, **proxy) as recording, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "AFORO_HOME": tmp, "XDG_CONFIG_HOME": tmp}
        httpx.post(f"{server_url}/slots/0?action=erase", timeout=30)
        done = subprocess.run(
            [AFORO, *args, "--base-url", f"{recording.url}/v1", prompt],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=False,
        )
        records = recording.take()
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    result = next((e for e in lines if e["type"] == "result"), {})
    return done, records, result


@pytest.mark.xfail(
    strict=True,
    reason="known: the check of one step (~940 tokens, sharing 3 with the conversation) takes llama-server's "
    "one slot; the server saves the conversation in host memory but restores it only for a request that "
    "keeps >= 25 % of it, and the clearing after the reads rewrote it from token 360 of 1 606 (22 %): the "
    "next chat finds 3 tokens cached, 357 fewer than without the check. Branch `probe` runs the engine "
    "with two slots (-np 2, +98 MB for the 0.5B), measured to fix it; not adopted before the real-code "
    "suite is measured again with it",
)
def test_a_truncation_check_leaves_the_conversation_in_the_cache(real_server_url: str) -> None:
    # A server that says nothing of its prompt cache: the nine files read in one step may have crossed a
    # 2048 window, so they are measured with a probe; the request after it must still find the
    # conversation in llama-server's cache.
    done, records, _ = ten_files(real_server_url, NINE_FILES, hide_cache=True)
    assert done.returncode == 0, done.stderr[-2000:]
    kinds = [r.kind for r in records]
    assert "verify" in kinds, kinds
    after = next(i for i, k in enumerate(kinds) if k == "verify" and "chat" in kinds[i:])
    before_chat = [r for r in records[:after] if r.kind == "chat"][-1]
    next_chat = next(r for r in records[after:] if r.kind == "chat")
    # Everything the conversation had evaluated before the probe is reused after it.
    assert next_chat.cache_n >= before_chat.cache_n + before_chat.prompt_n - 8, records


def test_the_servers_cache_hit_settles_the_same_step_without_a_check(real_server_url: str) -> None:
    # llama-server reports how much of each prompt came from its cache: all of the previous prompt.
    done, records, result = ten_files(real_server_url)
    assert done.returncode == 0 and result["ending"] == "end_turn", done.stderr[-2000:]
    # No check of any step. A compaction may come (no window given: 4 096 assumed, and the ten reads
    # with the system prompt pass its threshold); it is the governor's own request, not a check.
    assert "verify" not in [r.kind for r in records], records
    assert records[1].cache_n >= records[0].prompt_n, records


def _drop_the_task(chats: list[bool]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Past 3 000 characters, the conversation's first turn after the system prompt goes (the user's
    request), as a server that drops the oldest turns to fit does; aforo's checks carry no system
    prompt and are smaller than that window. `chats` gets, for each chat request, whether it was cut."""

    def rewrite(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if messages[0]["role"] != "system":
            return body
        cut = sum(len(str(m.get("content"))) for m in messages) > 3000
        chats.append(cut)
        if cut:
            body["messages"] = [messages[0], *messages[2:]]
        return body

    return rewrite


def test_a_server_that_drops_the_request_is_caught_though_it_reports_its_cache(real_server_url: str) -> None:
    # The cache hit then stops at the system prompt: the step is measured and the loss is found.
    cut: list[bool] = []
    done, records, result = ten_files(real_server_url, rewrite=_drop_the_task(cut))
    assert result["ending"] == "context_overflow" and done.returncode != 0, (result, done.stderr[-2000:])
    assert "verify" in [r.kind for r in records], records
    # The first request the server cut found less of itself in the cache than the whole request before
    # it (the cut turn is gone from its start): a batch of reads runs as far as the window holds, so
    # that is not always the second request.
    chats = [r for r in records if r.kind == "chat"]
    first = cut.index(True)
    before = chats[first - 1]
    assert first >= 1 and chats[first].cache_n < before.cache_n + before.prompt_n, (cut, records)


def test_a_compactions_summary_is_read_from_the_servers_cache(real_server_url: str, tmp_path: Path) -> None:
    """The summary of a compaction is asked as one more turn of the conversation, so llama-server reads
    it from its cache: asked under its own system prompt it found 4 tokens of itself there and read the
    rest again (the 1.5B, 2 608 tokens in 99 s, past its share of the question's time)."""
    ws = tmp_path / "shop"
    (ws / "app").mkdir(parents=True)
    body = "".join(f"def handler_{n}(request):\n    return {{'status': {200 + n % 5}}}\n" for n in range(150))
    (ws / "app" / "handlers.py").write_text(body)
    (ws / "app" / "models.py").write_text("class Order:\n    total = 0\n\n\nclass Customer:\n    name = ''\n")
    # Compact as soon as the first answer is in: the second question starts with a compaction.
    (ws / ".aforo.toml").write_text("[policy]\nclear_at = 0.3\ncompact_at = 0.3\n")
    with RecordingProxy(real_server_url) as recording, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "AFORO_HOME": tmp, "XDG_CONFIG_HOME": tmp}
        args = [AFORO, "-w", str(ws), "--base-url", f"{recording.url}/v1", "-m", "m", "--json"]

        def ask(*more: str) -> list[dict[str, Any]]:
            done = subprocess.run(
                [*args, *more], capture_output=True, text=True, env=env, timeout=900, check=False
            )
            return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

        first = ask("Read app/handlers.py: which status does handler_7 return?")
        assert any(e["type"] == "result" and e["ending"] == "end_turn" for e in first), first[-3:]
        second = ask("--resume", "Which classes does app/models.py define?")
        records = recording.take()
    assert [e["action"] for e in second if e["type"] == "context"][-1:] == ["compacted"], [
        (e["type"], e.get("context"), e.get("action")) for e in first + second
    ]
    assert not [e for e in second if e["type"] == "warning"], second
    # Its counts (`/v1/chat/completions/input_tokens`) read no prompt; the summary itself does.
    summaries = [r for r in records if r.kind == "summary" and r.prompt_n + r.cache_n > 0]
    assert summaries, records
    # Most of each came from the cache (measured: 759 of 1 116 tokens; 4 when it was a transcript).
    assert all(s.cache_n >= s.prompt_n for s in summaries), summaries
