"""Where the JSON-like brackets opened at each `{` or `[` of a text close, every opener at once, in one pass.

`TextHold` asks, opener after opener, whether the brackets opened there balance (a piece that may be a
call) or cannot be JSON. Scanning again from each opener is quadratic in a model's answer of repeated
openers (`{"a":` x 20 000). One pass answers all of them: an opener met outside the strings of a scan
already running is nested in it, and its own scan would see exactly what that scan sees from there (its
brackets on top, the same strings), so it closes when that scan pops it and fails when that scan fails.
An opener inside every running scan's string starts a scan of its own. Scans in the same state (outside
a string, inside one, just after a backslash in one) see the same future: they become one, whose
brackets below the point they met fork (a graph-structured stack: a bracket's `below` lists one bracket
per scan that met there). So at most three scans run, each character is looked at once by each, each
bracket is pushed, popped or failed once, and where scans meet the shorter list of brackets joins the
longer: linear time whatever the text (n log n at worst for the joins).

The results are a cache of the simple rule, each opener scanned on its own (the property test holds the
two together: tests/support/text_hold_reference.py): forgetting the brackets before a position only
makes later openers start scans of their own.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

FAILED = -1  # the brackets opened there cannot be JSON
_OPENERS = re.compile(r"[{\[]")
_FIRST = {"{": '"}', "[": "{[]"}  # after the opener, the first non-blank character must be one of these


@dataclass(eq=False, slots=True)
class _Bracket:
    at: int
    closer: str
    below: list[_Bracket]
    end: int | None = None  # where the piece ends (past the closer), FAILED, or None while open


@dataclass(eq=False, slots=True)
class _Scan:
    tops: list[_Bracket]
    in_string: bool = False
    escaped: bool = False
    kept: int = 0  # how many tops were left when forgotten ones were last dropped

    @property
    def state(self) -> tuple[bool, bool]:
        return self.in_string, self.escaped


@dataclass(eq=False, kw_only=True)
class BracketScan:
    """Feed it the text as it grows (`scan`), ask it about openers at increasing positions (`end`)."""

    scanned: int = 0  # characters and brackets looked at (the linear-time checks count them)
    _at: int = 0  # the position of the next character to scan
    _scans: list[_Scan] = field(default_factory=list)
    _brackets: dict[int, _Bracket] = field(default_factory=dict)
    _order: deque[_Bracket] = field(default_factory=deque)  # the same brackets, by position
    _first: _Bracket | None = None  # an opener whose first non-blank character has not come yet

    def end(self, at: int) -> int | None:
        """Where the piece the opener at `at` opens ends, FAILED, or None while its brackets are open
        (as far as the text was scanned)."""
        return self._brackets[at].end

    def scan(self, text: str, start: int, stop: int) -> None:
        """Scan `text`, which begins at position `start`, up to position `stop`."""
        i = self._at
        while i < stop:
            if not self._scans and self._first is None:  # prose: on to the next opener at once
                m = _OPENERS.search(text, i - start, stop - start)
                if m is None:
                    break
                i = m.start() + start
            self._step(text[i - start], i)
            self.scanned += 1
            i += 1
        self._at = max(self._at, stop)

    def forget(self, before: int) -> None:
        """No opener before `before` will be asked about: drop them (their brackets stop forking). Text
        decided without a question (prose, a fence) is not scanned: the scans in it are dropped, and
        the next opener starts its own."""
        while self._order and self._order[0].at < before:
            bracket = self._order.popleft()
            del self._brackets[bracket.at]
            bracket.below.clear()
        for scan in self._scans:
            if len(scan.tops) > 2 * scan.kept + 16:  # now and then, so each top costs O(1) here
                self.scanned += len(scan.tops)
                scan.tops = [top for top in scan.tops if top.at >= before]
                scan.kept = len(scan.tops)
        if self._at < before:
            self._scans, self._first, self._at = [], None, before

    def _step(self, c: str, i: int) -> None:
        first = self._first
        if first is not None and not c.isspace():
            self._first = None
            if c not in _FIRST["{" if first.closer == "}" else "["] and first.end is None:
                first.end = FAILED
        outside: _Scan | None = None
        for scan in list(self._scans):
            if scan.in_string:
                if scan.escaped:
                    scan.escaped = False
                elif c == "\\":
                    scan.escaped = True
                elif c == '"':
                    scan.in_string = False
                elif c == "\n":  # a JSON string holds no raw newline: no bracket open here can close
                    self._fail(scan.tops)
                    self._scans.remove(scan)
            elif c == '"':
                scan.in_string = True
            elif c in "}]":
                self._pop(scan, c, i)
            elif c in "{[":
                outside = scan
        if c in "{[":
            self._open(c, i, outside)
        self._merge()

    def _open(self, c: str, i: int, scan: _Scan | None) -> None:
        bracket = _Bracket(i, "}" if c == "{" else "]", scan.tops if scan is not None else [])
        self._brackets[i] = bracket
        self._order.append(bracket)
        self._first = bracket
        if scan is None:
            self._scans.append(_Scan([bracket]))
        else:
            scan.tops = [bracket]

    def _pop(self, scan: _Scan, c: str, i: int) -> None:
        self.scanned += len(scan.tops)
        tops: list[_Bracket] = []
        for top in scan.tops:
            if top.closer != c:
                self._fail([top])
                continue
            if top.end is None:
                top.end = i + 1
            tops += top.below
        scan.tops = tops
        if not tops:  # every bracket this scan held has closed or failed
            self._scans.remove(scan)

    @staticmethod
    def _fail(tops: list[_Bracket]) -> None:
        """These brackets and every one below them cannot close (each is below one top only)."""
        todo = list(tops)
        while todo:
            bracket = todo.pop()
            if bracket.end is None:
                bracket.end = FAILED
            todo += bracket.below
            bracket.below = []

    def _merge(self) -> None:
        if len(self._scans) < 2:
            return
        by_state: dict[tuple[bool, bool], _Scan] = {}
        for scan in self._scans:
            same = by_state.get(scan.state)
            if same is None:
                by_state[scan.state] = scan
            else:  # the shorter list goes into the longer one: each top moves O(log n) times
                small, large = sorted((same.tops, scan.tops), key=len)
                self.scanned += len(small)
                large += small
                same.tops = large
        self._scans = list(by_state.values())
