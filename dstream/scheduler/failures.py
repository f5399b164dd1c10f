"""Turn whatever a failed job raised into one :class:`StreamingJobError` that names the batch,
the output operation, the operator whose user function failed, and carries the original
Python traceback (from the task on an executor, or from the driver)."""

from __future__ import annotations

import re
import traceback

from dstream.errors import StreamingJobError, raised_by_a_task
from dstream.time import Time, human_time

__all__ = ["describe_failure", "task_traceback"]

_WORKER_MARK = "An exception was thrown from the Python worker"
_TRACEBACK_START = "Traceback (most recent call last):"
# Where the Python traceback inside a Java exception message ends.
_JAVA_TAIL = re.compile(r"( SQLSTATE: \w+)?\n\s+at [\w$.]+\(|\n\tat ")
_OPERATOR = re.compile(r"UserFunctionError: (.+? at [^ ]+:\d+) raised (.*)")


def task_traceback(text: str) -> str | None:
    """The Python traceback embedded in a failed job's error text, or None."""
    start = text.find(_TRACEBACK_START, max(0, text.find(_WORKER_MARK)))
    if start < 0:
        return None
    body = text[start:]
    end = _JAVA_TAIL.search(body)
    return (body[: end.start()] if end else body).rstrip()


def describe_failure(
    time: Time, output_index: int, output_label: str, exc: BaseException
) -> StreamingJobError:
    text = str(exc)
    tb = task_traceback(text) if raised_by_a_task(exc) else None
    where = "in a task"
    if tb is None:
        tb = "".join(traceback.format_exception(exc)).rstrip()
        where = "on the driver"
    found = _OPERATOR.findall(tb)
    if found:
        operator, cause = found[-1]
        summary = f"{operator} failed {where}: {cause}"
    else:
        last = tb.strip().splitlines()[-1] if tb.strip() else type(exc).__name__
        operator, summary = output_label, f"{output_label} failed {where}: {last}"
    message = (
        f"batch {human_time(time)}, output operation #{output_index} ({output_label}): "
        f"{summary}\n"
        f"--- original traceback ---\n{tb}"
    )
    return StreamingJobError(message, batch_time=time, operation=operator, traceback_text=tb)
