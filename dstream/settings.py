"""One typed settings object, with units in the names. Environment variables are read only at
the command-line edge (apps/), never here."""

from __future__ import annotations

from dataclasses import dataclass, field

from dstream.time import Duration

__all__ = ["StreamingSettings"]


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

    def __post_init__(self) -> None:
        if not isinstance(self.pipelining_depth, int) or self.pipelining_depth < 1:
            raise ValueError(
                f"pipelining_depth {self.pipelining_depth!r} must be an int >= 1 "
                "(1 = one interval at a time)"
            )
