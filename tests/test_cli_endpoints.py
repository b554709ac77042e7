"""Honest messages for a wrong endpoint or flag: a URL without its scheme, a server that is no LLM server
(a plain file server, a web app answering HTML, one answering 501), a mistyped flag.

Real servers on 127.0.0.1: the standard library's file server (what `python -m http.server` runs) and
a small app that answers every path with a status or an HTML page.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pexpect
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from aforo.cli.first_contact import no_server_message
from support.cli import AFORO, run_cli
from support.live_server import LiveServer


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def file_server(root: Path) -> Iterator[str]:
    """A plain HTTP file server serving `root` (an index.html): what `python -m http.server` is."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def answering(status: int, html: bool) -> Starlette:
    """Every path, every method: `status`, with an HTML page or a plain text body."""

    async def any_path(request: Request) -> Response:
        if html:
            return HTMLResponse("<!doctype html><html><body><h1>Welcome</h1></body></html>", status)
        return Response("Not Implemented", status, media_type="text/plain")

    methods = ["GET", "POST", "HEAD"]
    return Starlette(routes=[Route("/{path:path}", any_path, methods=methods)])


def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<html><body>a site</body></html>\n")
    return root


def one_line(text: str) -> str:
    return " ".join(text.split())


# --- the URL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["notaurl", "localhost:8080"])
def test_a_base_url_without_a_scheme_says_so_before_any_lookup(tmp_path: Path, url: str) -> None:
    run = run_cli("-w", str(tmp_path), "--base-url", url, "hi")
    assert run.code == 2
    err = one_line(run.err)
    assert f"--base-url {url!r} has no scheme (http:// expected)" in err
    assert "Name or service" not in err and "no server answers" not in err  # no DNS, no connection


def test_models_with_a_base_url_without_a_scheme_says_so(tmp_path: Path) -> None:
    run = run_cli("models", "-w", str(tmp_path), "--base-url", "notaurl")
    assert run.code == 2 and "has no scheme (http:// expected)" in one_line(run.err)


def test_a_base_url_of_another_scheme_is_refused(tmp_path: Path) -> None:
    run = run_cli("-w", str(tmp_path), "--base-url", "ftp://127.0.0.1:21", "hi")
    assert run.code == 2 and "is not an http:// or https:// URL" in one_line(run.err)


# --- a server that is no LLM server ---------------------------------------------------------------


def test_a_run_against_a_file_server_names_it_as_no_llm_server(tmp_path: Path) -> None:
    with file_server(site(tmp_path)) as url:
        run = run_cli("-w", str(tmp_path), "--base-url", url, "hi")
        with_model = run_cli("-w", str(tmp_path), "--base-url", url, "-m", "any", "hi")
    for done in (run, with_model):
        err = one_line(done.err)
        assert done.code == 1, done.err
        assert f"the server at {url} is not an LLM server" in err
        assert f"GET {url}/v1/models answered 404" in err
        assert "no model given" not in err


def test_models_against_a_file_server_fails_naming_it(tmp_path: Path) -> None:
    with file_server(site(tmp_path)) as url:
        run = run_cli("models", "-w", str(tmp_path), "--base-url", url)
    assert run.code == 1, run.err
    assert "is not an LLM server" in one_line(run.err) and "0 model(s)" not in run.err


@pytest.mark.parametrize(
    ("status", "html", "said"),
    [(501, False, "answered 501 Not Implemented"), (200, True, "answered with an HTML page")],
)
def test_a_server_answering_501_or_html_is_no_llm_server(
    tmp_path: Path, status: int, html: bool, said: str
) -> None:
    with LiveServer(answering(status, html)) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "hi")
        listed = run_cli("models", "-w", str(tmp_path), "--base-url", server.url)
    for done in (run, listed):
        assert done.code == 1, done.err
        assert "is not an LLM server" in one_line(done.err) and said in one_line(done.err)


# --- flags -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--workspce", "/tmp", "hi"], "aforo: unknown flag --workspce; did you mean --workspace?"),
        (["--workspce=/tmp", "hi"], "aforo: unknown flag --workspce; did you mean --workspace?"),
        (["--modle", "m", "hi"], "aforo: unknown flag --modle; did you mean --model?"),
        (["stats", "--sesion", "x"], "aforo stats: unknown flag --sesion; did you mean --session?"),
    ],
)
def test_an_unknown_flag_is_one_line_naming_the_closest(argv: list[str], said: str) -> None:
    run = run_cli(*argv)
    assert run.code == 2
    assert run.err.splitlines() == [f"{said} ({said.split(':')[0]} --help lists them)"]


def test_an_unknown_flag_like_no_other_is_one_line_too() -> None:
    run = run_cli("--zzqqxx", "hi")
    assert run.code == 2 and run.err.splitlines() == [
        "aforo: unknown flag --zzqqxx (aforo --help lists them)"
    ]


def test_a_bad_flag_value_is_one_line() -> None:
    run = run_cli("--context-window", "abc", "hi")
    assert run.code == 2
    assert run.err.splitlines() == [
        "aforo: argument --context-window: invalid int value: 'abc' (see aforo --help)"
    ]


# --- aforo's own messages on a terminal ------------------------------------------------------------


def test_a_message_wraps_at_word_boundaries_on_a_terminal(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: the long first-contact message
    env = {**os.environ, "TERM": "xterm-256color", "NO_COLOR": "1", "COLUMNS": "100"}
    args = ["-w", str(tmp_path), "--base-url", url, "hi"]
    child = pexpect.spawn(AFORO, args, env=env, encoding="utf-8", timeout=30, dimensions=(40, 100))
    child.expect(pexpect.EOF)
    child.close()
    lines = [line for line in str(child.before).replace("\r\n", "\n").split("\n") if line.strip()]
    assert child.exitstatus == 1
    assert lines[0].startswith(f"aforo: no server answers at {url}")
    assert all(len(line) <= 100 for line in lines), lines  # the terminal never breaks a line itself
    # Every word whole: what is shown is the message's own words, in order, none cut at a line's end.
    message = no_server_message(url, "--base-url", "connection refused")
    assert " ".join(lines).split() == f"aforo: {message}".split()


def test_a_server_kind_named_by_the_user_is_believed(tmp_path: Path) -> None:
    # --server says what it is: a server that only answers chat (no model list) is not second-guessed.
    with file_server(site(tmp_path)) as url:
        run = run_cli("-w", str(tmp_path), "--base-url", url, "--server", "openai", "-m", "m", "hi")
    assert "is not an LLM server" not in run.err
    assert run.code == 1 and "501" in one_line(run.out + run.err)  # the chat request itself fails


def test_a_lane_or_project_base_url_without_a_scheme_names_where(tmp_path: Path) -> None:
    (tmp_path / ".aforo.toml").write_text('[lanes.small]\nbase_url = "127.0.0.1:8080"\nmodel = "m"\n')
    run = run_cli("-w", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "hi")
    assert run.code == 2
    assert "lanes.small.base_url '127.0.0.1:8080' has no scheme (http:// expected)" in one_line(run.err)
