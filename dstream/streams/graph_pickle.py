"""Saving the DStream graph, user functions included, for a driver that restarts.

The graph is pickled with cloudpickle (functions and lambdas by value), with three rules:

* the graph itself (every stream refers to it), the user's StreamingContext and the
  SparkContext are saved as references and bound to the new ones on load — so a
  ``transform`` function that uses ``sc`` keeps working after recovery;
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
    from dstream.streams.graph import DStreamGraph

__all__ = ["GraphPickleError", "dumps_graph", "loads_graph"]

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


class GraphPickleError(DStreamError, TypeError):
    """The graph cannot be saved for driver recovery."""


def _new_stream(cls: Any) -> Any:
    return object.__new__(cls)


def _references(graph: DStreamGraph) -> dict[str, object]:
    return {"graph": graph, "ssc": graph.context, "sc": graph.sc}


class _GraphPickler(cloudpickle.Pickler):
    def __init__(self, file: io.BytesIO, graph: DStreamGraph) -> None:
        super().__init__(file, protocol=5)
        self._ids = {id(obj): name for name, obj in _references(graph).items()}

    def persistent_id(self, obj: Any) -> str | None:
        return self._ids.get(id(obj))

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


# Classes a saved program names that have moved since: (module, name) then -> now.
_MOVED = {
    # Before the recovery policies (dstream.recovery, issue 59) a state saved its strategy
    # and approximateRecovery's bound as these; RecoverableState turns them into its policy.
    ("dstream.streams.strategy", "RecoveryStrategy"): ("dstream.recovery.choice", "SavedStrategy"),
    ("dstream.streams.approximate", "ApproxSpec"): (
        "dstream.recovery.approximate_policy",
        "ApproxSpec",
    ),
}


class _GraphUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, graph: DStreamGraph) -> None:
        super().__init__(file)
        self._objects = _references(graph)

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(*_MOVED.get((module, name), (module, name)))

    def persistent_load(self, pid: Any) -> Any:
        if pid in self._objects:
            return self._objects[pid]
        raise pickle.UnpicklingError(f"unknown persistent reference {pid!r}")


def dumps_graph(value: Any, graph: DStreamGraph) -> bytes:
    """``value`` (the program: streams, inputs, outputs) with ``graph``, its context and
    SparkContext as references."""
    buffer = io.BytesIO()
    try:
        _GraphPickler(buffer, graph).dump(value)
    except GraphPickleError:
        raise
    except Exception as exc:
        raise GraphPickleError(
            f"the program cannot be saved for driver recovery: {type(exc).__name__}: {exc}. "
            "Functions must not capture objects that cannot be pickled (sockets, open files, "
            "threads); create those inside the function"
        ) from exc
    return buffer.getvalue()


def loads_graph(data: bytes, graph: DStreamGraph) -> Any:
    """What :func:`dumps_graph` saved, its references bound to ``graph`` (a new driver's)."""
    return _GraphUnpickler(io.BytesIO(data), graph).load()
