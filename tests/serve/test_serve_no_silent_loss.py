"""Never a silent loss through the gateway: what cannot fit is refused before it is sent, and an answer
whose reported prompt shows a drop is withheld; either way the client gets the overflow error its own
code handles (OpenAI's `context_length_exceeded`, Ollama's error), streams included, and every request
leaves a telemetry row `aforo stats` reads."""

from __future__ import annotations

import json

import httpx

from aforo.store.telemetry import Telemetry
from dialects.openai_app import Reply, Script, make_openai_app
from dialects.servers_apps import ollama_app
from dialects.truncating_app import Seen, TruncatingServer
from serve.gateway_support import gateway
from support.cli import run_cli

OVERFLOW = {"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}
TASK = "TASK-KEY-42: explain what the modules in this project do."


def long_chat(notes: int, size: int = 400) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": TASK}]
    for i in range(notes):
        messages += [
            {"role": "assistant", "content": f"ack {i}"},
            {"role": "user", "content": f"note {i}: " + "lorem ipsum " * (size // 12)},
        ]
    return messages


def echo(seen: Seen) -> Reply:
    return Reply(text=f"{len(seen.messages)} kept, {seen.dropped} dropped")


def test_a_request_that_cannot_fit_is_refused_before_it_is_sent_in_openai_words() -> None:
    script = Script(Reply(text="never"))
    body = {"model": "test-model", "messages": long_chat(30)}
    with gateway(make_openai_app(script, models={"test-model": None}), window=1024) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json=body)
        streamed = httpx.post(f"{url}/v1/chat/completions", json={**body, "stream": True})
    for answer in (resp, streamed):
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert {k: error[k] for k in OVERFLOW} == OVERFLOW
        # OpenAI's own opening: litellm (mini-swe-agent, aider) tells an overflow by the text alone.
        assert error["message"].startswith("This model's maximum context length is exceeded: ")
        assert "Nothing was sent" in error["message"]
        assert answer.headers["x-aforo-verdict"] == "refused"
        assert int(answer.headers["x-aforo-context-used"]) > 1024
        assert answer.headers["x-aforo-context-window"] == "1024"
    assert script.bodies == []  # upstream saw neither


def test_a_request_that_cannot_fit_is_refused_in_ollamas_words() -> None:
    app = ollama_app(models=("m",))
    body = {"model": "m", "messages": long_chat(30), "stream": False}
    with gateway(app, window=1024) as (url, _):
        resp = httpx.post(f"{url}/api/chat", json=body)
    assert resp.status_code == 400
    assert resp.json()["error"].startswith("the input length exceeds the context length: ")
    assert not [path for path, _ in app.state.received if path == "/api/chat"]


def test_a_collapsed_prompt_is_not_passed_on_as_a_success_streamed_or_not() -> None:
    # The server really runs 2048 tokens, the user believes 8192: it fits the budget, goes out, and
    # the server reads 63 tokens of it (what Ollama reported for single oversized prompts).
    server = TruncatingServer(echo, window=2048, mode="collapse")
    body = {"model": "test-model", "messages": long_chat(24)}
    with gateway(server.app, window=8192) as (url, _):
        plain = httpx.post(f"{url}/v1/chat/completions", json=body)
        streamed = httpx.post(f"{url}/v1/chat/completions", json={**body, "stream": True})
    # It did answer every request, HTTP 200, and read a part of each: the gateway's measurement of the
    # conversation without its newest message, then the request itself, twice.
    assert [t.dropped > 0 for t in server.turns] == [True] * 4
    for answer in (plain, streamed):
        assert answer.status_code == 400, answer.text
        assert {k: answer.json()["error"][k] for k in OVERFLOW} == OVERFLOW
        assert "silently dropped part of the conversation" in answer.json()["error"]["message"]
        assert answer.headers["x-aforo-verdict"] == "truncated"
        assert "kept" not in answer.text  # not a byte of the answer reached the client


def test_the_first_crossing_of_a_growing_conversation_is_caught() -> None:
    # Keep-newest truncation as Ollama does: the turn that crosses the window loses only the oldest
    # messages (the task) and reports a count that still grows. The gateway follows the conversation
    # from one request to the next and settles the suspicion by measuring the new messages.
    server = TruncatingServer(echo, window=2048, mode="ollama")
    first = long_chat(14)
    with gateway(server.app, window=8192) as (url, _):
        ok = httpx.post(f"{url}/v1/chat/completions", json={"model": "test-model", "messages": first})
        grown = [*first, {"role": "assistant", "content": ok.json()["choices"][0]["message"]["content"]}]
        grown += long_chat(6)[1:]
        crossed = httpx.post(f"{url}/v1/chat/completions", json={"model": "test-model", "messages": grown})
    assert ok.status_code == 200 and ok.headers["x-aforo-verdict"] == "clean"
    # The first request (measured without its newest message, then sent) fits; the next one does not.
    assert [t.dropped > 0 for t in server.turns[:3]] == [False, False, True]  # then its measurements
    assert crossed.status_code == 400, crossed.text
    assert crossed.json()["error"]["code"] == "context_length_exceeded"
    assert crossed.headers["x-aforo-verdict"] == "truncated"


def test_every_request_leaves_a_row_that_aforo_stats_reads() -> None:
    script = Script(Reply(text="fine", prompt_tokens=20, completion_tokens=3))
    app = make_openai_app(script, models={"test-model": None})
    with gateway(app, window=1024) as (url, _):
        httpx.post(f"{url}/v1/chat/completions", json={"model": "test-model", "messages": long_chat(30)})
        httpx.post(
            f"{url}/v1/chat/completions",
            json={"model": "test-model", "messages": [{"role": "user", "content": "hi"}]},
            headers={"user-agent": "my-client/1.0"},
        )
    with Telemetry() as telemetry:
        runs = [r for r in telemetry.rows() if r["event"] == "run"]
        summary = telemetry.summary()
    assert [r["cause"] for r in runs] == [
        "serve refused; asked for test-model",
        "serve clean; asked for test-model",
    ]
    assert runs[1]["client"] == "127.0.0.1 my-client/1.0"
    assert (runs[1]["input_tokens"], runs[1]["output_tokens"]) == (20, 3)
    assert runs[1]["model"] == "test-model" and runs[1]["model_served"] == "test-model"
    assert runs[0]["session"].startswith("serve-")
    assert summary["overall"]["usage"]["runs"] == 2
    assert summary["overall"]["rejections_by_cause"] == {"does_not_fit": 1}
    # `aforo stats` itself shows the gateway's session.
    stats = run_cli("stats", "--json")
    assert stats.code == 0, stats.err
    (session,) = json.loads(stats.out)["sessions"].values()
    assert session["usage"]["runs"] == 2 and session["usage"]["input_tokens"] == 20


def test_an_upstream_overflow_in_its_own_dialect_reaches_the_client_in_its_own() -> None:
    # llama-server's refusal, through an OpenAI client: the error it already handles.
    refusal = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5000,
            "n_ctx": 4096,
        }
    }
    from dialects.openai_app import Failure

    script = Script(Failure(400, json.dumps(refusal)), Failure(400, json.dumps(refusal)))
    with gateway(make_openai_app(script, models={"test-model": None}), window=8192) as (url, _):
        resp = httpx.post(
            f"{url}/v1/chat/completions", json={"model": "test-model", "messages": long_chat(2)}
        )
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "context_length_exceeded"
    assert resp.headers["x-aforo-verdict"] == "overflow"


def test_a_conversation_first_seen_already_past_the_real_window_is_caught() -> None:
    # The gateway sees this conversation for the first time (a client that began elsewhere, a restart):
    # keep-newest truncation, reported just under the real window, and no tokenizer on the server. It
    # measures the conversation without its newest message first, so the request is judged by growth.
    server = TruncatingServer(echo, window=2048, mode="ollama")
    with gateway(server.app, window=8192) as (url, _):
        resp = httpx.post(
            f"{url}/v1/chat/completions", json={"model": "test-model", "messages": long_chat(24)}
        )
    assert server.turns[0].dropped > 0 and server.turns[0].messages[-1]["content"].startswith("ack 23")
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == "context_length_exceeded"
    assert resp.headers["x-aforo-verdict"] == "truncated"
