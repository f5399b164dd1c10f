"""User functions: validation, naming, the executor-side guard, and the pickling check.

Every function a user hands to an operator is recorded with the operator's name and the
place in the user's program where the operator was called, so that a failure deep inside a
task can be reported as "map at app.py:12 failed at batch 3000 ms" rather than as a Java
stack trace.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from dstream.errors import UnpicklableFunctionError, UserFunctionError

__all__ = [
    "QUARANTINE_ADVICE",
    "UserFunction",
    "call_site",
    "check_callable",
    "check_picklable",
    "guard",
    "guard_partitions",
    "positional_arity",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def call_site() -> str:
    """``file:line`` of the innermost frame outside the dstream package (the user's call)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"


@dataclass(frozen=True)
class UserFunction:
    """A user function and what we know about it."""

    operator: str
    site: str
    fn: Callable[..., Any]
    runs_on: Literal["executor", "driver"]

    @property
    def label(self) -> str:
        return f"{self.operator} at {self.site}"

    def guarded(self, advice: str = "") -> Callable[..., Any]:
        """The function, wrapped so that a failure in a task names the operator and the line
        of the program that defined it (:func:`guard`), followed by ``advice``."""
        return guard(self.fn, self.label, advice)

    def guarded_partitions(self) -> Callable[[Iterable[Any]], Iterator[Any]]:
        """The partition function, wrapped likewise (:func:`guard_partitions`)."""
        return guard_partitions(self.fn, self.label)


def check_callable(fn: object, operator: str, argument: str = "func") -> None:
    if not callable(fn):
        raise TypeError(
            f"{operator}() needs a function for {argument}, got {type(fn).__name__} {fn!r}; "
            f"pass a function or a lambda, e.g. {operator}(lambda x: ...)"
        )


def positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fn`` takes, or None when it takes ``*args``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    count = 0
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return None
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if p.kind in positional and p.default is inspect.Parameter.empty:
            count += 1
    return count


# What a failure of a function that bad_records="quarantine" covers says how to avoid.
QUARANTINE_ADVICE = (
    " (to set such records aside and go on, run with StreamingSettings(bad_records='quarantine'))"
)


def guard(fn: Callable[..., Any], label: str, advice: str = "") -> Callable[..., Any]:
    """Wrap a per-record function so a failure names the operator. Costs one call frame."""

    def guarded(*args: Any) -> Any:
        try:
            return fn(*args)
        except UserFunctionError:
            raise
        except Exception as exc:
            raise UserFunctionError(f"{label} raised {type(exc).__name__}: {exc}{advice}") from exc

    guarded.__wrapped__ = fn  # type: ignore[attr-defined]
    return guarded


def guard_partitions(
    fn: Callable[[Iterable[Any]], Iterable[Any]], label: str
) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """Wrap a partition function; its errors surface while the result is iterated."""

    def guarded(iterator: Iterable[Any]) -> Iterator[Any]:
        try:
            yield from fn(iterator)
        except UserFunctionError:
            raise
        except Exception as exc:
            raise UserFunctionError(f"{label} raised {type(exc).__name__}: {exc}") from exc

    return guarded


def _unpicklable_reason(exc: BaseException) -> str:
    text = str(exc)
    if "CONTEXT_ONLY_VALID_ON_DRIVER" in text or "SparkContext" in text:
        return "it refers to the SparkContext, which exists only on the driver"
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def check_picklable(functions: Iterable[UserFunction]) -> None:
    """Refuse, at ``start()``, functions that would fail to ship to executors later."""
    from pyspark.serializers import CloudPickleSerializer

    serializer = CloudPickleSerializer()
    for uf in functions:
        if uf.runs_on != "executor":
            continue
        try:
            serializer.dumps(uf.fn)
        except Exception as exc:
            raise UnpicklableFunctionError(
                f"the function given to {uf.label} cannot be pickled, so it cannot run on "
                f"executors: {_unpicklable_reason(exc)}. Functions that run on executors must "
                "not capture the SparkContext, the StreamingContext, a DStream, locks, sockets "
                "or open files; use those in transform() or foreachRDD() (which run on the "
                "driver), or pass data in with sc.broadcast()"
            ) from exc
