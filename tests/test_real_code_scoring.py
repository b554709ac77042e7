"""The real-code suite's scoring (bench/real_code.py): strict on the whole answer.

For each question, an answer a careful reader would accept is right, and the wrong answers a small
model gives (another module, another value, a placeholder, the format copied) are not; an answer that
did not end `end_turn` is never right.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

from aforo.engine.pins import QWEN_CODER_05B, QWEN_CODER_15B
from real_code import KINDS, PACKAGES, QUESTIONS, Outcome, counted, is_right, pick_model

BY_ID = {q.id: q for q in QUESTIONS}

RIGHT = {
    "click-overview": "Click is a Python package for creating beautiful command line interfaces.",
    "click-group": "The `group` decorator is defined in decorators.py (line 258), and it creates a Group.",
    "click-echo-nl": "In utils.py, echo has `nl: bool = True`, so it prints a newline by default.",
    "click-enum": "core.py imports enum (line 1).",
    "click-globals": "It keeps the current Click context on a thread-local stack: push, pop, get it.",
    "its-overview": "itsdangerous signs data so it can be passed to untrusted environments and back.",
    "its-zlib": "url_safe.py imports zlib, to compress the payload.",
    "its-derivation": 'The default key derivation is "django-concat" (signer.py:127).',
    "its-derive-key": "Signer.get_signature and Signer.verify_signature call derive_key.",
    "its-timestamp": "It returns the current time as an int: int(time.time()).",
    "its-longer": "signer.py is longer (266 lines) than timed.py (228 lines).",
    "dotenv-overview": "python-dotenv reads key-value pairs from a .env file into environment variables.",
    "dotenv-find": "find_dotenv is defined in main.py.",
    "dotenv-load-returns": "load_dotenv returns a bool: True if at least one environment variable was set.",
    "dotenv-shlex": "cli.py imports shlex.",
    "dotenv-encoding": 'The default encoding is "utf-8".',
    "click-push": "push_context is called by Context.__enter__ (core.py:455).",
    "click-secho-err": "err defaults to False.",
    "its-hmac": "signer.py imports hmac.",
    "its-urlsafe": "URLSafeSerializer is defined in url_safe.py, line 72.",
    "its-urlsafe-piped": "It compresses the payload with zlib and encodes it as URL-safe base64.",
    "dotenv-parse-stream": "parse_stream is defined in parser.py.",
    "dotenv-get-key": "get_key returns the value of the key as a string, or None if it is not found.",
    "dotenv-longer": "main.py is longer (392 lines against 175).",
    "pkg-canonicalize": "canonicalize_name is defined in utils.py at line 45.",
    "pkg-invalid-version": "InvalidVersion is defined in version.py (line 59), a subclass of ValueError.",
    "pkg-letter-version": "Version.__init__ calls _parse_letter_version for the pre, post and dev parts.",
    "pkg-ast": "_parser.py imports ast.",
    "pkg-parse-tag": "parse_tag returns a frozenset of Tag instances.",
    "pkg-prereleases": "prereleases defaults to None: the specifiers then decide.",
    "pkg-longer": "tags.py is longer: 568 lines against 325 for markers.py.",
    "pkg-canonicalize-piped": "It normalizes a project name (PEP 503): lower-cased, separators as dashes.",
    "requests-overview": "Requests is a simple, yet elegant, HTTP library for Python.",
    "debug-overview": "debug is a tiny JavaScript debugging utility for Node.js and browsers.",
    "debug-tty": "src/node.js imports tty (line 5).",
    "debug-select-color": "selectColor is called by createDebug (src/common.js:118).",
    "debug-setup": "setup is defined in src/common.js at line 7.",
    "debug-longer": "src/browser.js (271 lines) is longer than src/node.js (263 lines).",
}

WRONG = {
    "click-overview": "This package provides utilities for the terminal.",
    "click-group": "The group decorator is defined in core.py.",
    "click-echo-nl": "The default value of nl is False.",
    "click-enum": "types.py imports enum.",
    "click-globals": "This module defines helper functions.",
    "its-overview": "It is a JSON library.",
    "its-zlib": "serializer.py imports zlib.",
    "its-derivation": "The default key derivation is hmac.",
    "its-derive-key": "derive_key is called by get_signature.",
    "its-timestamp": "It returns a float, time.time().",
    "its-longer": "timed.py is longer than signer.py.",
    "dotenv-overview": "It is a command line tool.",
    "dotenv-find": "find_dotenv is defined in cli.py.",
    "dotenv-load-returns": "load_dotenv returns None.",
    "dotenv-shlex": "main.py imports shlex.",
    "dotenv-encoding": "The default encoding is latin-1.",
    "click-push": "push_context is called in core.py at line 455.",
    "click-secho-err": "The default value of err is True.",
    "its-hmac": "serializer.py imports hmac.",
    "its-urlsafe": "URLSafeSerializer is defined in serializer.py.",
    "its-urlsafe-piped": "It adds a timestamp to the signature.",
    "dotenv-parse-stream": "parse_stream is defined in main.py.",
    "dotenv-get-key": "get_key returns a dict of the values.",
    "dotenv-longer": "parser.py is longer than main.py.",
    "pkg-canonicalize": "canonicalize_name is defined in version.py.",
    "pkg-invalid-version": "InvalidVersion is defined in specifiers.py.",
    "pkg-letter-version": "It is called by parse.",
    "pkg-ast": "markers.py imports ast.",
    "pkg-parse-tag": "It returns a Tag.",
    "pkg-prereleases": "prereleases defaults to False.",
    "pkg-longer": "markers.py is longer than tags.py.",
    "pkg-canonicalize-piped": "It checks that a name is valid.",
    "requests-overview": "It is a collection of tests.",
    "debug-overview": "It is a package for colors in the terminal.",
    "debug-tty": "src/common.js imports tty.",
    "debug-select-color": "selectColor is called by setup.",
    "debug-setup": "setup is defined in src/node.js.",
    "debug-longer": "src/node.js is longer than src/browser.js.",
}

# What the 1.5B model answered for `cat globals.py | aforo summarize` after reading three other files.
PACKAGE_FOR_MODULE = (
    "The code defines a set of classes and functions related to command-line argument parsing and completion "
    "in a Python application. It includes classes for different types of parameters, such as string, choice, "
    "and date, as well as classes for shell completion. The code also includes functions for resolving "
    "context and handling exceptions."
)


def test_a_summary_of_the_package_is_no_summary_of_the_piped_module() -> None:
    assert not is_right(BY_ID["click-globals"], PACKAGE_FOR_MODULE, "end_turn")


# What the issue saw the 0.5B model answer, and the constrained format copied as content.
PLACEHOLDERS = ("...", "", '{"answer": "..."}', "file_path")


def test_the_suite_covers_every_kind_with_16_questions_and_22_held_out_over_its_packages() -> None:
    held = [q for q in QUESTIONS if q.held_out]
    # Eight of issue 33's round, eight of issue 37's (packaging), six of issue 41's (requests, debug).
    assert (len(QUESTIONS), len(held)) == (38, 22)
    assert {q.kind for q in QUESTIONS if not q.held_out} == set(KINDS)
    assert {q.kind for q in held} == set(KINDS)
    # Issue 41's: an overview whose answer lives in a README, and a JavaScript project.
    assert {q.package for q in held} >= {"requests", "debug"} and PACKAGES["debug"].npm
    assert {q.package for q in QUESTIONS} == set(PACKAGES)
    assert len(BY_ID) == len(QUESTIONS) == len(RIGHT) == len(WRONG)
    assert all(q.source for q in QUESTIONS)  # each answer was checked by hand somewhere


@pytest.mark.parametrize("qid", sorted(RIGHT))
def test_a_right_answer_is_right_and_wrong_ones_are_not(qid: str) -> None:
    question = BY_ID[qid]
    assert is_right(question, RIGHT[qid], "end_turn")
    assert not is_right(question, WRONG[qid], "end_turn")
    assert not is_right(question, RIGHT[qid], "max_turns")  # right words, but the run did not end
    for placeholder in PLACEHOLDERS:
        assert not is_right(question, placeholder, "end_turn")


def test_the_model_flag_takes_a_size_or_a_name() -> None:
    assert pick_model("0.5b") is QWEN_CODER_05B
    assert pick_model("1.5B") is QWEN_CODER_15B
    assert pick_model("qwen2.5-coder-1.5b-instruct") is QWEN_CODER_15B
    assert pick_model(None) is QWEN_CODER_15B  # the engine's default


def test_the_citations_and_copies_of_an_answer_are_counted_with_what_the_run_marked(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\nz = 3\n")
    answer = "x is at a.py:1, y at a.py:9, and z at b.py:3."
    events = [
        {
            "type": "info",
            "step": "the answer was a list of places, aforo's own format ('a.py:1'); asked again",
        },
        {"type": "info", "step": "the answer cites what does not hold (...); asked once to correct it"},
        {"type": "warning", "message": "The model began repeating itself word for word; ..."},
    ]
    result = {"citations": [{"text": "a.py:9", "held": False}, {"text": "a.py:1", "held": True}]}
    got = counted(Outcome("q", "where", True, 1.0, "end_turn", 2, 0, answer), tmp_path, events, result)
    assert (got.lines_cited, got.lines_false, got.unmarked) == (3, 2, 1)  # b.py:3 was not marked
    assert (got.copied, got.asked_in_words, got.corrections, got.loop_stops) == (False, 1, 1, 1)
    copy = counted(Outcome("q", "where", False, 1.0, "end_turn", 1, 0, "a.py:1\na.py:2"), tmp_path, [], {})
    assert copy.copied and (copy.lines_cited, copy.lines_false, copy.unmarked) == (2, 0, 0)
