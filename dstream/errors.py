"""Errors a user of dstream can see. Each message names the value, the rule and the fix."""

from __future__ import annotations

from dstream.time import Time

__all__ = [
    "ContextStateError",
    "DStreamError",
    "HaltedError",
    "StreamingJobError",
    "UnpicklableFunctionError",
    "UserFunctionError",
    "raised_by_a_task",
]

# What a Spark job raises on the driver when one of its tasks failed: Py4J's error, or, once
# the program made a SparkSession (which installs PySpark's converter for every Py4J call,
# an RDD job's too), PySpark's PythonException. Both carry the task's Python traceback.
_TASK_FAILURES = ("Py4JJavaError", "PythonException")


def raised_by_a_task(exc: BaseException) -> bool:
    """Whether ``exc`` is a failed Spark job's error, carrying its task's Python traceback
    in its text (not an error of a function that ran on the driver)."""
    return type(exc).__name__ in _TASK_FAILURES


class DStreamError(Exception):
    """Base class of dstream's own errors."""


class ContextStateError(DStreamError, ValueError):
    """A call that is not allowed in the StreamingContext's current state (a second
    ``start()``, a new operator after ``start()``, a restart after ``stop()``)."""


class UnpicklableFunctionError(DStreamError, TypeError):
    """A function that must run on executors cannot be serialized."""


class UserFunctionError(DStreamError):
    """Raised inside a task when a user function fails; it names the operator and where the
    operator was defined. The original exception is its ``__cause__``."""


class StreamingJobError(DStreamError, RuntimeError):
    """An interval's job failed. Raised from ``awaitTermination``/``awaitTerminationOrTimeout``.

    Later intervals keep running, as in pyspark.streaming; the error names the batch time, the
    output operation and, when user code failed, the operator and its original traceback.
    """

    def __init__(
        self,
        message: str,
        *,
        batch_time: Time,
        operation: str,
        traceback_text: str,
    ) -> None:
        super().__init__(message)
        self.batch_time = batch_time
        self.operation = operation
        self.traceback_text = traceback_text


class HaltedError(StreamingJobError):
    """The engine itself failed (for example the metadata journal could not be written) and
    stopped generating intervals. Raised from ``awaitTermination``; call ``stop()``, fix the
    cause, and resume with ``StreamingContext.getOrCreate``, which continues from the last
    metadata record that was written."""
