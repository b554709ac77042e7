"""Send one fixed conversation that does not fit a 4096 window and show what the server did with it.

The seed's `desbordar`: a task key in the first user message, twelve meeting notes each acknowledged by
the assistant, a final question asking for both keys, and a system key in the system prompt. A server
that truncates silently answers HTTP 200 without the task key; one that refuses answers an error.

    python examples/overflow.py --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from aforo.context.tokens import estimate_request
from aforo.errors import ContextOverflowError, HTTPStatusError, ProviderError
from aforo.messages import Message, MessageEnd, Request, StreamText, SystemPart
from aforo.providers.openai_compat import OpenAICompatProvider

SYSTEM_KEY = "ALFA-3141"
TASK_KEY = "BRAVO-2718"
SEED = 20261105
TOPICS = ("budget", "roadmap", "hiring", "incident review", "pricing", "security audit")
PEOPLE = ("Ana", "Luis", "Marta", "Pablo", "Sofía", "Diego")


def note(rnd: random.Random, i: int) -> str:
    lines = [f"Meeting note {i}: {rnd.choice(TOPICS)}."]
    for _ in range(14):
        who, other = rnd.sample(PEOPLE, 2)
        lines.append(
            f"{who} said the {rnd.choice(TOPICS)} needs {rnd.randint(2, 40)} more days and asked {other} "
            f"to review item {rnd.randint(100, 999)} before the next {rnd.choice(TOPICS)} sync."
        )
    return " ".join(lines)


def conversation(model: str) -> Request:
    rnd = random.Random(SEED)
    messages = [
        Message.user(
            f"We are going to review some meeting notes. At the end I will ask you for two keys. "
            f"The task key is {TASK_KEY}."
        )
    ]
    for i in range(1, 13):
        messages += [Message.assistant("Understood."), Message.user(note(rnd, i))]
    messages += [
        Message.assistant("Understood."),
        Message.user("Now answer with only two facts: the task key and the system key."),
    ]
    system = SystemPart(f"You review meeting notes. The system key is {SYSTEM_KEY}. Answer briefly.")
    return Request(model, (system,), (), tuple(messages), 256)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="test-model")
    args = parser.parse_args()
    request = conversation(args.model)
    print(f"model: {args.model}")
    print(
        f"conversation: {len(request.messages)} messages, about {estimate_request(request)} estimated "
        "tokens (4 characters per token)"
    )
    started = time.monotonic()
    text: list[str] = []
    end: MessageEnd | None = None
    try:
        with OpenAICompatProvider(args.base_url, args.model, retries=0) as provider:
            for event in provider.stream(request):
                if isinstance(event, StreamText):
                    text.append(event.text)
                elif isinstance(event, MessageEnd):
                    end = event
    except ContextOverflowError as exc:
        print(f"the server refused it as too long (prompt {exc.n_prompt} tokens, n_ctx {exc.n_ctx})")
        print(f"error: {exc}")
        return 0
    except HTTPStatusError as exc:
        print(f"HTTP {exc.status} · {exc}")
        return 1
    except ProviderError as exc:
        print(f"error: {exc}")
        return 1
    if end is None:
        print("error: the stream ended without a final message")
        return 1
    answer = "".join(text).strip()
    usage = end.usage
    print(
        f"HTTP 200 · finish: {end.stop_reason} · prompt_tokens: {usage.prompt_tokens} "
        f"({usage.cache_read_tokens} cached) · output: {usage.output_tokens} · "
        f"{time.monotonic() - started:.1f} s"
    )
    print(f"answer: {answer}")
    for label, key in (("system key", SYSTEM_KEY), ("task key", TASK_KEY)):
        print(f"{label} ({key}): {'appears' if key in answer else 'does NOT appear'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
