"""wordfreq: the most frequent words of text files."""

from wordfreq.counter import count_words, top_words

__all__ = ["count_words", "top_words"]
__version__ = "0.2.0"
