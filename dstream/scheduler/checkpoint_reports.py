"""What the scheduler's loop does when a state checkpoint was written or failed: the
journal record that makes a written checkpoint count, the listeners' reports, and the
count of failures in a row that halts the engine at ``max_checkpoint_failures`` (a state's
lineage would grow without bound)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dstream.listener import CheckpointInfo
from dstream.scheduler.coordinator import given_names

if TYPE_CHECKING:
    from dstream.scheduler.coordinator import BatchCoordinator, Position
    from dstream.services import Services
    from dstream.streams.graph import DStreamGraph
    from dstream.streams.state_base import StateStream
    from dstream.time import Time

__all__ = ["CheckpointReports"]


class CheckpointReports:
    def __init__(
        self,
        graph: DStreamGraph,
        services: Services,
        *,
        hooks: BatchCoordinator,
        position: Callable[[], Position],
        halt: Callable[[str, BaseException, Time | None], None],
    ) -> None:
        self._graph = graph
        self._settings = services.settings
        self._bus = services.bus
        self._hooks = hooks
        self._position = position
        self._halt = halt
        # Consecutive failed checkpoints, per state stream id.
        self._failures: dict[int, int] = {}

    def _info(self, stream: StateStream, time: Time, **kw: Any) -> CheckpointInfo:
        name = given_names(self._graph.streams).get(stream.id)
        return CheckpointInfo(stream.label, name, time, **kw)

    def written(self, stream: StateStream, time: Time, seconds: float) -> None:
        self._failures.pop(stream.id, None)
        try:
            self._hooks.checkpoint_written(stream, time, self._position())
        except Exception as exc:
            # Without its record the checkpoint cannot be relied on, and neither can any
            # record after it: stop, loudly.
            self._halt(
                f"writing the metadata record for the checkpoint of {stream.label}", exc, time
            )
            return
        self._bus.post("onCheckpointCompleted", self._info(stream, time, seconds=seconds))

    def failed(self, stream: StateStream, time: Time, error: BaseException, attempts: int) -> None:
        n = self._failures.get(stream.id, 0) + 1
        self._failures[stream.id] = n
        info = self._info(
            stream,
            time,
            attempts=attempts,
            error=f"{type(error).__name__}: {error}",
            consecutive_failures=n,
        )
        self._bus.post("onCheckpointFailed", info)
        limit = self._settings.max_checkpoint_failures
        if n >= limit:
            self._halt(
                f"checkpointing {stream.label} ({n} checkpoints in a row, the limit "
                f"settings.max_checkpoint_failures={limit}; its lineage would grow without "
                "bound)",
                error,
                time,
            )
