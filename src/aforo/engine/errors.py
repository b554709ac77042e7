"""The engine manager's errors, part of aforo's tree (`aforo.errors`).

EngineError           the engine could not be installed, started or stopped; the message says what to do
├── EngineUnavailable  this platform cannot build or run it (no compiler, unsupported CPU): the message
│                      names what is missing and the alternatives, and trying again will not help
├── ConsentNeeded      installing needs downloads and a build the user has not agreed to
└── UnknownModel       a model name the engine does not have: the message lists the ones it has
"""

from __future__ import annotations

from aforo.errors import AforoError

# Pointing aforo at a server the user already has is always possible when the engine is not.
ALTERNATIVES = (
    "Or point aforo at a server you already have: Ollama (`ollama serve`, then `aforo --base-url "
    "http://127.0.0.1:11434/v1 -m MODEL`), or any OpenAI-compatible server (llama-server, vLLM, LM Studio) "
    "with --base-url URL."
)


class EngineError(AforoError):
    pass


class EngineUnavailable(EngineError):
    def __init__(self, missing: str, remedy: str = "") -> None:
        fix = f" {remedy}" if remedy else ""
        super().__init__(f"the local engine cannot run on this machine: {missing}.{fix} {ALTERNATIVES}")
        self.missing = missing


class ConsentNeeded(EngineError):
    pass


class UnknownModel(EngineError):
    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        names = ", ".join(f"{alias} (the default)" if i == 0 else alias for i, alias in enumerate(known))
        super().__init__(
            f"the local engine has no model named {name!r}; it has: {names}. Pick one with -m NAME, or "
            "drop --local to ask a model of your own server (--base-url URL -m NAME)"
        )
        self.name = name
