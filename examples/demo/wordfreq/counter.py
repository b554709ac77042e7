"""Counting words: split text into lower-case words and tally them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from wordfreq.stopwords import STOPWORDS

WORD = re.compile(r"[a-zA-Z']+")


def words(text: str) -> list[str]:
    """The words of `text`, lower-cased, without surrounding apostrophes."""
    return [w.strip("'").lower() for w in WORD.findall(text) if w.strip("'")]


def count_words(texts: Iterable[str], keep_stopwords: bool = False) -> Counter[str]:
    """Tally the words of every text; stop words are dropped unless asked to keep them."""
    counts: Counter[str] = Counter()
    for text in texts:
        for word in words(text):
            if keep_stopwords or word not in STOPWORDS:
                counts[word] += 1
    return counts


def top_words(counts: Counter[str], n: int) -> list[tuple[str, int]]:
    """The `n` most frequent words; ties are broken alphabetically so output is stable."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
