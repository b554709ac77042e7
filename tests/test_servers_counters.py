"""Exact token counters against servers that tokenize, the local tokenizer.json, and the estimate."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from aforo.errors import ConfigError, ConnectError, ProviderError
from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolSpec, ToolUse
from aforo.protocols import TokenCounter
from aforo.server_kinds import KINDS
from aforo.servers.counters import (
    LlamaCppCounter,
    TgiCounter,
    TokenizerJsonCounter,
    VllmCounter,
    make_counter,
)
from aforo.servers.detect import detect_server
from aforo.servers.kind import kind_named
from aforo.wire.openai_chat import chat_body
from dialects.servers_apps import chat_tokens, generic_app, llamacpp_app, tgi_app, vllm_app
from support.live_server import LiveServer

READ = ToolSpec("Read", "Read a file", {"type": "object", "properties": {"file_path": {"type": "string"}}})


def conversation(extra: str = "") -> Request:
    messages = (
        Message.user("What does main.py do?" + extra),
        Message(
            "assistant", (TextBlock("Let me look."), ToolUse("call_1", "Read", {"file_path": "main.py"}))
        ),
        Message("user", (ToolResult("call_1", "1\tprint('hello, world')"),)),
    )
    return Request("m", (SystemPart("You are a careful assistant."),), (READ,), messages, 256)


def paths(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [p for p, _ in app.state.received]


def test_llamacpp_count_equals_the_prompt_tokens_the_server_reports(client: httpx.Client) -> None:
    app = llamacpp_app()
    with LiveServer(app) as server:
        counter = LlamaCppCounter(client, server.url, "m")
        request = conversation()
        counted = counter.count(request)
        answer = client.post(
            f"{server.url}/v1/chat/completions", json=chat_body(request, stream=False)
        ).json()
    assert counted == answer["usage"]["prompt_tokens"]
    assert (counter.name, counter.exact) == ("llama.cpp", True)
    assert paths(app)[0] == "/v1/chat/completions/input_tokens"


def test_llamacpp_falls_back_to_apply_template_and_tokenize_once(client: httpx.Client) -> None:
    app = llamacpp_app(input_tokens=False)
    with LiveServer(app) as server:
        counter = LlamaCppCounter(client, server.url, "m")
        first = counter.count(conversation())
        second = counter.count(conversation(" And why?"))
    assert first == chat_tokens(chat_body(conversation(), stream=False))
    assert second > first
    # The missing route is remembered: the second count goes straight to the fallback.
    assert paths(app) == ["/apply-template", "/tokenize", "/apply-template", "/tokenize"]
    tokenize_body = app.state.received[1][1]
    assert tokenize_body["add_special"] is True


def test_counts_are_cached_per_identical_request(client: httpx.Client) -> None:
    app = llamacpp_app()
    with LiveServer(app) as server:
        counter = LlamaCppCounter(client, server.url, "m")
        request = conversation()
        a = counter.count(request)
        b = counter.count(Request(request.model, request.system, request.tools, request.messages, 9999))
        c = counter.count(conversation(" more"))
    assert a == b != c
    assert len(app.state.received) == 2


def test_vllm_tokenize_with_messages_and_tools(client: httpx.Client) -> None:
    app = vllm_app(model="org/m")
    with LiveServer(app) as server:
        counter = VllmCounter(client, server.url, "org/m")
        request = Request("org/m", conversation().system, (READ,), conversation().messages, 256)
        counted = counter.count(request)
    assert counted == chat_tokens(chat_body(request, stream=False))
    path, body = app.state.received[0]
    assert path == "/tokenize"
    assert set(body) == {"model", "messages", "tools"}


def test_tgi_chat_tokenize(client: httpx.Client) -> None:
    app = tgi_app()
    with LiveServer(app) as server:
        counter = TgiCounter(client, server.url, "tgi")
        counted = counter.count(conversation())
    assert counted == chat_tokens(chat_body(conversation(), stream=False))
    assert paths(app) == ["/chat_tokenize"]


def test_count_messages_counts_the_messages_alone(client: httpx.Client) -> None:
    with LiveServer(llamacpp_app()) as server:
        counter = LlamaCppCounter(client, server.url, "m")
        alone = counter.count_messages(conversation().messages)
        whole = counter.count(conversation())
    assert 0 < alone < whole


def test_a_counter_failure_is_a_provider_error(client: httpx.Client) -> None:
    with LiveServer(llamacpp_app()) as server:
        counter = LlamaCppCounter(client, server.url, "m")
    with pytest.raises(ConnectError, match="no server at"):
        counter.count(conversation())


def test_a_malformed_count_is_a_provider_error(client: httpx.Client) -> None:
    # A generic server has no /tokenize: counting there fails with our error, never a crash.
    with LiveServer(generic_app()) as server:
        counter = VllmCounter(client, server.url, "m")
        with pytest.raises(ProviderError):
            counter.count(conversation())


# --- choosing a counter ------------------------------------------------------------------------------


def counter_for(
    client: httpx.Client, url: str, tokenizer: Path | None, hint: str | None = None
) -> TokenCounter | None:
    """The counter the CLI would choose: the detected kind's own, checked, else the tokenizer.json."""
    info = detect_server(client, url, hint, kinds=KINDS)
    server_counter = kind_named(KINDS, info.kind).counter
    return make_counter(server_counter, client, info.root_url, info.models[0], tokenizer)


def test_make_counter_prefers_the_servers_exact_counter(client: httpx.Client, tmp_path: Path) -> None:
    with LiveServer(llamacpp_app()) as server:
        assert isinstance(counter_for(client, server.url, tiny_tokenizer(tmp_path)), LlamaCppCounter)
    with LiveServer(vllm_app(model="org/m")) as server:
        assert isinstance(counter_for(client, server.url, None), VllmCounter)
    with LiveServer(tgi_app()) as server:
        assert isinstance(counter_for(client, server.url, None), TgiCounter)


def test_make_counter_falls_back_to_tokenizer_json_then_none(client: httpx.Client, tmp_path: Path) -> None:
    with LiveServer(generic_app()) as server:
        assert isinstance(counter_for(client, server.url, tiny_tokenizer(tmp_path)), TokenizerJsonCounter)
        # No exact counter at all: the governor estimates.
        assert counter_for(client, server.url, None) is None
        # A server that claims to be vLLM but cannot tokenize: its counter is checked and skipped.
        assert counter_for(client, server.url, None, hint="vllm") is None
        hinted = counter_for(client, server.url, tiny_tokenizer(tmp_path), hint="vllm")
        assert isinstance(hinted, TokenizerJsonCounter)


def test_make_counter_rejects_a_bad_tokenizer_path_even_when_the_server_counts(
    client: httpx.Client, tmp_path: Path
) -> None:
    with LiveServer(llamacpp_app()) as server, pytest.raises(ConfigError, match="no such file"):
        counter_for(client, server.url, tmp_path / "missing.json")


# --- tokenizer.json ----------------------------------------------------------------------------------


def tiny_tokenizer(tmp_path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    sentences = ["what does main py do", "let me look", "print hello world", "you are a careful assistant"]
    tokenizer.train_from_iterator(sentences, trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return path


def test_tokenizer_json_counts_with_chatml_framing(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    path = tiny_tokenizer(tmp_path)
    counter = TokenizerJsonCounter(path)
    raw = Tokenizer.from_file(str(path))
    request = Request("m", (), (), (Message.user("print hello world"),), 10)
    framed = "<|im_start|>user\nprint hello world<|im_end|>\n<|im_start|>assistant\n"
    assert counter.count(request) == len(raw.encode(framed, add_special_tokens=False).ids)
    assert (counter.name, counter.exact) == ("tokenizer.json", True)


def test_tokenizer_json_counts_every_part_and_each_word(tmp_path: Path) -> None:
    counter = TokenizerJsonCounter(tiny_tokenizer(tmp_path))
    short = Request("m", (), (), (Message.user("print hello"),), 1)
    longer = Request("m", (), (), (Message.user("print hello let me look let me look"),), 1)
    assert counter.count(longer) - counter.count(short) == 6  # six words, one token each
    base = conversation()
    no_system = Request(base.model, (), base.tools, base.messages, 1)
    no_tools = Request(base.model, base.system, (), base.messages, 1)
    assert counter.count(no_system) < counter.count(base)
    assert counter.count(no_tools) < counter.count(base)


def test_tokenizer_json_counts_messages_incrementally(tmp_path: Path) -> None:
    counter = TokenizerJsonCounter(tiny_tokenizer(tmp_path))
    messages = list(conversation().messages)
    before = counter.count_messages(messages)
    added = Message.assistant("let me look")
    after = counter.count_messages([*messages, added])
    alone = counter.count_messages([added]) - counter.count_messages([])
    assert after - before == alone > 0


def test_tokenizer_json_errors_are_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        TokenizerJsonCounter(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not a tokenizer")
    with pytest.raises(ConfigError, match=r"not a valid tokenizer\.json"):
        TokenizerJsonCounter(bad)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ConfigError, match=r"pip install 'aforo\[tokenizers\]'"):
        TokenizerJsonCounter(tiny_path_placeholder(tmp_path))


def tiny_path_placeholder(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_text("{}")
    return path
