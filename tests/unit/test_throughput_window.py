"""The throughput benchmark's pure pieces outside the search: the driver-side window with the
inverse (Structured Streaming and pyarrow keep their 30 s window with it), the top-k order,
and reading which files each Structured Streaming batch read from its file-source log."""

from __future__ import annotations

import json
from collections import Counter

import pytest

# Last on the path: bench/ script names (traffic.py...) must not hide the apps packages.
from bench.paper.throughput_systems import WindowCounts, structured_batch_files, top


def test_window_adds_entering_and_subtracts_leaving_intervals():
    parts = [{"a": 2, "b": 1}, {"a": 1}, {"c": 4}, {}, {"b": 2}]
    window = WindowCounts(length=3)
    for i, counts in enumerate(parts):
        window.add(i, counts)
        want = sum((Counter(p) for p in parts[max(0, i - 2) : i + 1]), Counter())
        assert window.totals == dict(want)  # zeros dropped, like filterFunc in the DStreams


def test_window_keys_are_intervals_not_calls():
    window = WindowCounts(length=2)
    window.add(10, {"a": 1})
    window.add(11, {"a": 1})
    window.add(13, {"b": 1})  # interval 12 had no batch: 10 and 11 have both left
    assert window.totals == {"b": 1}
    with pytest.raises(ValueError, match="at least one"):
        WindowCounts(0)


def test_top_orders_by_count_then_word():
    assert top({"b": 3, "a": 3, "c": 5, "d": 1}, k=3) == [["c", 5], ["a", 3], ["b", 3]]


def test_structured_batch_files_reads_plain_and_compacted_logs(tmp_path):
    log = tmp_path / "sources" / "0"
    log.mkdir(parents=True)

    def entry(name: str, batch: int) -> str:
        return json.dumps({"path": f"file:///in/{name}", "timestamp": 1, "batchId": batch})

    (log / "9.compact").write_text("\n".join(["v1", entry("a", 0), entry("b", 9)]))
    (log / "10").write_text("\n".join(["v1", entry("c", 10), entry("d", 10)]))
    (log / ".10.crc").write_text("ignored")
    assert structured_batch_files(tmp_path) == {0: ["a"], 9: ["b"], 10: ["c", "d"]}
    assert structured_batch_files(tmp_path, 10) == {10: ["c", "d"]}
    assert structured_batch_files(tmp_path, 9) == {0: ["a"], 9: ["b"]}  # the compacted log
    assert structured_batch_files(tmp_path, 11) == {}


def test_the_writer_deletes_files_once_they_are_older_than_the_retention(tmp_path):
    from bench.paper.throughput_input import RecordPool, Writer

    pool = RecordPool(10_000, str(tmp_path / "pool"))
    watched = tmp_path / "in"
    watched.mkdir()
    writer = Writer(str(watched), pool, rate=2_000, interval_ms=50, files=8, retain_s=0.12)
    writer.start(lead_ms=0)
    writer.join()
    last = writer.written[-1].renamed_ms
    present = {p.name for p in watched.iterdir()}
    assert len(writer.written) == 8 and not any(n.startswith(".") for n in present)
    for w in writer.written:  # gone exactly when older than 120 ms at the last rename
        assert (w.name in present) == (last - w.renamed_ms <= 120), (w, last)
    assert writer.written[0].name not in present and writer.written[-1].name in present
    assert (watched / writer.written[-1].name).stat().st_size == 100 * 101  # rate x interval
