"""The columnar fast path (ssc.textBatchStream and BatchStream) against its oracle: the same
programs written with per-record operators over textFileStream, run side by side on the
same files in the same StreamingContext, must give identical output every interval."""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import Any

import pytest

from dstream import Duration, ManualClock, StreamingContext, StreamingListener, Time
from dstream.errors import StreamingJobError
from dstream.sources.textgen import generate_lines
from dstream.testing.streams import BatchCollector, normalize
from tests.integration.conftest import FAST_RETRY

T0 = 1_700_000_000_000
B = 1000
PATTERN = "ka"


def put(directory: Path, name: str, data: bytes, interval: int) -> None:
    """A file that lands in ``interval`` (modification time inside it), renamed in."""
    hidden = directory / f".{name}"
    hidden.write_bytes(data)
    mtime = (T0 + (interval - 1) * B + 300) * 1_000_000
    os.utime(hidden, ns=(mtime, mtime))
    hidden.rename(directory / name)


# Interval -> files. Generated records, and the cases where reading bytes in the worker
# could differ from Hadoop's line reader: terminators, a byte order mark, Unicode
# whitespace, bad UTF-8, no final newline, empty files, an interval without files.
FILES: dict[int, list[bytes]] = {
    1: ["\n".join(generate_lines(seed=1, count=3000)).encode() + b"\n"],
    2: [
        "\n".join(generate_lines(seed=2, count=1500)).encode(),
        b"\xef\xbb\xbfkato ka\r\nkaka\rk a\r\n\r\n",
        b"",
    ],
    3: [],
    4: [
        "caf\u00e9 ka\u2003kato\u00a0ka\x1cka  \tend\n\u3000ka\n".encode(),
        b"bad \xff ka byte\nka\xc3\n",
        "\n".join(generate_lines(seed=4, count=2000)).encode() + b"\n",
    ],
    5: ["\n".join(generate_lines(seed=5, count=500)).encode() + b"\n" * 3],
    6: [b"ka " * 50_000 + b"\nlast ka"],
}
INTERVALS = 8


class InputCounts(StreamingListener):
    def __init__(self) -> None:
        self.per_batch: list[dict[int, int]] = []

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.per_batch.append(dict(batchCompleted.batchInfo().input_records))


def run_both(
    sc: Any, directory: Path, per_record: Any, columnar: Any, listener: Any = None
) -> tuple[list[list[Any]], list[list[Any]]]:
    for interval, files in FILES.items():
        for i, data in enumerate(files):
            put(directory, f"f{interval}-{i}.txt", data, interval)
    clock = ManualClock(T0)
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    expected = BatchCollector(per_record(ssc.textFileStream(str(directory))))
    got = BatchCollector(columnar(ssc.textBatchStream(str(directory))))
    if listener is not None:
        ssc.addStreamingListener(listener)
    ssc.start()
    try:
        for _ in range(INTERVALS):
            clock.advance(B)
        assert ssc.wait_for_batch(Time(T0 + INTERVALS * B), 300)
        ssc.awaitTerminationOrTimeout(0)
    finally:
        ssc.stop(stopSparkContext=False)
    return expected.in_order(), got.in_order()


def test_grep_counts_equal_the_per_record_program(sc: Any, tmp_path: Path) -> None:
    expected, got = run_both(
        sc,
        tmp_path,
        lambda lines: lines.filter(lambda line: PATTERN in line).count(),
        lambda batches: batches.contains(PATTERN).count(),
    )
    assert len(got) == INTERVALS
    assert got == expected
    assert sum(n for (n,) in got) > 1000  # the pattern is common in the generated records


def test_windowed_word_counts_with_the_inverse_equal_the_per_record_program(
    sc: Any, tmp_path: Path
) -> None:
    def window(pairs: Any) -> Any:
        return pairs.reduceByKeyAndWindow(
            operator.add, operator.sub, 3, 1, filterFunc=lambda kv: kv[1] > 0
        )

    expected, got = run_both(
        sc,
        tmp_path,
        lambda lines: window(lines.flatMap(str.split).map(lambda w: (w, 1))),
        lambda batches: window(batches.words().countByValue()),
    )
    assert [normalize(b) for b in got] == [normalize(b) for b in expected]
    assert len(expected[3]) > 100  # interval 4 still sees interval 2's words


def test_count_by_value_and_window_equals_the_per_record_program(sc: Any, tmp_path: Path) -> None:
    expected, got = run_both(
        sc,
        tmp_path,
        lambda lines: lines.flatMap(str.split).countByValueAndWindow(3, 1),
        lambda batches: batches.words().countByValueAndWindow(3, 1),
    )
    assert [normalize(b) for b in got] == [normalize(b) for b in expected]
    assert len(expected[3]) > 100  # interval 4 still sees interval 2's words


def test_top_words_and_lines_equal_the_per_record_program(sc: Any, tmp_path: Path) -> None:
    def top(pairs: Any) -> Any:
        return pairs.transform(
            lambda rdd: rdd.context.parallelize(rdd.takeOrdered(10, lambda kv: (-kv[1], kv[0])))
        )

    def columnar(batches: Any) -> Any:
        return batches.records().union(top(batches.words().countByValue()))

    expected, got = run_both(
        sc,
        tmp_path,
        lambda lines: lines.union(top(lines.flatMap(str.split).countByValue())),
        columnar,
    )
    assert [normalize(b) for b in got] == [normalize(b) for b in expected]
    every_line = [line for batch in expected for line in batch if isinstance(line, str)]
    assert "kato ka" in every_line  # the byte order mark is gone, as textFile drops it
    assert "bad \ufffd ka byte" in every_line


def test_batch_operators_and_input_counts(sc: Any, tmp_path: Path) -> None:
    import pyarrow.compute as pc

    listener = InputCounts()
    expected, got = run_both(
        sc,
        tmp_path,
        lambda lines: lines.map(str.upper).filter(lambda line: len(line) > 50),
        lambda batches: (
            batches.mapBatches(pc.utf8_upper)
            .filterBatches(lambda a: pc.greater(pc.utf8_length(a), 50))
            .records()
        ),
        listener,
    )
    assert [normalize(b) for b in got] == [normalize(b) for b in expected]
    assert sum(map(len, got)) > 1000
    # Both sources report the same number of input records per interval.
    counts = [sorted(c.values()) for c in listener.per_batch]
    assert len(counts) == INTERVALS
    assert all(len(c) == 2 and c[0] == c[1] for c in counts), counts
    assert counts[0] == [3000, 3000]


def fails_in_its_first_interval(sc: Any, directory: Path, program: Any, match: str) -> None:
    """One file, one interval through ``program(batches)``: the interval fails with
    ``match``."""
    clock = ManualClock(T0)
    ssc = StreamingContext(sc, Duration(B), clock=clock, settings=FAST_RETRY)
    program(ssc.textBatchStream(str(directory))).count().pprint()
    ssc.start()
    try:
        clock.advance(B)
        with pytest.raises(StreamingJobError, match=match):
            ssc.awaitTerminationOrTimeout(120)
    finally:
        ssc.stop(stopSparkContext=False)


def test_a_batch_function_that_returns_no_array_names_the_operator(sc: Any, tmp_path: Path) -> None:
    put(tmp_path, "a.txt", b"x\ny\n", 1)
    fails_in_its_first_interval(
        sc,
        tmp_path,
        lambda batches: batches.mapBatches(lambda a: a.to_pylist()),
        r"mapBatches.*returned list.*pyarrow Array",
    )


def test_a_mask_of_the_wrong_shape_is_refused(sc: Any, tmp_path: Path) -> None:
    import pyarrow as pa

    put(tmp_path, "a.txt", b"x\ny\nz\nw\nv\n", 1)  # 2 or 3 lines a task
    fails_in_its_first_interval(
        sc,
        tmp_path,
        lambda batches: batches.filterBatches(lambda a: pa.array([True])),
        r"filterBatches.*length 1.*one bool per",
    )


def test_contains_wants_a_string(sc: Any, tmp_path: Path) -> None:
    ssc = StreamingContext(sc, Duration(B), clock=ManualClock(T0))
    with pytest.raises(TypeError, match=r"contains\(\) substring 3 must be a str"):
        ssc.textBatchStream(str(tmp_path)).contains(3)  # type: ignore[arg-type]
