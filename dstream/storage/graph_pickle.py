"""Saving the DStream graph, user functions included, for a driver that restarts.

The graph is pickled with cloudpickle (functions and lambdas by value), with three rules:

* the StreamingContext and the SparkContext are saved as references and bound to the new
  ones on load — so a ``transform`` function that uses ``sc`` keeps working after recovery;
* each stream is saved without its run-time fields (its remembered RDDs, locks, receiver
  threads): those are rebuilt, and what changes every interval (files per interval, the
  last checkpoint) is in each metadata record instead;
* an RDD captured by a function cannot be saved (it lives in the old driver): that is an
  error at ``start()``, naming the function, not a surprise at recovery time.
"""

from __future__ import annotations

import io
import pickle
import threading
from typing import TYPE_CHECKING, Any

import cloudpickle

from dstream.errors import DStreamError

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.context import StreamingContext

__all__ = ["GraphPickleError", "dumps_graph", "loads_graph"]

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


class GraphPickleError(DStreamError, TypeError):
    """The graph cannot be saved for driver recovery."""


def _new_stream(cls: Any) -> Any:
    return object.__new__(cls)


class _GraphPickler(cloudpickle.Pickler):
    def __init__(self, file: io.BytesIO, ssc: StreamingContext, sc: SparkContext) -> None:
        super().__init__(file, protocol=5)
        self._ssc, self._sc = ssc, sc

    def persistent_id(self, obj: Any) -> str | None:
        if obj is self._ssc:
            return "ssc"
        if obj is self._sc:
            return "sc"
        return None

    def reducer_override(self, obj: Any) -> Any:
        from pyspark import RDD, SparkContext

        from dstream.streams.base import DStreamCore

        if isinstance(obj, DStreamCore):
            return _new_stream, (type(obj),), obj.__getstate__()
        if isinstance(obj, _LOCK_TYPES):
            return type(obj), ()
        if isinstance(obj, RDD):
            raise GraphPickleError(
                f"an RDD ({obj!r}) is captured by a function of the program; it exists only in "
                "this driver and cannot be saved for driver recovery. Create it inside the "
                "function (e.g. in transform()), or load it from storage there"
            )
        if isinstance(obj, SparkContext):
            raise GraphPickleError("a second SparkContext is captured by a function")
        return super().reducer_override(obj)


class _GraphUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, ssc: StreamingContext, sc: SparkContext) -> None:
        super().__init__(file)
        self._ssc, self._sc = ssc, sc

    def persistent_load(self, pid: Any) -> Any:
        if pid == "ssc":
            return self._ssc
        if pid == "sc":
            return self._sc
        raise pickle.UnpicklingError(f"unknown persistent reference {pid!r}")


def dumps_graph(value: Any, ssc: StreamingContext, sc: SparkContext) -> bytes:
    buffer = io.BytesIO()
    try:
        _GraphPickler(buffer, ssc, sc).dump(value)
    except GraphPickleError:
        raise
    except Exception as exc:
        raise GraphPickleError(
            f"the program cannot be saved for driver recovery: {type(exc).__name__}: {exc}. "
            "Functions must not capture objects that cannot be pickled (sockets, open files, "
            "threads); create those inside the function"
        ) from exc
    return buffer.getvalue()


def loads_graph(data: bytes, ssc: StreamingContext, sc: SparkContext) -> Any:
    return _GraphUnpickler(io.BytesIO(data), ssc, sc).load()
