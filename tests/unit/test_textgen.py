"""The deterministic text generator behind the rate source and the benchmarks."""

from __future__ import annotations

from collections import Counter

import pytest

from dstream.sources.rate import records_in_interval
from dstream.sources.textgen import generate_lines, vocabulary


def test_lines_are_fixed_width_ascii_and_deterministic() -> None:
    lines = generate_lines(seed=1, count=200, record_bytes=100)
    assert all(len(line.encode("ascii")) == 100 for line in lines)
    assert lines == generate_lines(seed=1, count=200, record_bytes=100)
    assert lines != generate_lines(seed=2, count=200, record_bytes=100)


def test_words_come_from_the_vocabulary_with_a_zipf_like_skew() -> None:
    words = Counter(w for line in generate_lines(3, 2000) for w in line.split())
    vocab = vocabulary()
    assert set(words) <= set(vocab)
    top = words[vocab[0]]
    assert top > 5 * words[vocab[50]]  # rank 1 vs rank 51: weight ratio 51
    assert len(set(vocab)) == len(vocab) == 10_000


def test_too_small_records_are_refused() -> None:
    with pytest.raises(ValueError, match="record_bytes 4 is too small"):
        generate_lines(0, 1, record_bytes=4)


@pytest.mark.parametrize(("rate", "batch_ms"), [(1000, 1000), (333, 500), (7, 300), (0, 1000)])
def test_interval_counts_add_up_to_the_exact_rate(rate: int, batch_ms: int) -> None:
    total = sum(
        records_in_interval(rate, end, batch_ms) for end in range(batch_ms, 60_001, batch_ms)
    )
    assert total == rate * (60_000 // batch_ms * batch_ms) // 1000
