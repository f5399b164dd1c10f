"""Live queries on a running program: each reads exactly one completed interval (a pinned,
immutable RDD), even while the stream moves on, checkpoints and deletes old checkpoints, and
after a driver restart."""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import Any

import pytest

from dstream import ManualClock, StreamingContext, Time
from dstream.dstream import handle_for
from dstream.scheduler.engine import engine_of

from .conftest import Harness

B = 1000


def running_totals(batches: list[list[str]], upto: int) -> dict[str, int]:
    totals: dict[str, int] = {}
    for batch in batches[:upto]:
        for word in batch:
            totals[word] = totals.get(word, 0) + 1
    return totals


BATCHES = [["a", "b"], ["a"], ["c", "a"], ["b"], ["d"], ["a"], ["c"], ["e"]]


def totals_program(h: Harness, batches: list[list[str]] = BATCHES) -> Any:
    sc = h.ssc.sparkContext
    words = h.ssc.queueStream([sc.parallelize(b, 2) for b in batches])
    pairs = words.map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)).setName("totals")
    window = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 2).setName("window")
    sessions = pairs.track(lambda k, e: e, lambda k, s, e: s + e, 3).setName("sessions")
    for stream in (totals, window, sessions):
        stream.foreachRDD(lambda rdd: None)
    return words, totals, window, sessions


def test_latest_at_snapshot_and_lookup_read_completed_intervals(harness: Any) -> None:
    h: Harness = harness()
    words, totals, window, sessions = totals_program(h)
    words.remember(10)
    h.ssc.start()
    h.run_batches(4)
    assert dict(totals.snapshot().collect()) == running_totals(BATCHES, 4)
    assert totals.lookup("a") == [3] and totals.lookup("zzz") == []
    assert dict(window.snapshot().collect()) == {"a": 1, "c": 1, "b": 1}  # intervals 3 and 4
    assert dict(sessions.snapshot().collect()) == {"a": 3, "b": 2, "c": 1}  # none timed out yet
    assert sorted(words.latest().collect()) == ["b"] and words.latest().interval == Time(4 * B)
    assert sorted(words.at(Time(2 * B)).collect()) == ["a"]
    assert sorted(words.at(2.5).collect()) == ["a", "c"]  # (2 s, 3 s]: the interval ending at 3 s
    with pytest.raises(ValueError, match=r"has not completed yet; the newest completed interval"):
        words.at(Time(6 * B))
    with pytest.raises(
        TypeError, match=r"lookup\(7\): the key is a int, but the keys of .* are strs"
    ):
        totals.lookup(7)
    with pytest.raises(TypeError, match=r"snapshot\(\) reads the state of a state stream"):
        words.snapshot()
    with pytest.raises(ValueError, match=r"at\(\) time '2100' is not a time dstream understands"):
        words.at("2100")


def test_slice_and_at_take_typed_times_counted_from_the_newest_completed_interval(
    harness: Any,
) -> None:
    """slice() takes what at() takes ("-2s", "now", a clock time), and its RDDs carry their
    interval and pin it; "now" and "-2s" count back from the newest completed interval, not
    from the clock (a lagging stream has nothing at the clock's now). Before, slice() raised
    TypeError on strings, and at("now") with the clock half an interval ahead was refused as
    "not completed yet"."""
    h: Harness = harness()
    words, *_ = totals_program(h)
    words.remember(10)
    h.ssc.start()
    h.run_batches(4)
    h.clock.advance(B // 2)  # the clock ahead of the newest completed interval (4 s)
    assert words.at("now").interval == Time(4 * B)
    assert words.at("-1s").interval == Time(3 * B)  # from the clock: 3.5 s, interval 4 s
    rdds = words.slice("-2s", "now")
    assert [r.interval for r in rdds] == [Time(2 * B), Time(3 * B), Time(4 * B)]
    assert [sorted(r.collect()) for r in rdds] == [["a"], ["a", "c"], ["b"]]
    clock_time = Time(3 * B).to_datetime().strftime("%H:%M:%S")
    assert [r.interval for r in words.slice(clock_time, clock_time)] == [Time(3 * B)]
    with pytest.raises(ValueError, match=r"slice begin '3 pm' is not a time dstream understands"):
        words.slice("3 pm", "now")


def test_a_forgotten_interval_says_what_is_remembered(harness: Any) -> None:
    h: Harness = harness()
    stream = h.ssc.queueStream([[i] for i in range(6)])
    stream.foreachRDD(lambda rdd: None)
    h.ssc.start()
    h.run_batches(5)
    with pytest.raises(
        ValueError,
        match=r"no longer has interval .*: it remembers .* \(1 intervals\)\. Keep more with stream.remember\('10m'\)",
    ):
        stream.at(Time(2 * B))


def test_a_held_query_keeps_its_interval_while_the_stream_checkpoints_on(
    harness: Any, tmp_path: Path
) -> None:
    """The RDD a query holds reads its own interval, however many intervals, checkpoints and
    checkpoint deletions later: the engine keeps what it reads (its cached blocks and the
    checkpoint its lineage starts from) until the query lets go of it."""
    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    _, totals, _, _ = totals_program(h)
    totals.checkpoint(1)
    h.ssc.start()
    for _ in range(4):  # checkpoints after each interval: the state is rebuilt from them
        h.run_batches(1)
        engine_of(h.ssc).checkpointer.wait_idle(60)
    held = totals.snapshot()  # the state after 4 intervals, its lineage on a checkpoint
    for _ in range(4):  # four more intervals, a checkpoint after each
        h.run_batches(1)
        engine_of(h.ssc).checkpointer.wait_idle(60)
    state_dir = next(p for p in (tmp_path / "ckpt").iterdir() if p.name.startswith("state-"))
    assert dict(held.collect()) == running_totals(BATCHES, 4)
    assert dict(totals.snapshot().collect()) == running_totals(BATCHES, 8)
    # Older checkpoints are deleted as usual once no query holds them.
    del held
    import gc

    gc.collect()
    h.clock.advance(B)  # one more interval: its completion forgets and deletes what is free
    assert h.ssc.wait_for_batch(9 * B, 60)
    kept = sorted(int(n) for n in os.listdir(state_dir) if n.isdigit())
    assert kept and min(kept) >= 6 * B, kept


def test_sql_views_read_the_newest_completed_interval(harness: Any) -> None:
    from pyspark.sql import SparkSession

    h: Harness = harness()
    _, totals, _, sessions = totals_program(h)
    totals.createOrReplaceTempView("totals")
    h.ssc.start()
    spark = SparkSession.builder.getOrCreate()
    for n in (2, 4):
        h.run_batches(2)
        engine_of(h.ssc).bus.wait_until_empty(60)  # the view moves on the listener thread
        rows = spark.sql("select key, value from totals order by key").collect()
        assert {r.key: r.value for r in rows} == running_totals(BATCHES, n)
    frame = sessions.toDF()
    assert sorted(frame.columns) == ["key", "value"] and frame.count() == 3  # a, b, c
    with pytest.raises(
        ValueError, match=r"createOrReplaceTempView\(\) name 'my view' must be an identifier"
    ):
        totals.createOrReplaceTempView("my view")


def test_dataframes_over_live_state_outlive_the_checkpoints_they_were_read_from(
    harness: Any, tmp_path: Path
) -> None:
    """A DataFrame of toDF() (and one derived from it) reads the interval it was made from
    however many intervals, checkpoints and checkpoint deletions later; one of spark.sql()
    over a view reads the interval the view held for view_retention. Before, toDF()'s pin
    died with the RDD it read when toDF() returned: collect() six intervals later raised
    FileNotFoundError on .../state-2/<t>/part-00000."""
    from pyspark.sql import SparkSession

    from dstream import StreamingSettings

    h: Harness = harness(settings=StreamingSettings(view_retention="3s"))
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    batches = BATCHES + BATCHES[:6]
    _, totals, _, _ = totals_program(h, batches)
    totals.checkpoint(2)
    totals.createOrReplaceTempView("live_totals")
    h.ssc.start()
    spark = SparkSession.builder.getOrCreate()

    def run(intervals: int) -> None:  # a checkpoint every second interval
        for _ in range(intervals // 2):
            h.run_batches(2)
            engine_of(h.ssc).checkpointer.wait_idle(60)
        engine_of(h.ssc).bus.wait_until_empty(60)  # the view moves on the listener thread

    run(8)
    frame = totals.toDF()
    derived = totals.toDF().filter("value > 1")  # the frame toDF() returned is gone at once
    run(4)
    by_sql = spark.sql("select key, value from live_totals")  # the view holds interval 12
    run(2)
    import gc

    gc.collect()
    state_dir = next(p for p in (tmp_path / "ckpt").iterdir() if p.name.startswith("state-"))
    kept = sorted(int(n) for n in os.listdir(state_dir) if n.isdigit())
    assert min(kept) >= 8 * B, kept  # 6 s, which the toDF() frames were read from, is gone
    expected = running_totals(batches, 8)
    assert {r.key: r.value for r in frame.collect()} == expected
    assert {r.key: r.value for r in derived.collect()} == {
        k: v for k, v in expected.items() if v > 1
    }
    assert {r.key: r.value for r in by_sql.collect()} == running_totals(batches, 12)
    now = {r.key: r.value for r in spark.sql("select key, value from live_totals").collect()}
    assert now == running_totals(batches, 14) != running_totals(batches, 12)


def test_to_df_of_records_that_are_not_rows_says_how_to_fix_it(harness: Any) -> None:
    h: Harness = harness()
    stream = h.ssc.queueStream([[1j, 2j]])  # complex numbers: no Spark SQL type
    stream.foreachRDD(lambda rdd: None)
    h.ssc.start()
    h.run_batches(1)
    with pytest.raises(
        TypeError,
        match=r"toDF\(\) of queueStream .* its records do not make rows .* a record is 1j\. Map them to Rows",
    ):
        stream.toDF()


def program(sc: Any, clock: ManualClock, ckpt: Path, indir: Path) -> StreamingContext:
    ssc = StreamingContext(sc, 1, clock=clock)
    ssc.checkpoint(str(ckpt))
    words = ssc.textFileStream(str(indir)).map(lambda w: (w, 1))
    totals = words.updateStateByKey(lambda new, old: sum(new) + (old or 0)).setName("totals")
    totals.checkpoint(2).foreachRDD(lambda rdd: None)
    return ssc


def test_queries_after_a_driver_restart_read_the_rebuilt_state(sc: Any, tmp_path: Path) -> None:
    indir = tmp_path / "in"
    indir.mkdir()
    for i, word in enumerate(["x", "y", "x", "z", "x"]):
        (indir / f"{i}.txt").write_text(word + "\n")
        os.utime(indir / f"{i}.txt", ns=((i * B + 500) * 1_000_000,) * 2)
    clock = ManualClock(0)
    first = program(sc, clock, tmp_path / "ckpt", indir)
    first.start()
    clock.advance(3 * B)
    assert first.wait_for_batch(3 * B, 60)
    engine_of(first).checkpointer.wait_idle(60)
    first.stop(stopSparkContext=False)  # the driver "dies" after 3 intervals

    clock = ManualClock(3 * B)
    resumed = StreamingContext.getOrCreate(
        str(tmp_path / "ckpt"),
        lambda: program(sc, clock, tmp_path / "ckpt", indir),
        sc,
        clock=clock,
    )
    resumed.start()
    clock.advance(2 * B)
    assert resumed.wait_for_batch(5 * B, 60)
    totals = handle_for(
        next(s for s in engine_of(resumed).graph.streams if s.user_name == "totals")
    )
    assert dict(totals.snapshot().collect()) == {"x": 3, "y": 1, "z": 1}
    assert totals.lookup("x") == [3]
    resumed.stop(stopSparkContext=False)
