"""A client's body read as the canonical request the governor counts, and written back after it changed
the conversation: OpenAI's and Ollama's shapes, their tool calls and results, and bad bodies."""

from __future__ import annotations

import pytest

from aforo.gateway.inbound import BadRequest, read_inbound
from aforo.gateway.upstream_call import with_messages
from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolUse


def test_an_openai_conversation_with_calls_and_results_reads_as_canonical_messages() -> None:
    body = {
        "model": "m",
        "max_tokens": 99,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Read "}, {"type": "text", "text": "a.py"}],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "Read", "arguments": '{"p": "a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
            {"role": "user", "content": "And?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "Read", "description": "d", "parameters": {"type": "object"}},
            }
        ],
    }
    inbound = read_inbound("openai", body, 4096)
    req = inbound.request
    assert req.system_text == "Be brief."
    assert req.max_tokens == 99
    assert req.messages == (
        Message.user("Read a.py"),
        Message("assistant", (ToolUse("c1", "Read", {"p": "a.py"}),)),
        Message("user", (ToolResult("c1", "print(1)"),)),
        Message.user("And?"),
    )
    assert [t.name for t in req.tools] == ["Read"]
    assert inbound.streams is False


def test_ollama_calls_carry_no_ids_so_results_are_matched_in_order() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "A", "arguments": {"x": 1}}},
                    {"function": {"name": "B", "arguments": {}}},
                ],
            },
            {"role": "tool", "content": "ra", "tool_name": "A"},
            {"role": "tool", "content": "rb", "tool_name": "B"},
        ],
    }
    inbound = read_inbound("ollama_chat", body, 4096)
    uses = inbound.request.messages[1].tool_uses
    results = inbound.request.messages[2].tool_results
    assert [u.id for u in uses] == [r.tool_use_id for r in results]
    assert [r.content for r in results] == ["ra", "rb"]
    assert inbound.streams is True  # Ollama streams unless told not to


def test_a_governed_conversation_is_written_back_in_the_clients_dialect() -> None:
    inbound = read_inbound("ollama_chat", {"model": "m", "messages": [], "options": {"seed": 1}}, 4096)
    governed = Request("m", (), (), (Message("user", (TextBlock("summary"),)), Message.user("next")), 10)
    body = with_messages(inbound.body, inbound.api, governed)
    assert body["messages"] == [{"role": "user", "content": "summary\n\nnext"}]
    assert body["options"] == {"seed": 1}  # everything else the client set is kept


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ([], "must be a JSON object"),
        ({"messages": []}, "'model'"),
        ({"model": "m", "messages": "hi"}, "'messages' must be a list"),
        ({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}, "unknown role 'wizard'"),
        ({"model": "m", "messages": [{"role": "user", "content": 3}]}, "'content' must be"),
        ({"model": "m", "messages": [], "tools": [{"type": "function"}]}, "tools[0]"),
    ],
)
def test_a_body_that_is_not_a_chat_request_says_which_field(body: object, says: str) -> None:
    with pytest.raises(BadRequest, match=None) as caught:
        read_inbound("openai", body, 4096)
    assert says in str(caught.value)


def test_a_generate_body_is_read_as_the_chat_of_its_system_text_and_prompt() -> None:
    body = {"model": "m", "system": "answer briefly", "prompt": "what is 2+2?", "options": {"num_predict": 9}}
    request = read_inbound("ollama_generate", body, 4096).request
    assert request.system == (SystemPart("answer briefly"),)
    assert request.messages == (Message.user("what is 2+2?"),)
    assert request.tools == () and request.max_tokens == 9
    blank = read_inbound("ollama_generate", {"model": "m", "prompt": "", "system": ""}, 4096).request
    assert blank.system == () and blank.messages == ()
