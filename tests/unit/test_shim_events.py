"""Pure tests of the shim's wire-format parser (no Spark, no JVM): JSON lines whose fields and
types are those of the event dataclasses."""

from __future__ import annotations

import json
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


def line(kind: str, **fields: object) -> str:
    """One event as the recorder writes it: a JSON object, kind first."""
    return json.dumps({"kind": kind, **fields}) + "\n"


TASK_END = {
    "stage_id": 0, "stage_attempt": 0, "task_id": 5, "index": 1, "partition": 1, "attempt": 2,
    "executor_id": "driver", "host": "h", "launch_time": 100, "finish_time": 250,
    "speculative": False, "successful": True, "reason_kind": "Success", "reason": None,
    "task_type": "ResultTask", "job_group": None,
}  # fmt: skip


def test_empty_input_gives_no_events() -> None:
    assert parse_events("") == []


def test_task_start() -> None:
    text = line(
        "TASK_START", stage_id=3, stage_attempt=1, task_id=42, index=2, partition=7, attempt=0,
        executor_id="exec-1", host="host-a", launch_time=1700, speculative=True, job_group="g",
    )  # fmt: skip
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
    (event,) = parse_events(line("TASK_END", **TASK_END))
    assert event == TaskEnd(**TASK_END)  # type: ignore[arg-type]
    assert isinstance(event, TaskEnd)
    assert event.duration_ms == 150


def test_task_end_failure_reason_keeps_its_control_characters() -> None:
    reason = "PythonException: Traceback\n  raise ValueError('x\\ty')\nValueError:\tboom"
    text = line(
        "TASK_END", **TASK_END | {"successful": False, "reason_kind": "ExceptionFailure",
        "reason": reason, "task_type": "ShuffleMapTask", "job_group": "grp"},
    )  # fmt: skip
    (event,) = parse_events(text)
    assert isinstance(event, TaskEnd)
    assert not event.successful
    assert event.reason == reason
    assert event.reason_kind == "ExceptionFailure"
    assert event.task_type == "ShuffleMapTask"


def test_stage_events() -> None:
    text = line(
        "STAGE_SUBMITTED", stage_id=2, attempt=0, num_tasks=8, submission_time=1000,
        job_group="g1", name="count at x.py:12",
    ) + line(
        "STAGE_COMPLETED", stage_id=2, attempt=0, num_tasks=8, submission_time=None,
        completion_time=None, successful=False, failure_reason="Job aborted\tbad",
        job_group=None, name="n",
    )  # fmt: skip
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
    text = line("JOB_START", job_id=7, time=123, job_group="g", stage_ids=[3, 4, 5]) + line(
        "JOB_END", job_id=7, time=456, successful=True, failure_reason=None, job_group="g"
    )
    assert parse_events(text) == [
        JobStart(job_id=7, time=123, job_group="g", stage_ids=(3, 4, 5)),
        JobEnd(job_id=7, time=456, successful=True, failure_reason=None, job_group="g"),
    ]


def test_executor_events() -> None:
    text = (
        line("EXECUTOR_ADDED", executor_id="0", host="10.0.0.1", time=5, total_cores=1,
             snapshot=False)
        + line("EXECUTOR_ADDED", executor_id="driver", host="h", time=4, total_cores=2,
               snapshot=True)
        + line("EXECUTOR_REMOVED", executor_id="0", host=None, time=9,
               reason="Command exited with code 137")
    )  # fmt: skip
    assert parse_events(text) == [
        ExecutorAdded(executor_id="0", host="10.0.0.1", time=5, total_cores=1, snapshot=False),
        ExecutorAdded(executor_id="driver", host="h", time=4, total_cores=2, snapshot=True),
        ExecutorRemoved(executor_id="0", host=None, time=9, reason="Command exited with code 137"),
    ]


def test_last_line_without_newline_is_accepted() -> None:
    text = line(
        "JOB_END", job_id=1, time=2, successful=False, failure_reason="boom", job_group=None
    )
    assert parse_events(text.rstrip("\n")) == [
        JobEnd(job_id=1, time=2, successful=False, failure_reason="boom", job_group=None)
    ]


JOB_END = {"job_id": 1, "time": 2, "successful": True, "failure_reason": None, "job_group": "g"}


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ('{"kind": "NOPE"}', "unknown event kind 'NOPE'"),
        ('{"job_id": 1}', "unknown event kind None"),
        ("[1, 2]", "expected a JSON object, got list"),
        ("JOB_END\t1", "Expecting value"),
        (line("JOB_END", **JOB_END | {"successful": "maybe"}), "field 'successful': expected true or false"),
        (line("JOB_END", **JOB_END | {"job_id": "x"}), "field 'job_id': expected an integer, got 'x'"),
        (line("JOB_END", **JOB_END | {"job_id": True}), "field 'job_id': expected an integer, got True"),
        (line("JOB_END", **{k: v for k, v in JOB_END.items() if k != "time"}), "JOB_END has no field 'time'"),
        (line("JOB_END", **JOB_END | {"extra": 1}), "JOB_END has unknown fields ['extra']"),
        (line("JOB_START", job_id=1, time=2, job_group=None, stage_ids="3,4"), "expected a list of integers"),
        (line("EXECUTOR_ADDED", executor_id=None, host="h", time=1, total_cores=1, snapshot=False), "field 'executor_id': expected a string, got None"),
    ],
)  # fmt: skip
def test_malformed_line_names_the_line_and_the_field(bad: str, fragment: str) -> None:
    good = line("JOB_END", **JOB_END)
    bad = bad.rstrip("\n")
    with pytest.raises(ValueError, match="line 2") as info:
        parse_events(good + bad + "\n" + good)
    assert fragment in str(info.value)
    assert repr(bad) in str(info.value)


def test_shim_missing_error_says_how_to_build() -> None:
    err = ShimMissingError(Path("/nowhere/dstream-shim.jar"))
    assert "/nowhere/dstream-shim.jar" in str(err)
    assert "make shim" in str(err)
    assert "jvm-shim/build.sh" in str(err)


def test_shim_jar_is_package_data() -> None:
    import dstream

    assert Path(dstream.__file__).parent / "jars" / "dstream-shim.jar" == SHIM_JAR


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


def test_executor_pids_tells_two_drivers_of_one_application_id_apart(tmp_path: Path) -> None:
    """Two local-cluster drivers registered in the same second both run app-<second>-0000 (a
    make test run: the executor-loss run's kill, by id, took the elastic run's executor 0).
    The driver's port in each executor's --driver-url picks one driver's executors; without
    it, the ambiguity raises instead of one JVM being picked."""
    main = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
    app = "app-20261207060038-0000"
    for pid, port, executor in [(201, 42865, "0"), (202, 39049, "0"), (203, 39049, "1")]:
        (tmp_path / str(pid)).mkdir()
        argv = ["java", main, "--driver-url", f"spark://CoarseGrainedScheduler@127.0.0.1:{port}"]
        argv += ["--executor-id", executor, "--app-id", app]
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    assert executor_pids(app, 42865, proc=tmp_path) == {"0": 201}
    assert executor_pids(app, 39049, proc=tmp_path) == {"0": 202, "1": 203}
    assert executor_pids(app, 1, proc=tmp_path) == {}
    with pytest.raises(RuntimeError, match=r"belong to 2 drivers .* pass the driver's port"):
        executor_pids(app, proc=tmp_path)
