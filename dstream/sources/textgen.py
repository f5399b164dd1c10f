"""Deterministic text: fixed-width records of words drawn from a fixed vocabulary with a
Zipf-like distribution (word of rank r has weight 1/r). Used by the rate source, the demos
and the benchmark generator, so every system in a comparison reads the same records.

>>> lines = generate_lines(seed=7, count=3, record_bytes=100)
>>> [len(line.encode()) for line in lines]
[100, 100, 100]
>>> lines == generate_lines(seed=7, count=3, record_bytes=100)
True
"""

from __future__ import annotations

import functools
import itertools
import random

__all__ = ["generate_lines", "vocabulary"]

VOCABULARY_SIZE = 10_000
_SYLLABLES = (
    "ka",
    "ri",
    "to",
    "mu",
    "se",
    "na",
    "lo",
    "vi",
    "de",
    "pa",
    "zu",
    "en",
    "ol",
    "ba",
    "ti",
    "ro",
    "ne",
    "sa",
    "ku",
    "fi",
    "ma",
    "go",
    "le",
    "ri",
    "da",
    "po",
    "ju",
    "wa",
    "xe",
    "yo",
    "an",
    "ir",
    "us",
    "er",
    "hal",
    "mon",
    "tes",
    "gri",
    "vor",
    "lin",
)


@functools.lru_cache(maxsize=4)
def vocabulary(size: int = VOCABULARY_SIZE, seed: int = 20131103) -> tuple[str, ...]:
    """``size`` distinct lowercase pseudo-words, the same on every machine."""
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        n = rng.choice((1, 2, 2, 3, 3, 4))
        words["".join(rng.choice(_SYLLABLES) for _ in range(n))] = None
    return tuple(words)


@functools.lru_cache(maxsize=4)
def _cumulative_weights(size: int) -> tuple[float, ...]:
    return tuple(itertools.accumulate(1.0 / rank for rank in range(1, size + 1)))


def generate_lines(
    seed: int, count: int, record_bytes: int = 100, vocabulary_size: int = VOCABULARY_SIZE
) -> list[str]:
    """``count`` ASCII lines of exactly ``record_bytes`` bytes: words separated by single
    spaces, padded with trailing spaces. Deterministic in all arguments."""
    if record_bytes < 8:
        raise ValueError(f"record_bytes {record_bytes} is too small; use at least 8")
    words = vocabulary(vocabulary_size)
    cum = _cumulative_weights(vocabulary_size)
    rng = random.Random(seed)
    # A record holds about record_bytes / 8 words; draw a few more than needed at once.
    per_line = record_bytes // 4
    out = []
    for _ in range(count):
        drawn = rng.choices(words, cum_weights=cum, k=per_line)
        parts: list[str] = []
        size = -1
        for w in drawn:
            if size + 1 + len(w) > record_bytes:
                break
            parts.append(w)
            size += 1 + len(w)
        out.append(" ".join(parts).ljust(record_bytes))
    return out
