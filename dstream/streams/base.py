"""The mechanism every D-Stream shares; operators only declare what is particular to them.

A subclass declares three things:

* ``dependencies`` — the parent streams (empty for an input stream),
* ``slide_duration`` — how often it produces an RDD (its parent's, unless it is a window),
* ``_compute(time)`` — the RDD for one interval, built from its parents' RDDs of that time.

This base class owns the rest: the per-time RDD cache (``_get_or_compute``), which times are
valid, how long RDDs are remembered (windows push their need upstream through
``_parent_remember_duration``), persistence, and forgetting old RDDs (``_clear_metadata``).
Nothing here runs a Spark job: RDDs are built lazily and jobs are started by the scheduler.

The object a user holds is a handle over the node (:class:`dstream.DStream`, built in
:mod:`dstream.api`), so nothing here shows on it. A node's public names are the protocol the
other packages (scheduler, recovery, api, storage) use: read-only properties for what it is
and how it is configured, methods for what they ask of it. Names that start with ``_`` are the
node's own: no other package reads or writes them (tests/unit/test_layers.py counts).
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Literal, TypeVar

from dstream.errors import ContextStateError
from dstream.functions import UserFunction, call_site
from dstream.streams.copartitioned import memory_only
from dstream.streams.fidelity import Loss
from dstream.streams.tentative_pass import current as current_pass
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD, StorageLevel

    from dstream.streams.graph import DStreamGraph
    from dstream.streams.plan import PlanStep
    from dstream.streams.tentative_pass import TentativePass

T = TypeVar("T")

__all__ = ["STATE", "DStreamCore"]

# The storage level of RDDs that later intervals build on (a state; a window's partials): in
# memory, with ``StreamingSettings.state_replicas`` copies. Resolved as each RDD is
# persisted, so the settings of the driver running the program decide (a restarted driver's
# included).
STATE: Final = "state"


class DStreamCore(Generic[T]):
    """Base of every stream. Users see it as :class:`dstream.DStream`."""

    _graph: DStreamGraph

    def __init__(
        self,
        graph: DStreamGraph,
        parents: Sequence[DStreamCore[Any]],
        *,
        name: str,
        user_functions: Iterable[UserFunction] = (),
    ) -> None:
        graph.check_can_add(name)
        for parent in parents:
            if parent.graph is not graph:
                raise ValueError(
                    f"{name}() combines streams of two different StreamingContexts; "
                    "build every stream of a program from the same StreamingContext"
                )
        # The program this stream belongs to, and what it needs to run (SparkContext,
        # settings, clock, listener bus, the running engine's services).
        self._graph = graph
        self._parents: tuple[DStreamCore[Any], ...] = tuple(parents)
        self._operator = name
        self._site = call_site()
        self._user_functions: tuple[UserFunction, ...] = tuple(user_functions)
        self._zero_time: Time | None = None
        self._remember_duration: Duration | None = None
        self._storage_level: StorageLevel | Literal["state"] | None = None
        self._checkpoint_interval: Duration | None = None
        self._user_name: str | None = None
        # For the stream a state operator returns: the state stream its checkpoint() sets.
        self._checkpoint_target: DStreamCore[Any] | None = None
        self._id = graph.register(self)
        before = set(self.__dict__)
        self._init_transient()
        _check_transient(self, set(self.__dict__) - before)
        # Guards ``generated``: the scheduler fills it while a shell thread may slice() it.
        self._lock: threading.RLock = graph.lock

    # Fields that live only in one driver process: not saved with the graph for recovery,
    # rebuilt by _init_transient() (subclasses add theirs).
    _transient: ClassVar[tuple[str, ...]] = ("_generated", "_lock", "_pins")

    def _init_transient(self) -> None:
        # RDD of each interval this stream has produced and still remembers.
        self._generated: dict[Time, RDD[Any]] = {}
        self._lock = threading.RLock()
        # Intervals a live query still reads (see dstream.api.queries): not forgotten.
        self._pins: Counter[Time] = Counter()

    def __getstate__(self) -> dict[str, Any]:
        skip = _transient_fields(type(self))
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Journals written before streams took the graph saved the context instead: the
        # restoring driver binds the graph (scheduler.recovery.restore_into).
        state.pop("_ssc", None)
        self.__dict__.update(state)
        self._init_transient()

    # ---- identity: which node this is --------------------------------------------------------
    @property
    def id(self) -> int:
        """The node's number in its graph (stable across a driver restart)."""
        return self._id

    @property
    def operator(self) -> str:
        """The operator that made this node (``"map"``, ``"updateStateByKey"``, ...)."""
        return self._operator

    @property
    def user_name(self) -> str | None:
        """The name ``setName()`` gave this stream, if any."""
        return self._user_name

    def set_user_name(self, name: str) -> None:
        """Name this stream (``DStream.setName``): a restarted driver running changed code
        finds its state by this name."""
        self._user_name = name

    @property
    def user_functions(self) -> tuple[UserFunction, ...]:
        """The user's functions this node runs (checked for picklability at start)."""
        return self._user_functions

    # ---- the program it belongs to and how it is configured -------------------------------------
    @property
    def graph(self) -> DStreamGraph:
        """The program this node belongs to, and the services it runs with."""
        return self._graph

    def bind(self, graph: DStreamGraph) -> None:
        """Belong to ``graph``: a node of a saved program, loaded by a restarted driver,
        takes the running program's services and its lock."""
        self._graph = graph
        self._lock = graph.lock

    @property
    def parents(self) -> tuple[DStreamCore[Any], ...]:
        """The streams this node was built from, in the operator's order."""
        return self._parents

    @property
    def zero_time(self) -> Time | None:
        """The time the program started from (None before start)."""
        return self._zero_time

    @property
    def remember_duration(self) -> Duration | None:
        """How long this node keeps its RDDs (None: one slide)."""
        return self._remember_duration

    @property
    def storage_level(self) -> StorageLevel | Literal["state"] | None:
        """How this node's RDDs are persisted (None: not at all)."""
        return self._storage_level

    def set_storage_level(self, level: StorageLevel | Literal["state"]) -> None:
        """Persist this node's RDDs at ``level`` (``persist()``; :data:`STATE` for RDDs that
        later intervals build on)."""
        self._storage_level = level

    @property
    def checkpoint_interval(self) -> Duration | None:
        """How often this node's RDDs are checkpointed (None: never, or the default)."""
        return self._checkpoint_interval

    def set_checkpoint_interval(self, interval: Duration) -> None:
        """Checkpoint this node's RDDs every ``interval`` (``checkpoint()``)."""
        self._checkpoint_interval = interval

    @property
    def checkpoint_target(self) -> DStreamCore[Any] | None:
        """For the stream a state operator returns: the state stream behind it, the one its
        ``checkpoint()`` and queries act on."""
        return self._checkpoint_target

    def set_checkpoint_target(self, state: DStreamCore[Any] | None) -> None:
        """Say which state stream is behind this one (see :attr:`checkpoint_target`)."""
        self._checkpoint_target = state

    def plan_step(self) -> PlanStep | None:
        """What one interval of this node does, in a form a plan over many intervals can
        run (:mod:`dstream.streams.plan`); None: computed interval by interval."""
        return None

    def remembered_rdd(self, time: Time) -> RDD[T] | None:
        """The RDD of ``time`` if this node still remembers it; never computes one."""
        with self._lock:
            return self._generated.get(time)

    # ---- what the metadata journal keeps of a stream, every interval --------------------------
    def journal_state(self) -> dict[str, Any] | None:
        """What a restarted driver needs of this stream beyond its definition (None: nothing)."""
        return None

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`journal_state` saved."""

    # ---- what an operator declares -------------------------------------------------------
    @property
    def dependencies(self) -> tuple[DStreamCore[Any], ...]:
        return self._parents

    @property
    def slide_duration(self) -> Duration:
        return self._parents[0].slide_duration

    def _compute(self, time: Time) -> RDD[T] | None:
        raise NotImplementedError(f"{type(self).__name__} must implement compute(time)")

    def _parent_remember_duration(self) -> Duration | None:
        """How long parents must remember their RDDs for this stream; windows need more."""
        return self._remember_duration

    # ---- what the base owns --------------------------------------------------------------
    @property
    def label(self) -> str:
        """The operator and the program line that made this node, for messages."""
        return f"{self._operator} at {self._site}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} #{self._id} {self.label}>"

    def __reduce__(self) -> Any:
        raise TypeError(
            f"the stream {self.label} was captured by a function that runs on executors; "
            "a DStream exists only on the driver — use its RDDs inside transform() or "
            "foreachRDD() instead"
        )

    def _initialize(self, zero_time: Time) -> None:
        """Called once at start, from the outputs down to the inputs."""
        if self._zero_time is not None and self._zero_time != zero_time:
            raise ContextStateError(
                f"{self.label} was initialized with zero time {self._zero_time} and now "
                f"{zero_time}; a stream cannot be shared by two running contexts"
            )
        self._zero_time = zero_time
        self.remember(self.slide_duration)
        for parent in self._parents:
            parent._initialize(zero_time)

    def remember(self, duration: Duration | None) -> None:
        if duration is not None and (
            self._remember_duration is None or duration > self._remember_duration
        ):
            self._remember_duration = duration
        needed = self._parent_remember_duration()
        for parent in self._parents:
            parent.remember(needed)

    def _is_time_valid(self, time: Time) -> bool:
        if self._zero_time is None:
            raise ContextStateError(
                f"{self.label} has not been started; call ssc.start() before asking for RDDs"
            )
        return time > self._zero_time and (time - self._zero_time).ms % self.slide_duration.ms == 0

    def _get_or_compute(self, time: Time) -> RDD[T] | None:
        """The RDD of ``time``, computed once and then remembered (inside a tentative pass, a
        stream the failure reaches gets the pass's RDD instead: dstream.streams.tentative_pass)."""
        with self._lock:
            tentative = current_pass()
            if tentative is not None and self._id in tentative.affected:
                return tentative.rdd(self, time)
            if time in self._generated:
                return self._generated[time]
            if not self._is_time_valid(time):
                return None
            rdd = self._compute(time)
            if rdd is not None:
                level = self._persist_level()
                if level is not None:
                    rdd.persist(level)
                self._generated[time] = rdd
            return rdd

    # ---- tentative results (dstream.streams.tentative_pass) --------------------------------------
    # How the loss of a tentative RDD follows from its parents' (dstream.streams.fidelity).
    _loss_rule: ClassVar[str] = "mix"

    def _tentative(self, time: Time, tentative: TentativePass) -> RDD[T] | None:
        """This stream's RDD of ``time`` in a tentative pass (its parents' are the pass's)."""
        return self._compute(time)

    def _tentative_loss_in(self, time: Time, tentative: TentativePass, rdd: RDD[T]) -> Loss:
        """The loss of ``rdd``, this stream's RDD of ``time`` in a tentative pass: its
        parents' by this operator's rule."""
        from dstream.streams.tentative_pass import combine

        parents = [tentative.loss(p, t) for p, t in self._loss_parents(time)]
        return combine(self._loss_rule, parents, rdd.getNumPartitions())

    def _loss_parents(self, time: Time) -> list[tuple[DStreamCore[Any], Time]]:
        """The parent RDDs whose losses this stream's RDD of ``time`` inherits."""
        return self._parent_times(time)

    def _persist_level(self) -> StorageLevel | None:
        if self._storage_level == STATE:
            return memory_only(self._graph.settings.state_replicas)
        return self._storage_level

    def _parent_times(self, time: Time) -> list[tuple[DStreamCore[Any], Time]]:
        """The parent RDDs (stream, time) that computing ``time`` reads; windows override."""
        return [(parent, time) for parent in self._parents]

    def _can_compute(self, time: Time) -> bool:
        """Whether the RDD of ``time`` is remembered or can be rebuilt without asking an input
        for an interval it no longer has."""
        if time in self._generated:
            return True
        if self._zero_time is None or not self._is_time_valid(time):
            return False
        return all(p._can_compute(t) for p, t in self._parent_times(time))

    def _clear_metadata(self, time: Time) -> None:
        """Forget RDDs older than the remember duration; the graph calls it on every stream
        after each batch completes.

        An RDD is dropped once no window or query can need it any more: the remember duration
        is the widest window downstream (pushed up by ``parent_remember_duration``) or what the
        user asked for with ``remember()``.
        """
        with self._lock:
            keep = self._remember_duration or self.slide_duration
            # The paper's maximum history: forget older RDDs whatever wants them longer.
            limit = self._graph.settings.max_history
            if limit is not None and limit < keep:
                keep = max(limit, self.slide_duration)
            old = [t for t in self._generated if t <= time - keep and not self._pins[t]]
            for t in old:
                rdd = self._generated.pop(t)
                if self._storage_level is not None:
                    rdd.unpersist(blocking=False)

    # ---- pins: what a live query reads stays --------------------------------------------------
    def pin(self, time: Time) -> None:
        """Keep the interval ``time`` of this stream (not forgotten) until :meth:`unpin`."""
        with self._lock:
            self._pins[time] += 1

    def unpin(self, time: Time) -> None:
        """Release one :meth:`pin` (or one pin of :meth:`pinned`) of the interval ``time``."""
        with self._lock:
            self._pins[time] -= 1
            if self._pins[time] <= 0:
                del self._pins[time]

    # ---- what live queries read (dstream.api.queries) ------------------------------------------
    def latest_time(self) -> Time:
        """The newest completed interval of this stream (on its slide's grid)."""
        if self._zero_time is None:
            raise ContextStateError(
                f"{self.label} has no interval yet: queries read completed intervals, so "
                "call ssc.start() and wait for the first batch"
            )
        done = self._graph.runtime.completed_time()
        if done is None:
            raise ContextStateError(
                f"{self.label} has no completed interval yet; the first one ends at "
                f"{self._zero_time + self._graph.batch_duration}"
            )
        slide, zero = self.slide_duration.ms, self._zero_time.ms
        return Time(zero + (done.ms - zero) // slide * slide)

    def pinned(self, time: Time) -> RDD[T]:
        """The RDD of ``time``, in a new RDD object that pins the interval while it lives."""
        from pyspark import RDD

        with self._lock:
            rdd = self._generated.get(time)
            if rdd is None and self._can_compute(time):
                rdd = self._get_or_compute(time)
            if rdd is None:
                raise ValueError(_forgotten(self.label, time, sorted(self._generated)))
            pins = _pin_lineage(self, time)
        view: RDD[T] = RDD(rdd._jrdd, rdd.ctx, rdd._jrdd_deserializer)
        view.partitioner = rdd.partitioner
        view.interval = time  # type: ignore[attr-defined]  # which interval a query read
        weakref.finalize(view, _unpin_all, pins)
        return view

    def pinned_latest(self) -> RDD[T]:
        """:meth:`pinned` of the newest completed interval (under the graph's lock: the
        interval cannot be forgotten between finding it and pinning it)."""
        with self._lock:
            return self.pinned(self.latest_time())

    def remembered_between(self, first: Time, last: Time) -> list[Time]:
        """The intervals from ``first`` to ``last`` (on the slide's grid) still remembered."""
        result = []
        with self._lock:
            t = first
            while t <= last:
                if t in self._generated:
                    result.append(t)
                t = t + self.slide_duration
        return result

    # ---- hooks for stateful streams ---------------------------------------------------------
    # A state stream carries data from one interval to the next (windows with an inverse,
    # updateStateByKey, track); it is checkpointed by default.
    is_state: bool = False
    # A stream that keeps files of its own (track()'s snapshots) needs a storage directory.
    needs_storage: bool = False

    def history_needed(self) -> tuple[Duration, str] | None:
        """How much past input this stream's recovery reads, and what sets it (state
        streams: their checkpoint interval, or the window a replay rebuilds)."""
        return None

    def _default_checkpoint_interval(self) -> Duration:
        """The smallest multiple of the slide that is at least 10 s."""
        slide = self.slide_duration.ms
        return Duration(max(1, -(-10_000 // slide)) * slide)

    def prepare_storage(self, root: str) -> None:
        """Called at start with the directory this stream may keep files under."""

    def _on_batch_completed(self, time: Time) -> None:
        """Called by the scheduler after every job of batch ``time`` finished."""

    def _before_interval(self, time: Time) -> None:
        """Called before the first job of interval ``time`` runs (every job of the interval
        before it has run)."""

    def _check_settings(self, settings: Any) -> None:
        """Raise if this stream cannot run under ``settings`` (checked at start())."""

    def _cached_rdds(self) -> list[RDD[Any]]:
        """The RDDs this stream persisted and still remembers (released at stop())."""
        return list(self._generated.values())


def _transient_fields(cls: type[DStreamCore[Any]]) -> set[str]:
    """Every ``_transient`` name of ``cls`` and of its bases."""
    names: set[str] = set()
    for klass in cls.__mro__:
        names.update(klass.__dict__.get("_transient", ()))
    return names


def _check_transient(node: DStreamCore[Any], rebuilt: set[str]) -> None:
    """The declared transient fields are the ones ``_init_transient()`` set (``rebuilt``): a
    misspelt name would leave the real field to be saved with the graph."""
    declared = _transient_fields(type(node))
    if declared != rebuilt:
        raise TypeError(
            f"{type(node).__name__}._transient names "
            f"{', '.join(map(repr, sorted(declared - rebuilt))) or 'nothing'}, which "
            "_init_transient() does not set, and leaves out "
            f"{', '.join(map(repr, sorted(rebuilt - declared))) or 'nothing'}, which it "
            "sets; declare exactly the fields _init_transient() rebuilds (they are not "
            "saved with the graph)"
        )


def _pin_lineage(node: DStreamCore[Any], time: Time) -> list[tuple[DStreamCore[Any], Time]]:
    """Pin the interval ``time`` of ``node`` and of every stream it is computed from (under
    the graph's lock); returns the pins, for :func:`_unpin_all`."""
    pins: list[tuple[DStreamCore[Any], Time]] = []
    todo = [(node, time)]
    while todo:
        stream, t = todo.pop()
        if (stream, t) in pins:
            continue
        stream._pins[t] += 1
        pins.append((stream, t))
        todo.extend(stream._parent_times(t))
    return pins


def _forgotten(label: str, time: Time, kept: list[Time]) -> str:
    if not kept:
        remembered = "it remembers no interval"
    else:
        remembered = f"it remembers {kept[0]} to {kept[-1]} ({len(kept)} intervals)"
    return (
        f"{label} no longer has interval {time}: {remembered}. Keep more with "
        "stream.remember('10m') (or ssc.remember) before ssc.start(), and "
        "StreamingSettings.max_history if it is set"
    )


def _unpin_all(pins: list[tuple[DStreamCore[Any], Time]]) -> None:
    for stream, time in pins:
        stream.unpin(time)
