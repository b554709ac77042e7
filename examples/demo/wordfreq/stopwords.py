"""English stop words skipped by default (a short list on purpose: easy to read and to change)."""

STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have",
        "he", "her", "his", "i", "in", "is", "it", "its", "of", "on", "or", "she", "so", "that",
        "the", "their", "them", "they", "this", "to", "was", "we", "were", "will", "with", "you",
    }
)  # fmt: skip
