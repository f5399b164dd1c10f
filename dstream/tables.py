"""Joining a stream with history: a table loaded once, or recomputed every so often by a
batch job, read by every interval without stopping the stream (the paper's spam filter and
"compare with the same hour last week").

A table loaded once is just an RDD (or DataFrame) built before ``ssc.start()`` and cached;
each interval joins with it in ``transform``::

    spam = sc.textFile("hdfs:///blocklist").map(lambda url: (url, True)).cache()
    clicks.transform(lambda rdd: rdd.leftOuterJoin(spam))

A table that must stay fresh is a :class:`RefreshedTable`: ``load()`` (a batch job, e.g. over
the last 30 days) runs again every ``every``, on a thread of its own; the intervals go on with
the previous version meanwhile and switch to the new one, whole, once it is loaded and cached::

    history = RefreshedTable(lambda: load_last_days(sc, 7), every="10min")
    today.transform(lambda rdd: rdd.join(history.current()))

Each interval's RDD is built with the version current when the interval was generated and
keeps it in its lineage, so an interval recomputed after a failure joins with the same
version. After a driver restart the table is loaded afresh (it is not saved in checkpoints:
it is reloadable by definition).
"""

from __future__ import annotations

import logging
import threading
import time as _time
from collections.abc import Callable
from typing import Any

from dstream.clock import Clock, SystemClock
from dstream.time import Duration, to_duration

__all__ = ["RefreshedTable"]

log = logging.getLogger(__name__)


class RefreshedTable:
    """A table (an RDD or a DataFrame) reloaded by ``load()`` every ``every`` (seconds,
    ``"10min"``, a timedelta or a Duration), in the background. ``current()`` returns the
    newest version that finished loading; ``version`` counts the loads. ``clock`` (default:
    the system clock) is what ``every`` is measured on; pass the program's ManualClock in tests.
    """

    def __init__(
        self,
        load: Callable[[], Any],
        every: object,
        *,
        cache: bool = True,
        clock: Clock | None = None,
    ) -> None:
        if not callable(load):
            raise TypeError(
                f"RefreshedTable needs a function that loads the table, got {load!r}; e.g. "
                "RefreshedTable(lambda: sc.textFile(path).map(parse), every='10min')"
            )
        self._load = load
        self.every: Duration = to_duration(every, "RefreshedTable every")
        self._cache = cache
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._table: Any = None
        self.version = 0
        self.loaded_at: float | None = None  # time.time() of the current version's load
        self._swap(self._fetch())  # the first version, before any interval needs it
        self._thread = threading.Thread(target=self._refresh, name="dstream-table", daemon=True)
        self._thread.start()

    def current(self) -> Any:
        """The newest loaded version (what an interval generated now joins with)."""
        with self._lock:
            return self._table

    def close(self) -> None:
        """Stop refreshing (the current version stays readable)."""
        self._stop.set()
        self._clock.interrupt()

    def wait_for_version(self, version: int, timeout_s: float | None = None) -> bool:
        """Block until ``version`` (or a newer one) is current."""
        with self._lock:
            return self._lock.wait_for(lambda: self.version >= version, timeout_s)

    def _fetch(self) -> Any:
        table = self._load()
        if self._cache and hasattr(table, "cache"):
            table = table.cache()
            # Materialize before it is handed out: intervals never wait for a load.
            if hasattr(table, "count"):
                table.count()
        return table

    def _swap(self, table: Any) -> None:
        with self._lock:
            old, self._table = self._table, table
            self.version += 1
            self.loaded_at = _time.time()
            self._lock.notify_all()
        log.info("table %s: version %d loaded", self._load, self.version)
        if old is not None and hasattr(old, "unpersist"):
            # Intervals generated with the old version keep it in their lineage: if one is
            # recomputed, its partitions are recomputed from the old load's own lineage.
            old.unpersist(blocking=False)

    def _refresh(self) -> None:
        due = self._clock.now() + self.every
        while self._clock.wait_until(due, self._stop) and not self._stop.is_set():
            due = due + self.every
            try:
                self._swap(self._fetch())
            except Exception:
                log.exception("table %s: reload failed; version %d stays", self._load, self.version)
