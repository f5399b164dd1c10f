"""Pure tests of the shim's wire-format parser (no Spark, no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dstream.scheduler.shim import (
    SHIM_JAR,
    ExecutorAdded,
    ExecutorRemoved,
    JobEnd,
    JobStart,
    ShimMissingError,
    StageCompleted,
    StageSubmitted,
    TaskEnd,
    TaskStart,
    parse_events,
)
from testbed.processes import executor_pids


def line(*fields: str) -> str:
    return "\t".join(fields) + "\n"


def test_empty_input_gives_no_events() -> None:
    assert parse_events("") == []


def test_task_start() -> None:
    text = line(
        "TASK_START", "3", "1", "42", "2", "7", "0", "exec-1", "host-a", "1700", "true", "g"
    )
    assert parse_events(text) == [
        TaskStart(
            stage_id=3,
            stage_attempt=1,
            task_id=42,
            index=2,
            partition=7,
            attempt=0,
            executor_id="exec-1",
            host="host-a",
            launch_time=1700,
            speculative=True,
            job_group="g",
        )
    ]


def test_task_end_success_and_missing_group() -> None:
    text = line(
        "TASK_END", "0", "0", "5", "1", "1", "2", "driver", "h", "100", "250", "false", "true",
        "Success", "\\N", "ResultTask", "\\N",
    )  # fmt: skip
    (event,) = parse_events(text)
    assert event == TaskEnd(
        stage_id=0,
        stage_attempt=0,
        task_id=5,
        index=1,
        partition=1,
        attempt=2,
        executor_id="driver",
        host="h",
        launch_time=100,
        finish_time=250,
        speculative=False,
        successful=True,
        reason_kind="Success",
        reason=None,
        task_type="ResultTask",
        job_group=None,
    )
    assert isinstance(event, TaskEnd)
    assert event.duration_ms == 150


def test_task_end_failure_reason_is_unescaped() -> None:
    # On the wire: LF as \n, TAB as \t, a literal backslash as \\.
    reason = "PythonException: Traceback\\n  raise ValueError('x\\\\ty')\\nValueError:\\tboom"
    text = line(
        "TASK_END", "1", "0", "9", "0", "0", "0", "1", "h", "1", "2", "false", "false",
        "ExceptionFailure", reason, "ShuffleMapTask", "grp",
    )  # fmt: skip
    (event,) = parse_events(text)
    assert isinstance(event, TaskEnd)
    assert not event.successful
    assert (
        event.reason == "PythonException: Traceback\n  raise ValueError('x\\ty')\nValueError:\tboom"
    )
    assert event.reason_kind == "ExceptionFailure"
    assert event.task_type == "ShuffleMapTask"


def test_escaped_backslash_n_is_not_null() -> None:
    # Only a field that is exactly backslash + N means "missing"; an escaped backslash
    # followed by N (three characters on the wire) is the real two-character string.
    text = line("JOB_START", "4", "99", "\\\\N", "")
    assert parse_events(text) == [JobStart(job_id=4, time=99, job_group="\\N", stage_ids=())]


def test_stage_events() -> None:
    text = line("STAGE_SUBMITTED", "2", "0", "8", "1000", "g1", "count at x.py:12") + line(
        "STAGE_COMPLETED", "2", "0", "8", "\\N", "\\N", "false", "Job aborted\\tbad", "\\N", "n"
    )
    assert parse_events(text) == [
        StageSubmitted(
            stage_id=2,
            attempt=0,
            num_tasks=8,
            submission_time=1000,
            job_group="g1",
            name="count at x.py:12",
        ),
        StageCompleted(
            stage_id=2,
            attempt=0,
            num_tasks=8,
            submission_time=None,
            completion_time=None,
            successful=False,
            failure_reason="Job aborted\tbad",
            job_group=None,
            name="n",
        ),
    ]


def test_job_events() -> None:
    text = line("JOB_START", "7", "123", "g", "3,4,5") + line(
        "JOB_END", "7", "456", "true", "\\N", "g"
    )
    assert parse_events(text) == [
        JobStart(job_id=7, time=123, job_group="g", stage_ids=(3, 4, 5)),
        JobEnd(job_id=7, time=456, successful=True, failure_reason=None, job_group="g"),
    ]


def test_executor_events() -> None:
    text = (
        line("EXECUTOR_ADDED", "0", "10.0.0.1", "5", "1", "live")
        + line("EXECUTOR_ADDED", "driver", "h", "4", "2", "snapshot")
        + line("EXECUTOR_REMOVED", "0", "\\N", "9", "Command exited with code 137")
    )
    assert parse_events(text) == [
        ExecutorAdded(executor_id="0", host="10.0.0.1", time=5, total_cores=1, snapshot=False),
        ExecutorAdded(executor_id="driver", host="h", time=4, total_cores=2, snapshot=True),
        ExecutorRemoved(executor_id="0", host=None, time=9, reason="Command exited with code 137"),
    ]


def test_last_line_without_newline_is_accepted() -> None:
    assert parse_events("JOB_END\t1\t2\tfalse\tboom\t\\N") == [
        JobEnd(job_id=1, time=2, successful=False, failure_reason="boom", job_group=None)
    ]


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("NOPE\t1\t2", "unknown event kind 'NOPE'"),
        ("JOB_START\t1\t2\tg", "JOB_START needs 5 fields, got 4"),
        ("JOB_END\t1\t2\tmaybe\t\\N\t\\N", "expected true or false"),
        ("JOB_START\tx\t2\tg\t", "expected an integer, got 'x'"),
        ("JOB_START\t1\t2\tbad\\qescape\t", "bad escape"),
        ("EXECUTOR_ADDED\t\\N\th\t1\t1\tlive", "missing value"),
        ("EXECUTOR_ADDED\t1\th\t1\t1\tlater", "expected live or snapshot"),
        ("", "unknown event kind ''"),
    ],
)
def test_malformed_line_names_the_line(bad: str, fragment: str) -> None:
    good = line("JOB_END", "1", "2", "true", "\\N", "g")
    with pytest.raises(ValueError, match="line 2") as info:
        parse_events(good + bad + "\n" + good)
    assert fragment in str(info.value)
    assert repr(bad) in str(info.value)


def test_shim_missing_error_says_how_to_build() -> None:
    err = ShimMissingError(Path("/nowhere/dstream-shim.jar"))
    assert "/nowhere/dstream-shim.jar" in str(err)
    assert "make shim" in str(err)
    assert "jvm-shim/build.sh" in str(err)


def test_shim_jar_is_inside_the_repository() -> None:
    expected = Path(__file__).resolve().parents[2] / "jvm-shim/listener/target/dstream-shim.jar"
    assert expected == SHIM_JAR


def test_executor_pids_reads_command_lines(tmp_path: Path) -> None:
    def proc(pid: int, *argv: str) -> None:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")

    main = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
    common = ["--driver-url", "spark://d", "--hostname", "h", "--cores", "1"]
    proc(101, "java", "-cp", "x", main, *common, "--executor-id", "0", "--app-id", "app-1")
    proc(102, "java", main, "--executor-id", "1", *common, "--app-id", "app-1", "--worker-url", "w")
    proc(103, "java", main, "--executor-id", "0", "--app-id", "app-2")  # another application
    proc(104, "python", "-m", "pyspark.daemon")
    (tmp_path / "self").mkdir()
    assert executor_pids("app-1", proc=tmp_path) == {"0": 101, "1": 102}
    assert executor_pids("app-3", proc=tmp_path) == {}
