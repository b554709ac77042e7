"""Command line: read the files (or standard input), count, print a table."""

from __future__ import annotations

import argparse
import sys

from wordfreq.counter import count_words, top_words


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="wordfreq", description="Print the most frequent words.")
    parser.add_argument("files", nargs="*", help="text files (default: standard input)")
    parser.add_argument("--top", type=int, default=10, help="how many words to print (default 10)")
    parser.add_argument("--keep-stopwords", action="store_true", help="count 'the', 'and', ... too")
    return parser.parse_args(argv)


def read_texts(paths: list[str]) -> list[str]:
    if not paths:
        return [sys.stdin.read()]
    texts = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as fh:
            texts.append(fh.read())
    return texts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.top < 1:
        print("wordfreq: --top must be at least 1", file=sys.stderr)
        return 2
    try:
        texts = read_texts(args.files)
    except OSError as exc:
        print(f"wordfreq: {exc}", file=sys.stderr)
        return 1
    counts = count_words(texts, keep_stopwords=args.keep_stopwords)
    for word, n in top_words(counts, args.top):
        print(f"{n:6d}  {word}")
    return 0
