"""The input every system of the peers harness reads, and the oracle of its results (#62).

A record is one 100-byte line (101 with its newline)::

    TTTTTTTTTTTTT kKKKKKK V wwww wwww ...
    |             |       | words: dstream.sources.textgen's Zipf text, cut to fit
    |             |       value, 1-9 (the keyed running total adds these)
    |             key, one of ``keys``
    event time, epoch ms, 13 digits (when the writer wrote the record's file)

Records come from a pool generated once (the words are textgen's, so Grep's pattern is in
~2 % of the lines as in bench/paper/throughput.py); file ``n`` of ``count`` records is pool
records ``[n * count, (n + 1) * count)`` with its event time patched in, so the same bytes
(but the time) in every run and for every system.

The workloads, and what each system writes (see bench/peers/programs/README.md):

- ``grep``: per event second, how many records contain :data:`PATTERN` (``g`` lines);
- ``total``: per key, the running sum of the values (``t`` lines, the newest total);
- ``wordcount``: per word, its count over a :data:`WINDOW_MS` window sliding by the interval
  (``w`` lines, one per word and window), the words being each record's text after its
  prefix (:func:`words`), as bench/paper/throughput.py's WordCount;
- ``topk``: the :data:`TOP` most frequent words over the same window (``k`` lines, one per
  word of the top and window), as bench/paper/throughput.py's TopK.

:func:`oracle` computes them in plain Python from the bytes written (the windowed ones: the
counts over all records, which one window holds when the input is shorter than a window).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dstream.sources.textgen import generate_lines

__all__ = [
    "KINDS",
    "LINE_BYTES",
    "PATTERN",
    "PREFIX",
    "TOP",
    "WINDOW_MS",
    "WORKLOADS",
    "Oracle",
    "Pool",
    "oracle",
    "parse",
    "top",
    "words",
]

RECORD_BYTES = 100
LINE_BYTES = RECORD_BYTES + 1
TS_DIGITS = 13
PREFIX = TS_DIGITS + 1 + 7 + 1 + 1 + 1  # "TTTTTTTTTTTTT kKKKKKK V "
PATTERN = "kato"  # as bench/paper/throughput_systems.py: in ~2 % of the records
WORKLOADS = ("grep", "total", "wordcount", "topk")
KINDS = {"grep": "g", "total": "t", "wordcount": "w", "topk": "k"}  # each one's output lines
WINDOW_MS = 30_000  # WordCount's and TopK's window, sliding by the interval
TOP = 10
CHUNK = 10_000


def parse(line: str) -> tuple[int, str, int]:
    """``(event time ms, key, value)`` of one record."""
    return int(line[:13]), line[14:21], int(line[22])


def words(line: str) -> list[str]:
    """The words of one record: its text after the prefix, split on whitespace."""
    return line[PREFIX:].split()


def top(counts: dict[str, int], k: int = TOP) -> list[tuple[str, int]]:
    """The ``k`` most frequent words, count descending then word ascending (as
    bench/paper/throughput_systems.py's ``top``)."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


class Pool:
    """``records`` deterministic lines over ``keys`` keys, cached in ``cache_dir``."""

    def __init__(self, records: int, keys: int, cache_dir: str | Path) -> None:
        if records < CHUNK or records % CHUNK:
            raise ValueError(f"pool of {records} records must be a positive multiple of {CHUNK}")
        if not 1 <= keys <= 1_000_000:
            raise ValueError(f"keys {keys} must be in 1..1,000,000 (keys are k + 6 digits)")
        path = Path(cache_dir) / f"peers-pool-{records}x{keys}.txt"
        if not path.exists() or path.stat().st_size != records * LINE_BYTES:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            with tmp.open("w", encoding="ascii") as out:
                for c in range(records // CHUNK):
                    lines = generate_lines(c, CHUNK, RECORD_BYTES)
                    base = c * CHUNK
                    out.write(
                        "".join(
                            f"{0:013d} k{_key(base + i, keys):06d} {1 + (base + i) % 9} "
                            f"{line[PREFIX:]}\n"
                            for i, line in enumerate(lines)
                        )
                    )
            os.replace(tmp, path)
        self.data = np.frombuffer(path.read_bytes(), dtype=np.uint8).reshape(records, LINE_BYTES)
        self.records = records
        self.keys = keys

    def file(self, n: int, count: int, ts_ms: int) -> bytes:
        """File ``n`` of ``count`` records each, every record stamped ``ts_ms``."""
        start = (n * count) % self.records
        idx = (np.arange(count) + start) % self.records
        rows = self.data[idx]  # a copy
        rows[:, :TS_DIGITS] = np.frombuffer(f"{ts_ms:013d}".encode(), dtype=np.uint8)
        return rows.tobytes()


def _key(i: int, keys: int) -> int:
    # Knuth's multiplicative hash: consecutive records spread over the keys.
    return (i * 2654435761) % (2**32) % keys


@dataclass
class Oracle:
    """What every system must compute over the records written."""

    grep: dict[int, int]  # event second -> records containing PATTERN
    total: dict[str, int]  # key -> sum of values
    records: int
    words: dict[str, int]  # word -> count over every record

    def add(self, data: bytes) -> None:
        for raw in data.decode("ascii").splitlines():
            ts, key, value = parse(raw)
            if PATTERN in raw:
                self.grep[ts // 1000] = self.grep.get(ts // 1000, 0) + 1
            self.total[key] = self.total.get(key, 0) + value
            for w in raw[PREFIX:].split():
                self.words[w] = self.words.get(w, 0) + 1
            self.records += 1


def oracle(files: list[bytes]) -> Oracle:
    o = Oracle({}, {}, 0, {})
    for data in files:
        o.add(data)
    return o
