"""Failure reports name the batch, the output operation, the operator and keep the original
traceback — from a task (inside a Py4JJavaError's text) or from the driver."""

from __future__ import annotations

from dstream.errors import UserFunctionError
from dstream.scheduler.failures import describe_failure, task_traceback
from dstream.time import Time, human_time

# The shape PySpark 4.3 gives a failed task's error (trimmed).
JAVA_TEXT = """An error occurred while calling o64.collectAndServe.
: org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown \
from the Python worker: Traceback (most recent call last):
  File "/app/job.py", line 11, in parse
    return int(x)
ValueError: invalid literal for int() with base 10: 'x'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/venv/dstream/functions.py", line 100, in guarded
    raise UserFunctionError(f"{label} raised {type(exc).__name__}: {exc}") from exc
dstream.errors.UserFunctionError: map at job.py:20 raised ValueError: invalid literal \
for int() with base 10: 'x'
 SQLSTATE: 38000
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(...)
\tat org.apache.spark.api.python.PythonRunner$$anon$5.read(PythonRunner.scala:1642)
"""


class Py4JJavaError(Exception):
    """Stands in for py4j's class: the scheduler recognises it by name and reads its text."""


def test_task_traceback_is_cut_out_of_the_java_text() -> None:
    tb = task_traceback(JAVA_TEXT)
    assert tb is not None
    assert tb.startswith("Traceback (most recent call last):")
    assert 'File "/app/job.py", line 11, in parse' in tb
    assert tb.endswith("base 10: 'x'")
    assert "\tat org.apache" not in tb and "SQLSTATE" not in tb


def test_no_python_traceback_in_a_pure_java_failure() -> None:
    assert task_traceback("java.lang.OutOfMemoryError: Java heap space\n\tat x.y(z)") is None


def test_a_task_failure_names_batch_output_and_operator() -> None:
    err = describe_failure(Time(3000), 1, "foreachRDD at job.py:30", Py4JJavaError(JAVA_TEXT))
    first = str(err).splitlines()[0]
    assert first == (
        f"batch {human_time(3000)}, output operation #1 (foreachRDD at job.py:30): map at job.py:20 "
        "failed in a task: ValueError: invalid literal for int() with base 10: 'x'"
    )
    assert err.batch_time == Time(3000)
    assert err.operation == "map at job.py:20"
    assert "in parse" in err.traceback_text
    assert "--- original traceback ---" in str(err)


def test_a_driver_failure_keeps_its_own_traceback() -> None:
    def transform_fn() -> None:
        raise KeyError("missing")

    try:
        try:
            transform_fn()
        except KeyError as exc:
            raise UserFunctionError("transform at app.py:7 raised KeyError: 'missing'") from exc
    except UserFunctionError as exc:
        err = describe_failure(Time(1000), 0, "pprint at app.py:9", exc)
    assert str(err).splitlines()[0] == (
        f"batch {human_time(1000)}, output operation #0 (pprint at app.py:9): transform at app.py:7 "
        "failed on the driver: KeyError: 'missing'"
    )
    assert "in transform_fn" in err.traceback_text


def test_an_error_outside_user_code_is_named_after_the_output() -> None:
    err = describe_failure(Time(1000), 0, "saveAsTextFiles at app.py:3", OSError("disk full"))
    assert str(err).splitlines()[0] == (
        f"batch {human_time(1000)}, output operation #0 (saveAsTextFiles at app.py:3): "
        "saveAsTextFiles at app.py:3 failed on the driver: OSError: disk full"
    )
