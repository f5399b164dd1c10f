"""The demo applications: their streams on the rate source and on a directory of files,
checked against counts recomputed from the raw records; and the main job end to end."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dstream import Time
from dstream.sources.rate import records_in_interval
from dstream.sources.textgen import generate_lines
from dstream.testing.streams import BatchCollector

from .conftest import Harness

APPS = Path(__file__).resolve().parents[2] / "apps"
sys.path.insert(0, str(APPS))

import topk  # noqa: E402
import wordcount  # noqa: E402
from pyspark import cloudpickle  # noqa: E402

from tests.run_app import run_app  # noqa: E402

# The apps are scripts, not installed modules: ship their functions by value.
cloudpickle.register_pickle_by_value(topk)
cloudpickle.register_pickle_by_value(wordcount)


def rate_lines(seed: int, rate: int, end_ms: int, batch_ms: int, parts: int) -> list[str]:
    total = records_in_interval(rate, end_ms, batch_ms)
    lines: list[str] = []
    for p in range(parts):
        lo, hi = total * p // parts, total * (p + 1) // parts
        lines.extend(generate_lines(hash((seed, end_ms, p)), hi - lo, 100))
    return lines


def test_wordcount_and_topk_on_the_rate_source(harness: Any) -> None:
    h: Harness = harness()
    lines = h.ssc.rateStream(200, numPartitions=2, seed=5)
    counts = BatchCollector(wordcount.windowed_counts(lines, 3))
    tops = BatchCollector(topk.top_words(lines, 10, 3))
    h.ssc.start()
    h.run_batches(5)
    raw = {t: rate_lines(5, 200, t, 1000, 2) for t in range(1000, 6000, 1000)}
    for t in range(1000, 6000, 1000):
        window = [
            w
            for u in range(max(1000, t - 2000), t + 1, 1000)
            for line in raw[u]
            for w in line.split()
        ]
        expected = Counter(window)
        assert dict(counts.batches[Time(t)]) == expected
        (top,) = tops.batches[Time(t)]
        assert top == sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:10]


@pytest.mark.parametrize("columnar", [False, True])
def test_wordcount_on_a_directory_of_files(harness: Any, tmp_path: Path, columnar: bool) -> None:
    t0 = 1_700_000_000_000
    h: Harness = harness(start_ms=t0)
    if columnar:
        stream = wordcount.windowed_counts_columnar(h.ssc.textBatchStream(str(tmp_path)), 2)
    else:
        stream = wordcount.windowed_counts(h.ssc.textFileStream(str(tmp_path)), 2)
    counts = BatchCollector(stream)
    h.ssc.start()
    texts = ["to be or not to be", "be quick", "not now"]
    for i, text in enumerate(texts):
        hidden = tmp_path / f".f{i}"
        hidden.write_text(text + "\n")
        os.utime(hidden, ns=((t0 + i * 1000 + 10) * 1_000_000,) * 2)
        hidden.rename(tmp_path / f"f{i}.txt")
        h.run_batches(1)
    got = [dict(b) for b in counts.in_order()]
    assert got == [
        {"to": 2, "be": 2, "or": 1, "not": 1},
        {"to": 2, "be": 3, "or": 1, "not": 1, "quick": 1},
        {"be": 1, "quick": 1, "not": 1, "now": 1},
    ]


@pytest.mark.parametrize("app", ["wordcount.py", "topk.py"])
def test_the_apps_run_end_to_end_and_stop_cleanly(app: str) -> None:
    done = run_app(APPS / app, ["--seconds", "4", "--rate", "500", "--quiet"])
    assert "top" in done.stdout and done.stdout.rstrip().endswith("stopped cleanly")
