from wordfreq.counter import count_words, top_words, words


def test_words_are_lower_cased_and_trimmed() -> None:
    assert words("The 'Cat' sat.") == ["the", "cat", "sat"]


def test_stopwords_are_skipped_unless_kept() -> None:
    assert count_words(["the cat and the hat"]) == {"cat": 1, "hat": 1}
    assert count_words(["the cat"], keep_stopwords=True) == {"the": 1, "cat": 1}


def test_ties_are_alphabetical() -> None:
    assert top_words(count_words(["b a b a c"]), 2) == [("a", 2), ("b", 2)]
