"""What every part of a running program shares, in one object made once by the engine and
handed down to the graph, the scheduler and the recovery episodes (instead of five
arguments handed over three times)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.clock import Clock
    from dstream.listener import ListenerBus
    from dstream.settings import StreamingSettings

__all__ = ["Services", "UsesServices"]


@dataclass(frozen=True, slots=True)
class Services:
    """The SparkContext, the clock, the settings, the listener bus, and the prefix of every
    Spark job group of the program's jobs."""

    sc: SparkContext
    clock: Clock
    settings: StreamingSettings
    bus: ListenerBus
    job_group_prefix: str


class UsesServices:
    """The services, read as attributes of the object that holds them (the engine, the
    graph every node reads them from)."""

    services: Services

    @property
    def sc(self) -> SparkContext:
        return self.services.sc

    @property
    def clock(self) -> Clock:
        return self.services.clock

    @property
    def settings(self) -> StreamingSettings:
        return self.services.settings

    @property
    def bus(self) -> ListenerBus:
        return self.services.bus

    @property
    def job_group_prefix(self) -> str:
        """Spark job groups of the program's jobs start with it."""
        return self.services.job_group_prefix
