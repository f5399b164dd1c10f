"""One typed settings object, with units in the names. Environment variables are read only at
the command-line edge (apps/), never here."""

from __future__ import annotations

from dataclasses import dataclass, field

from dstream.time import Duration

__all__ = ["AvoidancePolicy", "StreamingSettings"]


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
        if not 1 <= self.strikes <= self.window:
            raise ValueError(
                f"AvoidancePolicy strikes {self.strikes} must be between 1 and window "
                f"{self.window} (strikes of the last `window` intervals)"
            )
        if not self.slowdown > 1:
            raise ValueError(
                f"AvoidancePolicy slowdown {self.slowdown} must be > 1 (times the median task)"
            )
        if not 0 < self.max_fraction < 1:
            raise ValueError(
                f"AvoidancePolicy max_fraction {self.max_fraction} must be in (0, 1), "
                "e.g. 1/3: at most a third of the executors avoided at once"
            )


@dataclass(frozen=True)
class StreamingSettings:
    # How many intervals may have jobs running at once (timestep pipelining). 1 runs the
    # intervals strictly one after the other, as pyspark.streaming does by default.
    pipelining_depth: int = 1
    # A file source considers files modified within this long before the current batch
    # (rounded up to whole batches), so a file that lands late is still picked up once.
    file_remember: Duration = field(default_factory=lambda: Duration(60_000))
    # How long stop(stopGraceFully=True) waits for pending intervals before giving up.
    graceful_stop_timeout: Duration = field(default_factory=lambda: Duration(60_000))
    # A socket receiver that loses its connection retries after this delay.
    receiver_restart_delay: Duration = field(default_factory=lambda: Duration(2_000))
    # Forget remembered RDDs older than this however long windows or remember() want them
    # (the paper's "maximum history"); must exceed every state's checkpoint interval.
    max_history: Duration | None = None
    # Remove executors that straggle repeatedly and bring them back after a cooldown. Off by
    # default: it needs executors in their own JVMs (not local[N]) and the JVM shim, and what
    # a removed executor held is recomputed. Speculative copies (dstream.sparkconf.SPECULATION)
    # handle one-off stragglers either way.
    executor_avoidance: AvoidancePolicy | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.pipelining_depth, int) or self.pipelining_depth < 1:
            raise ValueError(
                f"pipelining_depth {self.pipelining_depth!r} must be an int >= 1 "
                "(1 = one interval at a time)"
            )
