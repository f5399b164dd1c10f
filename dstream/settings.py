"""One typed settings object, with units in the names. Environment variables are read only at
the command-line edge (apps/), never here.

Every field is checked when the object is built, and durations are taken as users write them
(seconds as a number, ``"30s"``, ``"500ms"``, a ``timedelta`` or a :class:`Duration`), so a
wrong value fails at construction with the field's name instead of breaking every interval.
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from dstream.time import Duration, to_duration

__all__ = ["AvoidancePolicy", "ElasticPolicy", "StreamingSettings"]


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def _int(owner: str, name: str, value: object, low: int, example: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner} {name} must be an int, got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{owner} {name} {value} must be at least {low}, e.g. {example}")
    return value


@dataclass(frozen=True)
class AvoidancePolicy:
    """When to stop giving work to a slow executor (see dstream.scheduler.monitor).

    An executor *straggles in an interval* when most of its tasks there took longer than
    ``slowdown`` x the median of their stage (or were outrun by a speculative copy) — a
    stronger signal than the 1.4 x rule that starts copies, so one noisy task does not count.
    One that straggled in ``strikes`` of the last ``window`` intervals it ran is removed;
    after ``cooldown`` the cluster is asked for an executor again (an executor avoided again
    waits twice as long). At most ``max_fraction`` of the executors (at least one) are
    avoided at a time, and never the last.
    """

    window: int = 5
    strikes: int = 3
    cooldown: Duration = field(default_factory=lambda: Duration(30_000))
    max_fraction: float = 1 / 3
    slowdown: float = 2.0

    def __post_init__(self) -> None:
        owner = "AvoidancePolicy"
        _int(owner, "window", self.window, 1, "5")
        _int(owner, "strikes", self.strikes, 1, "3")
        _set(self, "cooldown", to_duration(self.cooldown, f"{owner} cooldown"))
        if not 1 <= self.strikes <= self.window:
            raise ValueError(
                f"AvoidancePolicy strikes {self.strikes} must be between 1 and window "
                f"{self.window} (strikes of the last `window` intervals)"
            )
        if not isinstance(self.slowdown, int | float) or not self.slowdown > 1:
            raise ValueError(
                f"AvoidancePolicy slowdown {self.slowdown!r} must be a number > 1 (times the "
                "median task)"
            )
        if not isinstance(self.max_fraction, int | float) or not 0 < self.max_fraction < 1:
            raise ValueError(
                f"AvoidancePolicy max_fraction {self.max_fraction!r} must be in (0, 1), "
                "e.g. 1/3: at most a third of the executors avoided at once"
            )


@dataclass(frozen=True)
class ElasticPolicy:
    """When to ask the cluster for more executors or give some back (see
    dstream.scheduler.elastic), and whether keyed state follows them.

    Load is an interval's processing time over the batch interval. ``up_after`` intervals
    in a row above ``scale_up`` (or a backlog of ``backlog_up`` intervals generated and not
    done) double the executors; ``down_after`` in a row below ``scale_down`` halve them;
    always within ``min_executors`` .. ``max_executors``. After a change nothing changes for
    ``cooldown`` of batch time (new executors take seconds to join and warm up). Executors
    running a receiver are never removed. With ``rescale_state``, every keyed state that
    can rescale (updateStateByKey, windows with an inverse) doubles or halves its
    partitions with the executors, split and merged narrowly (``stream.rescale``).
    """

    min_executors: int = 1
    max_executors: int = 8
    scale_up: float = 0.9
    scale_down: float = 0.4
    up_after: int = 2
    down_after: int = 10
    backlog_up: int = 2
    cooldown: Duration = field(default_factory=lambda: Duration(30_000))
    rescale_state: bool = True

    def __post_init__(self) -> None:
        owner = "ElasticPolicy"
        _int(owner, "min_executors", self.min_executors, 1, "1")
        _int(owner, "max_executors", self.max_executors, 1, "8")
        _int(owner, "up_after", self.up_after, 1, "2")
        _int(owner, "down_after", self.down_after, 1, "10")
        _int(owner, "backlog_up", self.backlog_up, 1, "2")
        _set(self, "cooldown", to_duration(self.cooldown, f"{owner} cooldown", allow_zero=True))
        if self.max_executors < self.min_executors:
            raise ValueError(
                f"ElasticPolicy max_executors {self.max_executors} must be at least "
                f"min_executors {self.min_executors}"
            )
        for name in ("scale_up", "scale_down"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(
                    f"ElasticPolicy {name} {value!r} must be a number > 0 (processing time "
                    "over the batch interval), e.g. scale_up=0.9, scale_down=0.4"
                )
        if not self.scale_down * 2 <= self.scale_up:
            raise ValueError(
                f"ElasticPolicy scale_down {self.scale_down} must be at most half of scale_up "
                f"{self.scale_up}: halving the executors doubles the load, and a load just "
                "under scale_down would otherwise be scaled straight back up"
            )
        if not isinstance(self.rescale_state, bool):
            raise TypeError(
                f"ElasticPolicy rescale_state must be a bool, got {self.rescale_state!r}"
            )


FailedIntervalPolicy = Literal["continue", "halt"]
BadRecordsPolicy = Literal["fail", "quarantine"]
ExistingCheckpointPolicy = Literal["set_aside", "refuse"]
_ZERO_ALLOWED = frozenset({"output_retry_backoff"})


@dataclass(frozen=True)
class StreamingSettings:
    """How the engine runs a program. Durations: seconds, ``"30s"``, ``timedelta`` or
    ``Duration``; each field is checked here.

    ``on_failed_interval`` decides what follows an interval whose output still failed after
    ``output_retries`` retries: ``"continue"`` (pyspark.streaming's behaviour: later
    intervals run, ``awaitTermination`` raises the error) or ``"halt"`` (Structured
    Streaming's: stop generating intervals; a restarted driver runs the failed interval again
    before going on). Either way the interval is recorded as failed in the metadata journal,
    never as completed.
    """

    # How many intervals may have jobs running at once (timestep pipelining). 1 runs the
    # intervals strictly one after the other, as pyspark.streaming does by default.
    pipelining_depth: int = 1
    # A replay at speed "max" of a stateless program (text files in, per-record operators,
    # at most one reduceByKey, saveAsTextFiles out) computes up to this many intervals as
    # one Spark job; each interval's output is still committed by its own interval
    # (docs/replay.md). 1: one job per interval, as live.
    replay_stretch: int = 32
    # A file modified up to this long before its interval (rounded up to whole batches) is
    # on time; the files each interval read are kept on record at least this long, and a
    # restarted driver counts older files that are not on record as read before it.
    file_remember: Duration = field(default_factory=lambda: Duration(60_000))
    # Files older than this when they appear are skipped (logged, counted in the listener's
    # input info); files between file_remember and this age are taken by the next interval.
    # None: no limit. Structured Streaming's maxFileAge default is 7 days. At least
    # file_remember.
    max_file_age: Duration | None = field(default_factory=lambda: Duration(7 * 86_400_000))
    # How long stop(stopGraceFully=True) waits for pending intervals before giving up.
    graceful_stop_timeout: Duration = field(default_factory=lambda: Duration(60_000))
    # A socket receiver that loses its connection retries after this delay.
    receiver_restart_delay: Duration = field(default_factory=lambda: Duration(2_000))
    # Lines a socket receiver holds before it stops reading (TCP then slows the sender).
    receiver_max_buffered: int = 100_000
    # Forget remembered RDDs older than this however long windows or remember() want them
    # (the paper's "maximum history"); must exceed every state's checkpoint interval.
    max_history: Duration | None = None
    # Remove executors that straggle repeatedly and bring them back after a cooldown. Off by
    # default: it needs executors in their own JVMs (not local[N]) and the JVM shim, and what
    # a removed executor held is recomputed. Speculative copies (dstream.sparkconf.SPECULATION)
    # handle one-off stragglers either way.
    executor_avoidance: AvoidancePolicy | None = None
    # An output job that fails is run again this many times, after output_retry_backoff,
    # doubled each time, before its interval counts as failed (outputs are idempotent per
    # interval: saveAsTextFiles and save() never commit an interval twice).
    output_retries: int = 2
    output_retry_backoff: Duration = field(default_factory=lambda: Duration(1_000))
    on_failed_interval: FailedIntervalPolicy = "continue"
    # A state checkpoint that fails is tried again this many times; after
    # max_checkpoint_failures checkpoints in a row failed, the engine halts (lineage would
    # otherwise grow without bound).
    checkpoint_retries: int = 2
    max_checkpoint_failures: int = 3
    # At most this many intervals generated and not completed; later ones are generated as
    # earlier ones complete (after an outage, missed intervals are caught up that way).
    max_backlog: int = 10
    # Copies of each interval's state (updateStateByKey, track, windows with an inverse; the
    # per-interval partials of a window without one) kept in executor memory. With 1, a lost
    # executor's state partitions are recomputed from lineage, one pass per interval since
    # the last checkpoint; with 2, the copy on another executor is read instead and only the
    # failure interval's own lost work is redone. The price: each interval's state is sent
    # to a second executor. bench/README.md ("One executor lost") has the numbers.
    state_replicas: int = 1
    # Executors that follow the load (and keyed state that rescales with them); needs
    # executors in JVMs of their own and the JVM shim, as executor_avoidance. Off by default.
    elastic: ElasticPolicy | None = None
    # Lower the records each source reads per interval while processing takes longer than
    # the interval (a PID rate estimator, as pyspark.streaming's; Kafka and receivers). Also
    # on when the SparkConf says spark.streaming.backpressure.enabled=true.
    backpressure: bool = False
    # A DataFrame made with spark.sql() over a view of createOrReplaceTempView reads the
    # interval the view held when it was made; that interval stays readable this long (of
    # stream time) after the view moves on. (toDF() frames hold their rows for their
    # lifetime.)
    view_retention: Duration = field(default_factory=lambda: Duration(30_000))
    # What a record whose user function raises does: "fail" (pyspark.streaming's: the task
    # fails, the interval fails after its retries) or "quarantine" (the record is set aside
    # with its error, interval and operator, readable as ssc.quarantined(); the interval
    # goes on without it). See docs/bad-records.md.
    bad_records: BadRecordsPolicy = "fail"
    # While an executor loss is being recovered, give every output (foreachRDD,
    # saveAsTextFiles, pprint; each can say otherwise with tentative=) a tentative result
    # of each interval, computed from what survived and marked with its fidelity, before
    # the exact one (docs/tentative-outputs.md). Needs the JVM shim; schedule the SparkContext
    # with spark.scheduler.mode=FAIR so the tentative jobs go first.
    tentative_outputs: bool = False
    # Memory (MB, over every state) for second copies of the state partitions that matter
    # most to the tentative outputs' priority-weighted fidelity (PPA's partially active
    # replication): chosen by profit density, renewed as the state grows. 0: none.
    replica_budget_mb: float = 0.0
    # Whether the replica planner weighs each output's priority (False: every output counts
    # the same, for comparisons).
    replica_priorities: bool = True
    # What start() does when the program did not come from getOrCreate() and its
    # checkpoint directory holds another program's metadata (Spark's own
    # stateful_network_wordcount.py, run a second time): "set_aside" (pyspark.streaming's:
    # a new program starts; the old one's metadata, state checkpoints, output commits and
    # quarantined records are moved to <dir>/previous/, and a warning names getOrCreate) or
    # "refuse" (start() raises CheckpointDirectoryError).
    existing_checkpoint: ExistingCheckpointPolicy = "set_aside"

    def __post_init__(self) -> None:
        owner = "StreamingSettings"
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in ("Duration", "Duration | None"):
                if value is None and "None" in str(f.type):
                    continue
                zero_ok = f.name in _ZERO_ALLOWED
                _set(self, f.name, to_duration(value, f"{owner} {f.name}", allow_zero=zero_ok))
        _int(owner, "pipelining_depth", self.pipelining_depth, 1, "1 (one interval at a time)")
        _int(owner, "replay_stretch", self.replay_stretch, 1, "32 (1: one job per interval)")
        _int(owner, "receiver_max_buffered", self.receiver_max_buffered, 1, "100000")
        _int(owner, "output_retries", self.output_retries, 0, "2 (0: no retry)")
        _int(owner, "checkpoint_retries", self.checkpoint_retries, 0, "2 (0: no retry)")
        _int(owner, "max_checkpoint_failures", self.max_checkpoint_failures, 1, "3")
        _int(owner, "max_backlog", self.max_backlog, 1, "10")
        _int(owner, "state_replicas", self.state_replicas, 1, "2 (a copy on a second executor)")
        if self.max_file_age is not None and self.max_file_age < self.file_remember:
            raise ValueError(
                f"{owner} max_file_age {self.max_file_age} must be at least file_remember "
                f"{self.file_remember} (a file on time is never too old); raise max_file_age "
                "or lower file_remember"
            )
        if self.on_failed_interval not in ("continue", "halt"):
            raise ValueError(
                f"{owner} on_failed_interval {self.on_failed_interval!r} must be 'continue' "
                "(later intervals run, as pyspark.streaming) or 'halt' (stop; a restarted "
                "driver runs the failed interval again)"
            )
        if self.executor_avoidance is not None and not isinstance(
            self.executor_avoidance, AvoidancePolicy
        ):
            raise TypeError(
                f"{owner} executor_avoidance must be an AvoidancePolicy or None, got "
                f"{self.executor_avoidance!r}"
            )

        if self.elastic is not None and not isinstance(self.elastic, ElasticPolicy):
            raise TypeError(
                f"{owner} elastic must be an ElasticPolicy or None, got {self.elastic!r}"
            )
        if self.bad_records not in ("fail", "quarantine"):
            raise ValueError(
                f"{owner} bad_records {self.bad_records!r} must be 'fail' (a record whose "
                "function raises fails its interval, as pyspark.streaming) or 'quarantine' "
                "(it is set aside with its error, see ssc.quarantined())"
            )
        if self.existing_checkpoint not in ("set_aside", "refuse"):
            raise ValueError(
                f"{owner} existing_checkpoint {self.existing_checkpoint!r} must be 'set_aside' "
                "(a new program starts, the old one's files are moved to <dir>/previous/, as "
                "pyspark.streaming starts afresh) or 'refuse' (start() raises; resume the old "
                "program with StreamingContext.getOrCreate)"
            )
        if not isinstance(self.backpressure, bool):
            raise TypeError(f"{owner} backpressure must be a bool, got {self.backpressure!r}")
        for flag in ("tentative_outputs", "replica_priorities"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{owner} {flag} must be a bool, got {getattr(self, flag)!r}")
        budget = self.replica_budget_mb
        if (
            isinstance(budget, bool)
            or not isinstance(budget, int | float)
            or not math.isfinite(budget)
            or budget < 0
        ):
            raise ValueError(
                f"{owner} replica_budget_mb {budget!r} must be a number of MB >= 0, e.g. 64 "
                "(0: no second copies)"
            )

    def to_bytes(self) -> bytes:
        """For the metadata journal: the fields by name (a later version restores what it
        knows and defaults the rest)."""
        return pickle.dumps({f.name: getattr(self, f.name) for f in fields(self)}, protocol=5)

    @classmethod
    def from_bytes(cls, data: bytes) -> StreamingSettings:
        saved = pickle.loads(data)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in saved.items() if k in known})

    def differences(self, other: StreamingSettings) -> dict[str, tuple[Any, Any]]:
        """``{field: (self's value, other's value)}`` where the two differ."""
        return {
            f.name: (getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)
            if getattr(self, f.name) != getattr(other, f.name)
        }
