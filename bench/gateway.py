"""`aforo serve` under load: 32 concurrent streaming clients through the gateway to a scripted server,
against the same clients on the bare server, in one run.

Three processes share the machine: the scripted server (this file with `--upstream`), the real `aforo
serve` (its first line is its URL), and the clients (asyncio + httpx, here). Each client asks
`ROUNDS` questions, each a new conversation naming its own id; the server streams `CHUNKS` pieces
`PAUSE` seconds apart that repeat the id, and reports a prompt the size of what it was sent. An answer
is correct when its text is exactly the one scripted for its id.

Printed: per mode, requests answered correctly, the latency to the first piece and to the last (p50,
p99), throughput; then what the gateway adds (p50 and p99 of the latency, the first-piece delay) and
its throughput as a ratio of the bare server's. Modes: `bare` (Ollama's /api/chat on the server),
`live` (through the gateway, Ollama being loud: the stream passes as it arrives), `held` (through the
gateway with `--server openai`, a server that may truncate silently: each answer is judged whole
before the client sees it, so its first piece waits for its last). Target: every request answered
correctly in every mode, and the live stream's throughput at least 0.5 of the bare server's.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CLIENTS = int(os.environ.get("BENCH_CLIENTS", 32))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 5))
CHUNKS = 20
PAUSE = 0.005
MODEL = "bench-model"
TARGET_RATIO = 0.5


def scripted(rid: str) -> list[str]:
    return [f"{rid}:{i} " for i in range(CHUNKS)]


# --- the scripted server (a child process) ------------------------------------------------------------


def upstream_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    def prompt_tokens(body: dict[str, Any]) -> int:
        return math.ceil(len(json.dumps(body.get("messages", []))) / 4)

    async def ollama_chat(request: Request) -> StreamingResponse:
        body = await request.json()
        rid = body["messages"][-1]["content"]

        async def lines() -> Any:
            for piece in scripted(rid):
                yield (
                    json.dumps(
                        {"model": MODEL, "message": {"role": "assistant", "content": piece}, "done": False}
                    )
                    + "\n"
                )
                await asyncio.sleep(PAUSE)
            end = {"model": MODEL, "message": {"role": "assistant", "content": ""}, "done": True}
            end |= {"done_reason": "stop", "prompt_eval_count": prompt_tokens(body), "eval_count": CHUNKS}
            yield json.dumps(end) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    async def openai_chat(request: Request) -> StreamingResponse:
        body = await request.json()
        rid = body["messages"][-1]["content"]

        async def events() -> Any:
            for piece in scripted(rid):
                chunk = {
                    "model": MODEL,
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n"
                await asyncio.sleep(PAUSE)
            last = {"model": MODEL, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            usage = {"prompt_tokens": prompt_tokens(body), "completion_tokens": CHUNKS}
            yield f"data: {json.dumps(last)}\n\n"
            yield f"data: {json.dumps({'model': MODEL, 'choices': [], 'usage': usage})}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    models = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
    return Starlette(
        routes=[
            Route("/api/version", lambda r: JSONResponse({"version": "0.12.6"})),
            Route("/api/tags", lambda r: JSONResponse({"models": [{"name": MODEL, "model": MODEL}]})),
            Route("/api/ps", lambda r: JSONResponse({"models": []})),
            Route("/v1/models", lambda r: JSONResponse(models)),
            Route("/api/chat", ollama_chat, methods=["POST"]),
            Route("/v1/chat/completions", openai_chat, methods=["POST"]),
        ]
    )


def serve_upstream() -> None:
    import socket

    import uvicorn

    sock = socket.create_server(("127.0.0.1", 0))
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(upstream_app(), log_level="warning", lifespan="off")).run(sockets=[sock])


# --- the clients --------------------------------------------------------------------------------------


async def one(client: Any, url: str, api: str, rid: str) -> tuple[bool, float, float]:
    """(answered correctly, seconds to the first piece, seconds to the last)."""
    path = "/api/chat" if api == "ollama" else "/v1/chat/completions"
    body = {"model": MODEL, "messages": [{"role": "user", "content": rid}], "stream": True}
    started = time.perf_counter()
    first = None
    pieces: list[str] = []
    async with client.stream("POST", url + path, json=body) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return False, 0.0, time.perf_counter() - started
        async for line in resp.aiter_lines():
            if api == "openai":
                if not line.startswith("data: {"):
                    continue
                doc = json.loads(line[6:])
                piece = doc["choices"][0]["delta"].get("content") if doc["choices"] else None
            else:
                if not line:
                    continue
                piece = json.loads(line)["message"]["content"]
            if piece:
                first = first or time.perf_counter() - started
                pieces.append(piece)
    return pieces == scripted(rid), first or 0.0, time.perf_counter() - started


async def load(url: str, api: str, tag: str) -> dict[str, Any]:
    import httpx

    limits = httpx.Limits(max_connections=CLIENTS * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker(c: int) -> list[tuple[bool, float, float]]:
            return [await one(client, url, api, f"{tag}-{c}-{r}") for r in range(ROUNDS)]

        await one(client, url, api, f"{tag}-warm")  # the gateway opens the model's room on a first request
        started = time.perf_counter()
        results = [x for group in await asyncio.gather(*(worker(c) for c in range(CLIENTS))) for x in group]
        wall = time.perf_counter() - started
    return {
        "ok": sum(1 for r in results if r[0]),
        "n": len(results),
        "first": sorted(r[1] for r in results),
        "total": sorted(r[2] for r in results),
        "rps": len(results) / wall,
    }


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, max(0, math.ceil(p / 100 * len(values)) - 1))]


def start(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main() -> int:
    aforo = str(Path(sys.executable).parent / "aforo")
    home = tempfile.mkdtemp(prefix="aforo-bench-gateway-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AFORO_")} | {"AFORO_HOME": home}
    env["NO_PROXY"] = "127.0.0.1"
    procs = []
    try:
        upstream, up_url = start([sys.executable, __file__, "--upstream"], env)
        procs.append(upstream)
        live, live_url = start(
            [aforo, "serve", "--upstream", up_url, "--port", "0", "--context-window", "8192"], env
        )
        procs.append(live)
        held, held_url = start(
            [
                aforo,
                "serve",
                "--upstream",
                up_url,
                "--port",
                "0",
                "--context-window",
                "8192",
                "--server",
                "openai",
            ],
            env,
        )
        procs.append(held)
        runs = {
            "bare": asyncio.run(load(up_url, "ollama", "bare")),
            "live": asyncio.run(load(live_url, "ollama", "live")),
            "held": asyncio.run(load(held_url, "openai", "held")),
        }
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
    pace = f"{CHUNKS} pieces {PAUSE * 1000:g} ms apart"
    print(f"{CLIENTS} concurrent streaming clients x {ROUNDS} requests, {pace}")
    print("mode   correct   first p50/p99 (ms)   last p50/p99 (ms)   req/s")
    for mode, r in runs.items():
        first = f"{pct(r['first'], 50) * 1000:7.1f} / {pct(r['first'], 99) * 1000:7.1f}"
        last = f"{pct(r['total'], 50) * 1000:7.1f} / {pct(r['total'], 99) * 1000:7.1f}"
        print(f"{mode:5}  {r['ok']:3}/{r['n']:<3}   {first}    {last}   {r['rps']:6.1f}")
    bare = runs["bare"]
    for mode in ("live", "held"):
        r = runs[mode]
        added = [pct(r["total"], p) - pct(bare["total"], p) for p in (50, 99)]
        first = [pct(r["first"], p) - pct(bare["first"], p) for p in (50, 99)]
        print(
            f"{mode}: adds {added[0] * 1000:.1f} ms (p50) / {added[1] * 1000:.1f} ms (p99) per request, "
            f"{first[0] * 1000:.1f} / {first[1] * 1000:.1f} ms to the first piece; "
            f"throughput {r['rps'] / bare['rps']:.2f} of the bare server's"
        )
    correct = all(r["ok"] == r["n"] for r in runs.values())
    ratio = runs["live"]["rps"] / bare["rps"]
    print(
        f"target: every request correct ({'yes' if correct else 'NO'}), live throughput >= {TARGET_RATIO} "
        f"of bare ({ratio:.2f})"
    )
    return 0 if correct and ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--upstream"]:
        serve_upstream()
    else:
        sys.exit(main())
