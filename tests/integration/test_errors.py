"""What a user sees when a program is wrong: bad arguments, wrong lifecycle calls,
unpicklable functions and failing user code. Messages are pinned: they are the interface."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from dstream import ContextStateError, StreamingContext, StreamingJobError, UnpicklableFunctionError
from dstream.scheduler.engine import engine_of
from dstream.time import human_time

from .conftest import Harness


def test_batch_duration_is_validated(sc: Any) -> None:
    with pytest.raises(ValueError, match=r"batchDuration -1 is negative; give a positive duration"):
        StreamingContext(sc, -1)
    with pytest.raises(ValueError, match=r"batchDuration is 0 ms; it must be positive"):
        StreamingContext(sc, 0)
    with pytest.raises(TypeError, match=r"needs a batchDuration, e\.g\. StreamingContext\(sc, 1\)"):
        StreamingContext(sc)
    with pytest.raises(TypeError, match=r"needs a pyspark\.SparkContext, got str"):
        StreamingContext("local[2]", 1)  # type: ignore[arg-type]
    assert engine_of(StreamingContext(sc, "500ms")).batch_duration.ms == 500
    assert engine_of(StreamingContext(sc, 0.25)).batch_duration.ms == 250


def test_non_callables_are_refused_with_the_operator_name(harness: Any) -> None:
    stream = harness().ssc.queueStream([[1]])
    with pytest.raises(
        TypeError, match=r"map\(\) needs a function for func, got int 3; pass a function"
    ):
        stream.map(3)
    with pytest.raises(TypeError, match=r"reduceByKey\(\) needs a function for func, got NoneType"):
        stream.reduceByKey(None)
    with pytest.raises(TypeError, match=r"combineByKey\(\) needs a function for mergeValue"):
        stream.combineByKey(lambda v: v, "x", lambda a, b: a)
    with pytest.raises(TypeError, match=r"foreachRDD\(\) takes func\(rdd\) or func\(time, rdd\)"):
        stream.foreachRDD(lambda a, b, c: None)
    with pytest.raises(TypeError, match=r"union\(\) needs another DStream, got list"):
        stream.union([1])


def test_bad_partition_counts_are_refused(harness: Any) -> None:
    stream = harness().ssc.queueStream([[("a", 1)]])
    with pytest.raises(ValueError, match=r"reduceByKey\(\) numPartitions 0 must be at least 1"):
        stream.reduceByKey(lambda a, b: a + b, 0)
    with pytest.raises(TypeError, match=r"repartition\(\) numPartitions must be an int, got '2'"):
        stream.repartition("2")


def test_start_needs_an_output_operation(harness: Any) -> None:
    h: Harness = harness()
    h.ssc.queueStream([[1]]).map(str)
    with pytest.raises(
        ValueError, match=r"no output operations are registered.*call foreachRDD\(\), pprint\(\)"
    ):
        h.ssc.start()


def test_lifecycle_errors(harness: Any) -> None:
    h: Harness = harness()
    stream = h.ssc.queueStream([[1]])
    stream.foreachRDD(lambda rdd: None)
    h.ssc.start()
    with pytest.raises(ContextStateError, match=r"already running; call start\(\) once"):
        h.ssc.start()
    with pytest.raises(
        ContextStateError, match=r"cannot add map\(\) to a StreamingContext that is active"
    ):
        stream.map(str)
    with pytest.raises(ContextStateError, match=r"cannot add queueStream\(\)"):
        h.ssc.queueStream([[1]])
    h.ssc.stop(stopSparkContext=False)
    h.ssc.stop(stopSparkContext=False)  # a second stop is harmless
    with pytest.raises(
        ContextStateError, match="cannot be restarted — create a new StreamingContext"
    ):
        h.ssc.start()
    assert isinstance(ContextStateError("x"), ValueError)


def test_a_function_that_captures_the_spark_context_is_refused_at_start(harness: Any) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    h.ssc.queueStream([[1]]).map(lambda x: sc.defaultParallelism + x).pprint()
    with pytest.raises(UnpicklableFunctionError) as info:
        h.ssc.start()
    message = str(info.value)
    assert "the function given to map at test_errors.py:" in message
    assert "it refers to the SparkContext, which exists only on the driver" in message
    assert "use those in transform() or foreachRDD()" in message
    assert engine_of(h.ssc).state == "initialized"


def test_a_function_that_captures_a_lock_or_a_stream_is_refused(harness: Any) -> None:
    h: Harness = harness()
    lock = threading.Lock()
    stream = h.ssc.queueStream([[1]])
    stream.filter(lambda x: lock.locked()).pprint()
    with pytest.raises(
        UnpicklableFunctionError, match=r"filter at test_errors.py:\d+ cannot be pickled.*lock"
    ):
        h.ssc.start()
    h2: Harness = harness()
    other = h2.ssc.queueStream([[1]])
    other.map(lambda x: other).pprint()
    with pytest.raises(UnpicklableFunctionError, match="a DStream exists only on the driver"):
        h2.ssc.start()


def test_driver_side_functions_may_use_the_spark_context(harness: Any) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    got: list[list[int]] = []
    h.ssc.queueStream([[1]]).transform(lambda rdd: rdd.union(sc.parallelize([2]))).foreachRDD(
        lambda rdd: got.append(sorted(rdd.collect()))
    )
    h.ssc.start()
    h.run_batches(1)
    assert got == [[1, 2]]


@pytest.mark.parametrize("sql", [False, True], ids=["rdd-only", "with-a-spark-session"])
def test_a_failing_task_is_raised_with_batch_operator_and_traceback(
    harness: Any, sql: bool
) -> None:
    """The same once the program made a SparkSession (Spark's sql_network_wordcount does):
    PySpark then converts every Py4J error, an RDD job's too, into its own PythonException,
    which was taken for a failure on the driver."""
    if sql:
        from pyspark.sql import SparkSession

        SparkSession.builder.getOrCreate()
    h: Harness = harness()

    def parse(x: str) -> int:
        return int(x)

    got: list[list[int]] = []
    h.ssc.queueStream([["1"], ["oops"], ["3"]]).map(parse).foreachRDD(
        lambda rdd: got.append(rdd.collect())
    )
    h.ssc.start()
    h.run_batches(3)
    with pytest.raises(StreamingJobError) as info:
        h.ssc.awaitTerminationOrTimeout(0)
    err = info.value
    first = str(err).splitlines()[0]
    assert first.startswith(
        f"batch {human_time(2000)}, output operation #0 (foreachRDD at test_errors.py:"
    )
    assert "map at test_errors.py:" in first
    assert first.endswith(
        "failed in a task: ValueError: invalid literal for int() with base 10: 'oops' (to set "
        "such records aside and go on, run with StreamingSettings(bad_records='quarantine'))"
    )
    assert err.batch_time.ms == 2000
    assert err.operation.startswith("map at test_errors.py:")
    assert "in parse" in err.traceback_text and "return int(x)" in err.traceback_text
    # Later intervals still ran, as in pyspark.streaming.
    assert got == [[1], [3]]
    with pytest.raises(StreamingJobError):
        h.ssc.awaitTermination(0)


def test_a_failing_driver_function_names_its_operator(harness: Any) -> None:
    h: Harness = harness()

    def pick(rdd: Any) -> Any:
        raise KeyError("no such table")

    h.ssc.queueStream([[1]]).transform(pick).pprint()
    h.ssc.start()
    h.run_batches(1)
    with pytest.raises(
        StreamingJobError,
        match=r"transform at test_errors.py:\d+ failed on the driver: KeyError: 'no such table'",
    ):
        h.ssc.awaitTerminationOrTimeout(0)


def test_a_transform_that_returns_no_rdd_is_reported(harness: Any) -> None:
    h: Harness = harness()
    h.ssc.queueStream([[1]]).transform(lambda rdd: rdd.collect()).pprint()
    h.ssc.start()
    h.run_batches(1)
    with pytest.raises(
        StreamingJobError, match="returned list, not an RDD; return the transformed RDD"
    ):
        h.ssc.awaitTerminationOrTimeout(0)


def test_await_termination_waits_for_stop(harness: Any) -> None:
    h: Harness = harness()
    h.ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
    h.ssc.start()
    assert h.ssc.awaitTerminationOrTimeout(0.01) is False
    stopper = threading.Thread(target=lambda: h.ssc.stop(stopSparkContext=False))
    stopper.start()
    assert h.ssc.awaitTerminationOrTimeout(30) is True
    stopper.join()
    with pytest.raises(ValueError, match="timeout -1 must be a number of seconds"):
        h.ssc.awaitTerminationOrTimeout(-1)


def test_an_interval_posted_just_before_stop_is_dropped_not_an_error(harness: Any) -> None:
    """The timer may post an interval just before stop(); generating it after the job pool
    shut down used to halt the engine ("cannot schedule new futures after shutdown")."""
    h: Harness = harness()
    h.ssc.queueStream([[1], [2], [3]]).map(lambda x: x * 2).foreachRDD(lambda rdd: rdd.count())
    h.ssc.start()
    h.run_batches(1)
    scheduler = engine_of(h.ssc).scheduler
    entered, release, pool_down = threading.Event(), threading.Event(), threading.Event()
    generate, shutdown = scheduler._generate, scheduler._jobs._pool.shutdown

    def held_generate(time: Any) -> None:
        entered.set()
        release.wait(60)
        generate(time)

    def noted_shutdown(*args: Any, **kwargs: Any) -> None:
        shutdown(*args, **kwargs)
        pool_down.set()

    scheduler._generate = held_generate  # the loop holds the next interval, not yet generated
    scheduler._jobs._pool.shutdown = noted_shutdown
    h.clock.advance(1000)
    assert entered.wait(60)
    stopper = threading.Thread(target=lambda: h.ssc.stop(stopSparkContext=False))
    stopper.start()
    assert pool_down.wait(60)  # stop() has shut the job pool down; now the loop goes on
    release.set()
    stopper.join(60)
    assert not stopper.is_alive()
    assert scheduler.halted is None


def test_a_second_stop_waits_for_the_graceful_one_in_progress(harness: Any) -> None:
    """The shell's Ctrl-D stops gracefully while the program's own code calls stop() too: the
    second call must wait for the first (it used to return at once and remove the state
    storage under the batches still finishing)."""
    h: Harness = harness()
    entered, release = threading.Event(), threading.Event()
    done: list[int] = []

    def slow(rdd: Any) -> None:
        entered.set()
        assert release.wait(60)
        done.append(rdd.count())

    pairs = h.ssc.queueStream([[("k", 1)]]).map(lambda kv: kv)
    pairs.track(lambda k, e: e, lambda k, s, e: s + e, 5).foreachRDD(slow)
    h.ssc.start()
    h.clock.advance(1000)
    assert entered.wait(60)
    graceful = threading.Thread(target=lambda: h.ssc.stop(False, stopGraceFully=True))
    graceful.start()
    second_returned = threading.Event()
    second = threading.Thread(target=lambda: (h.ssc.stop(False), second_returned.set()))
    second.start()
    assert not second_returned.wait(1.0)  # still stopping: the batch has not finished
    release.set()
    graceful.join(60)
    second.join(60)
    assert second_returned.is_set() and done == [1]
    assert h.ssc.awaitTerminationOrTimeout(0) is True
