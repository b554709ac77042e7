"""Issue 29, D3 and D4: integers no server or state file can mean, checked once, where JSON is read.

D3: a usage report with a count beyond int64 ended in an `OverflowError` from the telemetry store (exit
1, the answer not saved). Now the report is refused with a warning naming the count, and the answer is
shown, saved and the run ends well. D4: a session file holding an integer of more than 4 300 digits
(Python refuses to read one) broke `--resume` and the listing of every session with a `ValueError`
traceback; now the file is named and skipped, like any unreadable state file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from aforo import safejson
from aforo.errors import LimitExceeded
from aforo.messages import Message, MessageEnd, Request, ToolUse
from aforo.providers.ollama import OllamaProvider
from aforo.store.sessions import SessionRecord, SessionStore
from faults.server import Behave, misbehaving_app, ndjson, ok_sse, openai_chunk, sse
from support.cli import CliRun, run_cli
from support.live_server import LiveServer

ANSWER = "The answer is 42."
BEYOND_INT64 = "99999999999999999999"


@pytest.fixture
def serve() -> Iterator[object]:
    servers: list[LiveServer] = []

    def start(behave: Behave) -> str:
        live = LiveServer(misbehaving_app(behave)).__enter__()
        servers.append(live)
        return live.url

    yield start
    for live in servers:
        live.__exit__()


def answer_with_usage(usage: str) -> Behave:
    def behave(n: int) -> object:
        final = '{"id":"c","object":"chat.completion.chunk","model":"m","choices":[],"usage":' + usage + "}"
        return sse(
            [
                openai_chunk(ANSWER),
                openai_chunk(finish="stop"),
                f"data: {final}\n\n".encode(),
                b"data: [DONE]\n\n",
            ]
        )

    return behave  # type: ignore[return-value]


def run(url: str, workspace: Path, *flags: str) -> CliRun:
    args = ("-w", str(workspace), "--base-url", f"{url}/v1", "--server", "openai", "-m", "m")
    return run_cli(*args, "--context-window", "8192", *flags, "what is it?")


@pytest.mark.parametrize(
    "usage",
    [
        f'{{"prompt_tokens": 10, "completion_tokens": {BEYOND_INT64}}}',  # the issue's
        f'{{"prompt_tokens": {"7" * 400}, "completion_tokens": 2}}',  # a 400-digit prompt count
        '{"prompt_tokens": 10, "completion_tokens": 9223372036854775807}',  # int64, two turns overflow it
    ],
    ids=["20-digits", "400-digits", "int64-max"],
)
def test_a_usage_count_no_server_can_mean_is_refused_and_the_answer_kept(
    serve: object, tmp_path: Path, aforo_home: Path, usage: str
) -> None:
    url = serve(answer_with_usage(usage))  # type: ignore[operator]
    shown = run(url, tmp_path)
    assert shown.code == 0 and "Traceback" not in shown.err, shown.err
    assert ANSWER in shown.out
    assert "usage count of" in shown.err and "cannot be true" in shown.err
    again = run(url, tmp_path, "--json")  # a second run adds to the same telemetry
    assert again.code == 0, again.err
    result = again.events()[-1]
    assert result["ending"] == "end_turn" and result["answer"] == ANSWER and result["output_tokens"] == 0
    store = SessionStore(aforo_home / "sessions")
    for summary in store.list():
        assert [m.text for m in store.load(summary.id).messages] == ["what is it?", ANSWER]
    with sqlite3.connect(aforo_home / "telemetry.db") as db:
        assert db.execute("SELECT max(output_tokens) FROM events").fetchone()[0] in (None, 0)


def test_an_ollama_count_beyond_int64_is_refused_with_its_reason(serve: object) -> None:
    done = {
        "model": "m",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
    }
    line = json.dumps(done)[:-1] + f', "prompt_eval_count": 12, "eval_count": {BEYOND_INT64}}}\n'
    text = (
        json.dumps({"model": "m", "message": {"role": "assistant", "content": ANSWER}, "done": False}) + "\n"
    )
    url = serve(lambda n: ndjson([text.encode(), line.encode()]))  # type: ignore[operator]
    provider = OllamaProvider(url, "m", num_ctx=4096, version="0.12.6")
    events = list(provider.stream(Request("m", (), (), (Message.user("hi"),), 64)))
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.usage.prompt_tokens == 0 and end.usage.output_tokens == 0
    assert end.usage_refused == "a usage count of 20 digits"


def test_json_integers_past_int64_are_refused_or_kept_as_digits() -> None:
    with pytest.raises(LimitExceeded) as caught:
        safejson.loads(f'{{"n": {"9" * 5000}}}', "session file x will not be used, it")
    assert caught.value.limit.name == "json_integer" and "an integer of 5,000 digits" in str(caught.value)
    with pytest.raises(LimitExceeded):
        safejson.loads("[-9223372036854775808]")
    assert safejson.loads(f'{{"n": {BEYOND_INT64}}}', large_as_text=True) == {"n": BEYOND_INT64}
    assert safejson.loads("[9223372036854775807, -9223372036854775807, 0]") == [2**63 - 1, 1 - 2**63, 0]


def test_a_session_file_with_a_5000_digit_integer_is_named_and_skipped(
    serve: object, tmp_path: Path, aforo_home: Path
) -> None:
    store = SessionStore(aforo_home / "sessions")
    good = SessionRecord(id=SessionStore.new_id(), workspace=str(tmp_path.resolve()), model="m")
    good.messages = [Message.user("the good one"), Message.assistant("answer")]
    store.save(good)
    bad = SessionRecord(id="20990101-000000-deadbeef", workspace=str(tmp_path.resolve()), model="m")
    bad.messages = [Message.user("read"), Message("assistant", (ToolUse("c1", "Read", {"offset": 5}),))]
    store.save(bad)
    path = aforo_home / "sessions" / f"{bad.id}.json"
    path.write_text(path.read_text().replace('"offset": 5', f'"offset": {"9" * 5000}'))

    listing = run_cli("sessions", "--all")
    assert listing.code == 0 and "Traceback" not in listing.err, listing.err
    assert good.id in listing.out
    assert bad.id in listing.out and "unreadable" in listing.out and "json_integer" in listing.out

    url = serve(lambda n: ok_sse("resumed fine"))  # type: ignore[operator]
    flags = ("-w", str(tmp_path), "--base-url", f"{url}/v1", "--server", "openai", "-m", "m")
    direct = run_cli(*flags, "--resume", bad.id, "and?")
    assert direct.code == 2 and "Traceback" not in direct.err, direct.err
    assert str(path) in direct.err and "json_integer" in direct.err and "5,000 digits" in direct.err
    assert path.read_text().count("9" * 5000) == 1  # the file is left as it was
