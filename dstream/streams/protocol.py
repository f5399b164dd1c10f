"""What the engine asks of an input stream, as a type: the graph's ``inputs`` are
:class:`InputNode`\\ s, so the scheduler, recovery, backpressure and progress records reach
an input only through these names (:class:`dstream.sources.base.InputDStream` implements
them; Kafka's and the receiver's streams are InputDStreams).

Every other node's public protocol is :class:`dstream.streams.base.DStreamCore`'s public
names (identity, configuration, the journal and query hooks), with
:class:`~dstream.streams.state_base.StateStream`'s and
:class:`~dstream.streams.output.OutputDStream`'s additions for states and outputs.
"""

from __future__ import annotations

from typing import Any, Protocol

from dstream.time import Time

__all__ = ["InputNode"]


class InputNode(Protocol):
    """An input stream, as the engine sees it."""

    @property
    def id(self) -> int:
        """The node's number in its graph."""
        ...

    @property
    def label(self) -> str:
        """The operator and the program line that made it, for messages."""
        ...

    @property
    def durable(self) -> bool:
        """Whether any past interval can be read again (recovery needs it)."""
        ...

    @property
    def rate_limit(self) -> float | None:
        """The records/s backpressure lets it read next (None: no limit)."""
        ...

    def description(self) -> str:
        """What it reads, for progress records and the UI."""
        ...

    def validate(self) -> None:
        """Raise if it cannot be used (checked at ``start()``)."""
        ...

    def start(self) -> None:
        """Begin receiving (once, at ``start()``)."""
        ...

    def stop(self) -> None:
        """Stop receiving (at ``stop()``)."""
        ...

    def set_rate_limit(self, rate: float | None) -> None:
        """Backpressure's new rate (records/s; None: no limit)."""
        ...

    def receivers(self) -> dict[int, tuple[str, tuple[str, int]]]:
        """index -> (executor id, address) of each receiver running on an executor now."""
        ...

    def take_record_count(self, time: Time) -> int:
        """The records read for ``time`` (called once, when its batch completes)."""
        ...

    def input_metadata(self, time: Time) -> dict[str, Any]:
        """What the batch's ``StreamInputInfo`` says of the input of ``time``, besides its
        count."""
        ...
