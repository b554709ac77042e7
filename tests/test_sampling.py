"""The sampling aforo asks for (issue 37): llama-server gets its DRY sampler, which stops a passage from
repeating at the source (it applies no repeat penalty by default); no other server gets a field it may
not know. The loop stop (aforo.repeats) stays as the last guard."""

from __future__ import annotations

from dialects.openai_app import Raw, Script, make_openai_app
from support.live_server import LiveServer
from test_prompt_progress import LLAMA_STREAM, provider_of, request

DRY = {"dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n"}


def sent(kind: str) -> dict[str, object]:
    script = Script(Raw(LLAMA_STREAM))
    with LiveServer(make_openai_app(script)) as live, provider_of(kind, live.url) as provider:
        list(provider.stream(request()))
    return script.bodies[0]


def test_llama_server_is_asked_for_its_dry_sampler_on_every_request() -> None:
    body = sent("llama.cpp")
    assert body.keys() >= DRY
    assert float(body["dry_multiplier"]) > 0  # type: ignore[arg-type]  # 0 turns it off
    assert int(body["dry_allowed_length"]) >= 2  # type: ignore[call-overload]  # a name of two tokens is no loop


def test_no_other_openai_compatible_server_gets_a_sampling_field_of_llama_servers() -> None:
    for kind in ("openai", "vllm", "lmstudio", "litellm", "tgi"):
        assert not DRY & sent(kind).keys(), kind
