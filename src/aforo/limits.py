"""Every input aforo takes from outside has a limit, and each limit is named here, once (SPEC §8).

Servers, models, workspaces and the state directory are not trusted to be small or well-behaved: a
stream line with no newline, a 2 GiB AGENTS.md or a JSON document nested ten thousand deep must end in
a clear error, never in exhausted memory, a hang or a traceback. Code that enforces a limit imports it
from here and raises `LimitExceeded(limit, what)`, whose message names the limit, its value and how to
raise it where a user could legitimately need more. docs/limits.md's table lists every entry of
`LIMITS` (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Limit:
    name: str
    value: int | float
    unit: str  # "bytes", "seconds", "levels", "characters"...
    what: str  # what it bounds, in a few words
    # How a user raises it (a config key or flag), or None when it is fixed: raising it would only
    # let a hostile input do more harm, never let a legitimate one through.
    setting: str | None = None

    def describe(self) -> str:
        value = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:g}"
        return f"{self.name} ({value} {self.unit}: {self.what})"


LIMITS: dict[str, Limit] = {}


def limit(name: str, value: int | float, unit: str, what: str, setting: str | None = None) -> Limit:
    """Register a limit; a name is registered once."""
    if name in LIMITS:
        raise ValueError(f"limit {name!r} is defined twice")
    LIMITS[name] = entry = Limit(name, value, unit, what, setting)
    return entry


JSON_DEPTH = limit("json_depth", 64, "levels", "nesting of JSON from servers, text calls or state files")
# What SQLite (the telemetry) and most JSON readers hold; Python would read any integer, up to 4 300
# digits, then raise ValueError past them.
JSON_INTEGER = limit(
    "json_integer",
    2**63 - 1,
    "in magnitude",
    "an integer in JSON from servers, text calls or state files (int64)",
)
TOOL_SECONDS = limit("tool_seconds", 30, "seconds", "wall time of one tool call")
READ_BYTES = limit("read_bytes", 256 * MiB, "bytes", "file bytes one Read call scans")
# A line number a Read names (`a.py:N`): no file it scans has more lines than 18 digits count, and int()
# refuses past 4 300 (a model's 5 000-digit number was "internal error in tool Read", issue 39 D14).
LINE_DIGITS = limit("line_digits", 18, "digits", "the line number a Read call names (`path:N`)")
SYMBOL_FILE_BYTES = limit(
    "symbol_file_bytes",
    2 * MiB,
    "bytes",
    "a file Read shows by its definitions or the question's names, or Find parses",
)
SYMBOL_FILES = limit("symbol_files", 200, "files", "files parsed for the definitions of one name (Find)")
AGENTS_MD_BYTES = limit("agents_md_bytes", 16_000, "bytes", "AGENTS.md bytes put in the system prompt")
OVERVIEW_CHARS = limit(
    "overview_chars", 600, "characters", "the list of the workspace's files in the system prompt"
)
# The repository map and the pre-search (aforo.navigate): what one index of the workspace reads.
MAP_FILES = limit("map_files", 20_000, "files", "source files the repository map indexes")
MAP_FILE_BYTES = limit("map_file_bytes", 1 * MiB, "bytes", "one source file the repository map parses")
MAP_NAMES = limit("map_names", 4_000, "names", "distinct names one file's references are counted from")
MAP_SECONDS = limit("map_seconds", 20, "seconds", "building the repository map (the rest waits a run)")
# An answer's citations, checked before the user sees it (aforo.citations): a longer list is a list of
# places, not an answer; what is past it is not checked.
CITATIONS = limit("citations", 64, "citations", "the places one answer cites that are checked")
CITATION_SECONDS = limit(
    "citation_seconds", 5, "seconds", "checking one answer's citations (what is left is not judged)"
)
TEXT_CALL_LITERAL_CHARS = limit(
    "text_call_literal_chars",
    16 * KiB,
    "characters",
    "a tool call an answer writes as a Python literal (single quotes); a longer one stays text",
)
# A label quotes a call's input (the summary request's markers and result labels, the evidence list):
# a model's 100 000-character argument repeated there left a summary request nothing could shrink.
LABEL_CHARS = limit(
    "label_chars", 200, "characters", "a string of a tool call's input quoted in a label (the rest counted)"
)
CONFIG_BYTES = limit("config_bytes", 1 * MiB, "bytes", "size of a config file (config.toml, .aforo.toml)")
# The tokenizer.json of common models takes 2-35 MB (Qwen2.5's 7 MB, Gemma 3's 33 MB).
TOKENIZER_BYTES = limit("tokenizer_bytes", 64 * MiB, "bytes", "a tokenizer.json (--tokenizer, tokenizer)")

# ripgrep needs tens of MB for a large tree; its ignore rules are what grows (a 200 000-line .gitignore
# took it to 3.8 GB; 2 000 rules with wildcards take 32 MB). The data segment (RLIMIT_DATA: the heap
# and every private writable mapping, Linux 4.7+) is what it allocates; the address space would also
# count the 64 MiB each thread's malloc arena reserves and never touches.
CHILD_MEMORY_BYTES = limit(
    "child_memory_bytes", 1024 * MiB, "bytes", "memory a child process allocates (ripgrep, for Grep and Glob)"
)

# --- what servers send (providers/, wire/) ---------------------------------------------------------
STREAM_LINE_BYTES = limit(
    "stream_line_bytes", 4 * MiB, "bytes", "one line of a streamed answer (an SSE `data:` or NDJSON line)"
)
# An answer may take this many bytes on the wire per token it may generate: a streamed token costs
# 200-400 bytes of JSON around it (ids, model name, usage), so this is several times what any server
# sends, and far from the gigabytes a stream that never ends would fill memory with.
ANSWER_BYTES = limit(
    "answer_bytes",
    1 * KiB,
    "bytes per token of max_tokens",
    "one streamed answer, decompressed (at least 1 MiB)",
    setting="--max-tokens (the budget grows with it)",
)
ANSWER_BYTES_FLOOR = 1 * MiB
ANSWER_TIMEOUT = limit(
    "answer_timeout",
    1800,
    "seconds",
    "wall time of one answer, from the request to its last byte",
    setting="--answer-timeout SECONDS or answer_timeout in the config file",
)
READ_TIMEOUT = limit(
    "read_timeout",
    600,
    "seconds",
    "the server's silence while it answers (prompt processing included)",
    setting="--read-timeout SECONDS or read_timeout in the config file",
)
# A server encodes an answer once (gzip); a proxy may encode it again. Each layer is inflated within
# the answer's budget; more layers would only cost a decompressor each.
CONTENT_ENCODINGS = limit(
    "content_encodings", 3, "layers", "Content-Encoding steps of one server answer (gzip, deflate)"
)
RUN_SECONDS = limit(
    "run_seconds",
    150,
    "seconds",
    "wall time of one question before the model is asked to answer from what it has",
    setting="--time-budget SECONDS or time_budget in the config file",
)
# A compaction's summary before a question's call may take this share of the question's time; past it the
# conversation is compacted with aforo's record alone (its requests, decisions and evidence, kept
# verbatim). Stopped at the question's end instead, a summary on a loaded 2-core machine (2 600 tokens
# read at 17-26 tokens/s) failed, the conversation was kept full, and every question after it failed the
# same way: four in a row ended `time_budget` with no answer.
SUMMARY_TIME_SHARE = limit(
    "summary_time_share",
    0.5,
    "of run_seconds",
    "a compaction's summary within a question; past it aforo's own record stands in for the summary",
    setting="--time-budget (it scales with it)",
)
# Past the time budget the model is asked for its answer; that answer has this share of the budget more,
# and a stream still going then is stopped, kept as far as it got: a question takes at most 1.2 x the
# budget (two runs went 55 s past 150 s: a call started before it streamed on, then the answer's).
LATE_ANSWER_SHARE = limit(
    "late_answer_share",
    0.2,
    "of run_seconds",
    "the answer asked for once the time budget is spent; a stream still going after it is stopped",
    setting="--time-budget (it scales with it)",
)
RESPONSE_BYTES = limit(
    "response_bytes",
    16 * MiB,
    "bytes",
    "a server answer read whole (error bodies, discovery, counts, probes), decompressed",
)
# Past any window (10M tokens) by far, and small enough that sums of a session's reports stay int64.
USAGE_TOKENS = limit(
    "usage_tokens",
    2**40,
    "tokens",
    "one count in a server's usage report; a report past it is ignored, with a warning",
)
# `aforo probe` sends ever larger prompts until one does not fit: a server that takes this many tokens
# is reported as fitting up to it. One probe request is answered whole (not streamed), its prompt read
# first, so it waits for what a read_timeout would allow a streamed one.
PROBE_WINDOW = limit("probe_window", 262_144, "tokens", "the largest window `aforo probe` measures")
PROBE_SECONDS = limit("probe_seconds", 600, "seconds", "one request of `aforo probe`, answered whole")
RETRY_AFTER = limit(
    "retry_after", 30, "seconds", "the longest `Retry-After` aforo waits for; longer, it says when to retry"
)

# --- aforo's own state (store/) -------------------------------------------------------------------
# A session holds a tool input (json_depth deep at most) about 5 levels down: state files get room.
STATE_JSON_DEPTH = limit("state_json_depth", 96, "levels", "nesting of a session or checkpoint file")
SESSION_BYTES = limit("session_bytes", 64 * MiB, "bytes", "one session file, written or read")
CHECKPOINT_BYTES = limit(
    "checkpoint_bytes",
    64 * MiB,
    "bytes",
    "one checkpoint file, written or read (the checkpoint quotas bound them together)",
)
STATE_FILE_BYTES = limit(
    "state_file_bytes", 16 * MiB, "bytes", "another state file read whole (trusted workspaces, probe results)"
)
# The session's trail (context/trail.py): what aforo itself keeps of a session, across compactions.
TRAIL_REQUEST_CHARS = limit(
    "trail_request_chars",
    1 * MiB,
    "characters",
    "the user's requests a session's trail keeps verbatim (past it the oldest after the first leave)",
)
TRAIL_ITEM_CHARS = limit(
    "trail_item_chars", 300, "characters", "one rule, decision, fact or conclusion in a session's trail"
)
TRAIL_RULES = limit("trail_rules", 40, "items", "rules, and decisions, a session's trail keeps (the newest)")
TRAIL_SOURCES = limit("trail_sources", 200, "sources", "files read or searched a session's trail keeps")
TRAIL_ANSWERS = limit("trail_answers", 100, "answers", "conclusions of answers a session's trail keeps")
TRAIL_BLOCK_CHARS = limit(
    "trail_block_chars", 3_600, "characters", "the session's trail as shown to the model for one question"
)


def answer_bytes(max_tokens: int) -> int:
    """The byte budget of one streamed answer that may generate `max_tokens` tokens."""
    return max(ANSWER_BYTES_FLOOR, max_tokens * int(ANSWER_BYTES.value))


STDIN_BYTES = limit("stdin_bytes", 1 * MiB, "bytes", "piped standard input, added before the question")
TYPEAHEAD_BYTES = limit(
    "typeahead_bytes", 64 * KiB, "bytes", "keys typed while a run works, kept for the next prompt"
)

# --- what clients send to `aforo serve` (gateway/) ---------------------------------------------------
SERVE_REQUEST_BYTES = limit(
    "serve_request_bytes", 32 * MiB, "bytes", "one request body a client sends to aforo serve"
)
SERVE_MODELS = limit(
    "serve_models", 64, "models", "models aforo serve keeps a lane open for (the least recently used goes)"
)
# Whatever max_tokens a client asks (10 000 000 costs it nothing), one answer the gateway passes on or
# holds to judge stays within this: ~50 000 tokens at 300 bytes each, past a small model's window.
SERVE_ANSWER_BYTES = limit(
    "serve_answer_bytes", 16 * MiB, "bytes", "one answer aforo serve passes on or holds, decompressed"
)
SERVE_CONVERSATIONS = limit(
    "serve_conversations", 256, "conversations", "conversations aforo serve follows (the oldest idle goes)"
)
# A model name is a short tag or a path (`hf.co/org/repo:Q4_K_M`, `/models/Qwen2.5-Coder-1.5B`); a longer
# one is no name but a client filling the log and the telemetry with it, request after request.
SERVE_MODEL_CHARS = limit(
    "serve_model_chars", 1024, "characters", "a model name a client sends to aforo serve"
)

# uvicorn reads no timeout into a request until its first answer: without one, a client that sends half a
# header (or one byte of its body) and waits holds its connection, and its descriptor, for ever.
SERVE_REQUEST_SECONDS = limit(
    "serve_request_seconds", 60, "seconds", "a client's time to send one request whole (headers and body)"
)
SERVE_IDLE_SECONDS = limit(
    "serve_idle_seconds", 5, "seconds", "a client's connection kept open between its requests"
)
SERVE_HEADER_BYTES = limit(
    "serve_header_bytes", 16 * KiB, "bytes", "the request line and headers of a request"
)
# Each request the gateway passes on also holds a descriptor upstream, and the process needs some of its
# own (the telemetry, checkpoints, the listening socket): at most half of what the process may open
# after `RESERVED_DESCRIPTORS` (and the connections being accepted, `gateway.connections.connection_cap`),
# so that a flood of connections never leaves it unable to accept one.
SERVE_CONNECTIONS = limit(
    "serve_connections",
    512,
    "connections",
    "clients connected to aforo serve at once (fewer where few descriptors are allowed)",
)
RESERVED_DESCRIPTORS = 64
SERVE_KEY_BYTES = limit("serve_key_bytes", 4 * KiB, "bytes", "the key file of aforo serve (--key-file)")

# --- what aforo records or prints (store/telemetry, aforo serve's log) ---------------------------------
RECORD_CHARS = limit(
    "record_chars", 2000, "characters", "one text a telemetry row or a log line of aforo serve records"
)


def clipped(text: str, most: int) -> str:
    """`text`, or its first `most` characters and how many more there were: what a record holds of a string
    nobody bounded before (a client's, a server's)."""
    if len(text) <= most:
        return text
    return f"{text[:most]}… ({len(text) - most:,} more characters)"
