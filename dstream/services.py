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

__all__ = ["Services"]


@dataclass(frozen=True, slots=True)
class Services:
    """The SparkContext, the clock, the settings, the listener bus, and the prefix of every
    Spark job group of the program's jobs."""

    sc: SparkContext
    clock: Clock
    settings: StreamingSettings
    bus: ListenerBus
    job_group_prefix: str
