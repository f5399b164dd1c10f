"""Interactive queries on a running stream (the paper's Sec. 3.5): the RDDs a stream already
keeps, read while the program runs.

Every completed interval is a consistent cut (exactly-once semantics make it so), and an
interval's RDD is immutable: a query reads the RDD of one completed interval and never needs
a lock on running work. What it needs is a *pin*: while the RDD a query returned is alive,
the engine neither forgets that interval (``_clear_metadata``) nor deletes the state
checkpoint its lineage reads, so the query can run as long as it likes — even while the
stream moves on and checkpoints — and always sees that one interval. The pin is released
when the returned RDD is garbage-collected.

The methods return ordinary PySpark RDDs (with ``.interval``, the :class:`Time` of the interval
they hold) and DataFrames::

    sessions.latest().count()                       # the newest completed interval
    counts.at("21:00:30").take(5)                   # a remembered past interval
    totals.snapshot().filter(...).collect()         # a state stream's whole state
    totals.lookup("spark")                          # one key, one partition read
    sessions.createOrReplaceTempView("sessions")    # SQL on the newest completed interval
    spark.sql("select cdn, count(*) from sessions group by cdn").show()
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dstream.api.common import CommonOps
from dstream.jvm import session_of
from dstream.listener import StreamingListener
from dstream.time import Time
from dstream.timetext import parse_when

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from dstream.streams.base import DStreamCore
    from dstream.streams.graph import DStreamGraph

T = TypeVar("T")

__all__ = ["QueryOps", "TempViews", "to_row"]


class QueryOps(CommonOps[T]):
    __slots__ = ()

    # ---- reading intervals ------------------------------------------------------------------
    def latest(self) -> RDD[T]:
        """The RDD of the newest completed interval of this stream."""
        return self._node.pinned_latest()

    def at(self, time: object) -> RDD[T]:
        """The RDD of the interval ``time`` falls in: a :class:`Time`, a datetime, epoch
        seconds, or what a person types (``"21:00:30"``, ``"-5m"``, see
        :mod:`dstream.timetext`)."""
        node = self._node
        latest = node.latest_time()
        t = self._when(time, "at() time")
        assert node.zero_time is not None  # latest_time() checked that the stream started
        aligned = _ceil(t, node.slide_duration.ms, node.zero_time.ms)
        if aligned > latest:
            raise ValueError(
                f"at({time!r}): interval {aligned} of {node.label} has not completed yet; the "
                f"newest completed interval is {latest}"
            )
        return node.pinned(aligned)

    def _when(self, value: object, what: str) -> Time:
        """``value`` as ``at`` and ``slice`` read it: "now" and "-5m" count back from the
        newest completed interval (the clock's now when none has completed)."""
        graph = self._node.graph
        now = graph.clock.now()
        done = graph.runtime.completed_time()
        return parse_when(value, now, what, relative_to=done)

    def _slice_view(self, time: Time) -> RDD[T]:
        return self._node.pinned(time)  # each RDD of a slice holds its interval, as at()'s

    # ---- state --------------------------------------------------------------------------------
    def snapshot(self) -> RDD[T]:
        """The whole state as of the newest completed interval: ``(key, state)`` for every key
        of ``updateStateByKey``/``track``, or of a window kept with an inverse function."""
        self._require_state("snapshot")
        return self.latest()

    def lookup(self, key: Any) -> list[Any]:
        """The values of ``key`` in the state as of the newest completed interval (a list,
        as ``RDD.lookup``). Only the key's partition is read."""
        self._require_state("lookup")
        rdd = self.snapshot()
        n = rdd.getNumPartitions()  # the state's count at that interval (rescale())

        def scan(split: int, records: Iterable[Any]) -> Iterable[Any]:
            # The state is hash-partitioned: only the key's own partition is read. (The hash
            # of a str is only portable in the workers, which run with PYTHONHASHSEED set.)
            from pyspark.rdd import portable_hash

            if portable_hash(key) % n != split:
                return
            found, example = [], None
            for k, v in records:
                if k == key:
                    found.append(v)
                elif example is None:
                    example = k
            yield found, example

        try:
            ((values, example),) = rdd.mapPartitionsWithIndex(scan).collect()
        except Exception as exc:
            if "unhashable" in str(exc):
                raise TypeError(f"lookup({key!r}): the key cannot be hashed") from None
            raise
        if not values and example is not None and type(example) is not type(key):
            raise TypeError(
                f"lookup({key!r}): the key is a {type(key).__name__}, but the keys of "
                f"{self._node.label} are {type(example).__name__}s, e.g. {example!r}"
            )
        return values

    # ---- SQL ----------------------------------------------------------------------------------
    def toDF(self, schema: StructType | list[str] | None = None) -> DataFrame:
        """The newest completed interval as a DataFrame. Records that are Rows, dicts or
        named tuples are rows; a pair ``(key, value)`` is the row ``key`` + the value's fields
        (or ``key, value`` for a plain value); anything else is ``value``.

        The rows are read once, here (one Spark job), and kept in the executors' storage for
        as long as the DataFrame, or one derived from it, lives: the stream moves on, forgets
        the interval and deletes the checkpoint it was read from, and the DataFrame still
        answers. (A DataFrame is a plan, not an RDD a pin could follow: ``df.filter(...)``
        keeps no reference to ``df``.)"""
        rdd = self.latest()  # pinned until the rows are in storage
        session = _session(rdd)
        frame = _frame(session, rdd, schema, self._node.label)
        return frame.localCheckpoint(eager=True)

    def createOrReplaceTempView(self, name: str, schema: StructType | None = None) -> None:
        """A SQL view named ``name`` that always reads the newest completed interval of this
        stream (it is re-pointed as each interval completes), in the SparkSession of the
        stream's SparkContext: ``spark.sql(f"select ... from {name}")``."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(
                f"createOrReplaceTempView() name {name!r} must be an identifier, e.g. 'sessions'"
            )
        _views_of(self._node.graph).register(name, self, schema)

    def _require_state(self, what: str) -> DStreamCore[Any]:
        node = self._node
        state = node if node.is_state else node.checkpoint_target
        if state is None:
            raise TypeError(
                f"{what}() reads the state of a state stream (updateStateByKey, track, or a "
                f"window with an inverse function); {node.label} is not one: use latest()"
            )
        return state


def _ceil(t: Time, slide_ms: int, zero_ms: int) -> Time:
    """The end of the interval ``t`` falls in, on the grid ``zero + k * slide``."""
    return Time(zero_ms + -(-(t.ms - zero_ms) // slide_ms) * slide_ms)


def _session(rdd: RDD[Any]) -> Any:
    return session_of(rdd.context)


def to_row(record: Any) -> Any:
    """One record as a Row (see :meth:`QueryOps.toDF`)."""
    from pyspark.sql import Row

    if isinstance(record, Row):
        return record
    if isinstance(record, dict):
        return Row(**record)
    if isinstance(record, tuple) and hasattr(record, "_asdict"):
        return Row(**record._asdict())
    if isinstance(record, tuple) and len(record) == 2:
        key, value = record
        if isinstance(value, Row):
            return Row(key=key, **value.asDict())
        if isinstance(value, dict):
            return Row(key=key, **value)
        if isinstance(value, tuple) and hasattr(value, "_asdict"):
            return Row(key=key, **value._asdict())
        return Row(key=key, value=value)
    return Row(value=record)


def _frame(session: Any, rdd: RDD[Any], schema: Any, label: str) -> DataFrame:
    rows = rdd.map(to_row)
    try:
        if schema is None:
            frame: DataFrame = session.createDataFrame(rows)
        else:
            frame = session.createDataFrame(rows, schema)
        return frame
    except (TypeError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        example = rdd.take(1)
        if not example:
            raise ValueError(
                f"toDF() of {label}: its newest interval is empty, so no schema can be "
                "inferred; pass a schema (a StructType or a list of column names)"
            ) from None
        raise TypeError(
            f"toDF() of {label}: its records do not make rows ({reason}); a record is "
            f"{example[0]!r:.100}. Map them to Rows, dicts or (key, dict) pairs first, e.g. "
            "stream.map(lambda r: Row(name=r[0], n=r[1])), or pass a schema"
        ) from None


class TempViews:
    """The SQL views of ``createOrReplaceTempView``: each one re-pointed at its stream's
    newest completed interval as intervals complete (on the listener thread, so a view never
    delays the stream). The view holds the pin of the interval it reads, and of the ones it
    read before for ``StreamingSettings.view_retention`` of stream time: a DataFrame made
    with ``spark.sql()`` is planned over the interval the view held then, and reads it when
    it runs."""

    def __init__(self) -> None:
        self._views: dict[str, tuple[QueryOps[Any], Any]] = {}
        # name -> the pinned RDDs the view read, oldest first (the last one it reads now)
        self._held: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def register(self, name: str, stream: QueryOps[Any], schema: Any) -> None:
        with self._lock:
            self._views[name] = (stream, schema)
        node = stream._node
        if node.zero_time is not None and node.graph.runtime.completed_time() is not None:
            self.refresh(name)

    def refresh_all(self) -> None:
        for name in list(self._views):
            self.refresh(name)

    def refresh(self, name: str) -> None:
        with self._lock:
            stream, schema = self._views[name]
        rdd = stream.latest()
        if schema is None and rdd.isEmpty():
            return  # no schema to give it yet: the first interval with records will
        frame = _frame(_session(rdd), rdd, schema, stream._node.label)
        frame.createOrReplaceTempView(name)
        retention = stream._node.graph.settings.view_retention
        with self._lock:
            self._views[name] = (stream, schema or frame.schema)  # infer once
            held, time = self._held.setdefault(name, []), rdd.interval  # type: ignore[attr-defined]
            held.append(rdd)
            # Older intervals are let go once they are view_retention older than the newest.
            self._held[name] = [r for r in held if r.interval > time - retention]


_views_lock = threading.Lock()


def _views_of(graph: DStreamGraph) -> TempViews:
    """The program's SQL views (kept on its graph), made with its first
    createOrReplaceTempView."""
    with _views_lock:
        if graph.views is None:
            views = TempViews()
            graph.views = views
            graph.bus.add(ViewRefresher(views))
        return cast(TempViews, graph.views)


class ViewRefresher(StreamingListener):
    """Re-points the temporary views after each completed interval."""

    def __init__(self, views: TempViews) -> None:
        self._views = views

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self._views.refresh_all()
