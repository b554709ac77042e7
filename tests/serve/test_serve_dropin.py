"""`aforo serve` as a drop-in: OpenAI's and Ollama's chat endpoints through the governor, catalogs passed
through, the window it budgets for on every response, Ollama told its num_ctx."""

from __future__ import annotations

import json

import httpx

from dialects.openai_app import Reply, Script, make_openai_app
from dialects.servers_apps import ollama_app
from serve.gateway_support import gateway

ASK = {"model": "test-model", "messages": [{"role": "user", "content": "What does main.py do?"}]}


def sse_docs(text: str) -> list[dict]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data: {")]


def test_an_openai_request_that_fits_is_answered_with_what_the_gateway_saw() -> None:
    script = Script(Reply(text="It prints hello.", prompt_tokens=14))
    with gateway(make_openai_app(script, models={"test-model": None}), window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json=ASK)
    assert resp.status_code == 200
    assert resp.json()["choices"][0]["message"]["content"] == "It prints hello."
    assert resp.headers["x-aforo-context-window"] == "4096"
    assert int(resp.headers["x-aforo-context-used"]) > 0
    assert resp.headers["x-aforo-verdict"] == "clean"
    # What the client sent went upstream as it was.
    assert script.bodies[0]["messages"] == ASK["messages"]


def test_an_openai_stream_arrives_whole_without_the_usage_chunk_it_did_not_ask_for() -> None:
    script = Script(Reply(text="It prints hello.", prompt_tokens=14))
    with gateway(make_openai_app(script, models={"test-model": None}), window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json={**ASK, "stream": True})
    assert resp.status_code == 200
    docs = sse_docs(resp.text)
    assert "".join(d["choices"][0]["delta"].get("content") or "" for d in docs) == "It prints hello."
    assert all(d["choices"] for d in docs)  # no usage-only chunk: the client did not ask for one
    assert resp.text.rstrip().endswith("data: [DONE]")
    # The gateway asked for usage to judge the answer by.
    assert script.bodies[0]["stream_options"] == {"include_usage": True}
    assert resp.headers["x-aforo-verdict"] == "clean"


def test_the_models_list_is_passed_through() -> None:
    app = make_openai_app(Script(), models={"test-model": 8192, "other": None})
    with gateway(app, window=4096) as (url, _):
        resp = httpx.get(f"{url}/v1/models")
    assert [m["id"] for m in resp.json()["data"]] == ["test-model", "other"]


def test_ollama_gets_num_ctx_and_no_silent_truncation_and_its_catalogs_pass_through() -> None:
    app = ollama_app(
        models=("qwen2.5-coder:0.5b",), script=[{"chunks": ["It ", "prints."], "prompt_eval_count": 30}]
    )
    body = {"model": "qwen2.5-coder:0.5b", "messages": [{"role": "user", "content": "What does main.py do?"}]}
    with gateway(app, window=6000) as (url, _):
        resp = httpx.post(f"{url}/api/chat", json=body)
        tags = httpx.get(f"{url}/api/tags").json()
    lines = [json.loads(line) for line in resp.text.splitlines() if line]
    assert "".join(line["message"]["content"] for line in lines) == "It prints."
    assert lines[-1]["done"] is True
    sent = next(b for path, b in app.state.received if path == "/api/chat")
    assert sent["options"]["num_ctx"] == 6000
    assert sent["truncate"] is False
    assert resp.headers["x-aforo-context-window"] == "6000"
    assert [m["name"] for m in tags["models"]] == ["qwen2.5-coder:0.5b"]


def test_a_key_is_required_when_given() -> None:
    script = Script(Reply(text="hi"))
    with gateway(make_openai_app(script, models={"test-model": None}), window=4096, key="s3cret") as (url, _):
        refused = httpx.post(f"{url}/v1/chat/completions", json=ASK)
        wrong = httpx.post(f"{url}/v1/chat/completions", json=ASK, headers={"Authorization": "Bearer nope"})
        ok = httpx.post(f"{url}/v1/chat/completions", json=ASK, headers={"Authorization": "Bearer s3cret"})
    assert (refused.status_code, wrong.status_code, ok.status_code) == (401, 401, 200)
    assert len(script.bodies) == 1


def test_a_body_that_is_not_a_chat_request_is_a_clear_400() -> None:
    with gateway(make_openai_app(Script(), models={"test-model": None}), window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json={"model": "test-model", "messages": "hi"})
    assert resp.status_code == 400
    assert "'messages' must be a list" in resp.json()["error"]["message"]


def test_ollama_generate_is_governed_like_chat() -> None:
    app = ollama_app(models=("m",))
    generate = {"model": "m", "prompt": "word " * 3000, "system": "Be brief.", "stream": False}
    with gateway(app, window=2048) as (url, _):
        refused = httpx.post(f"{url}/api/generate", json=generate)
    assert refused.status_code == 400
    assert refused.json()["error"].startswith("the input length exceeds the context length: ")
    assert refused.headers["x-aforo-verdict"] == "refused"
    assert not [path for path, _ in app.state.received if path == "/api/generate"]


def test_an_openai_client_in_front_of_ollama_gets_num_ctx_through_the_native_api() -> None:
    # Ollama's own OpenAI endpoint takes no window: the gateway asks /api/chat instead, and answers
    # in OpenAI's words, streamed or not.
    script = [
        {"chunks": ["It ", "prints."], "prompt_eval_count": 30, "eval_count": 2},
        {"chunks": ["It ", "prints."], "prompt_eval_count": 30, "eval_count": 2},
    ]
    app = ollama_app(models=("m",), script=script)
    ask = {"model": "m", "messages": [{"role": "user", "content": "What does main.py do?"}]}
    with gateway(app, window=6000) as (url, _):
        plain = httpx.post(f"{url}/v1/chat/completions", json=ask)
        streamed = httpx.post(
            f"{url}/v1/chat/completions",
            json={**ask, "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 64},
        )
    sent = [b for path, b in app.state.received if path == "/api/chat"]
    assert [b["options"]["num_ctx"] for b in sent] == [6000, 6000]
    assert [b["options"]["num_predict"] for b in sent] == [1500, 64]  # the reserve, or the client's
    assert all(b["truncate"] is False for b in sent)
    completion = plain.json()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"] == {"role": "assistant", "content": "It prints."}
    assert completion["usage"] == {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32}
    docs = sse_docs(streamed.text)
    assert "".join(d["choices"][0]["delta"].get("content", "") for d in docs if d["choices"]) == "It prints."
    assert docs[-1]["usage"]["prompt_tokens"] == 30  # asked for, so given
    assert streamed.text.rstrip().endswith("data: [DONE]")
    assert streamed.headers["content-type"].startswith("text/event-stream")
