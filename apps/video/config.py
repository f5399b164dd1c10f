"""The monitor's settings and the groups its metrics are computed for."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .events import DIMENSIONS

__all__ = ["ALL", "GROUP_DIMENSIONS", "MonitorConfig", "groups_of"]

# Every session counts in the group ("all", "all") and in one group per dimension, plus the
# CDN-in-region combination (what a delivery problem is usually about).
ALL = ("all", "all")
GROUP_DIMENSIONS = ("all", *DIMENSIONS, "cdn_region")


def groups_of(dims: tuple[str, ...]) -> list[tuple[str, str]]:
    """The groups of a session with dimension values ``dims`` (in DIMENSIONS order)."""
    customer, content, cdn, isp, device, region = dims
    return [
        ALL,
        ("customer", customer),
        ("content", content),
        ("cdn", cdn),
        ("isp", isp),
        ("device", device),
        ("region", region),
        ("cdn_region", f"{cdn}/{region}"),
    ]


def _ms(value: int, name: str) -> int:
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"monitor {name} {value!r} must be a positive number of milliseconds")
    return value


@dataclass(frozen=True)
class MonitorConfig:
    """What the monitor computes; durations in ms, ratios as exact fractions.

    The same config drives the streaming program and the oracle.
    """

    batch_ms: int = 1000
    window_ms: int = 10_000  # the sliding window of the windowed metrics
    baseline_ms: int = 60_000  # the alert's baseline: the window before the last window_ms
    timeout_ms: int = 15_000  # a session with no event for this long is closed
    stall_ms: int = 10_000  # a live session silent this long counts as stalled
    buffering_threshold: Fraction = Fraction(5, 100)  # a session's "too much buffering"
    alert_floor: Fraction = Fraction(8, 100)  # alert: window buffering ratio at least this
    alert_factor: Fraction = Fraction(3)  # ... and this many times the baseline's
    alert_min_view_ms: int = 300_000  # ... with this much viewing in window and baseline
    join_alert_floor: Fraction = Fraction(15, 100)  # join alert: failure rate at least this
    alert_min_joins: int = 20  # ... and factor x the baseline's, with this many ended in both
    alert_dimensions: tuple[str, ...] = ("cdn", "region", "isp", "device", "cdn_region")
    hll_precision: int = 12  # 4 KiB sketches, 1.6 % standard error
    exact_uniques: bool = True  # also count unique viewers exactly (state grows with them)

    def __post_init__(self) -> None:
        for name in ("batch_ms", "window_ms", "baseline_ms", "timeout_ms", "stall_ms"):
            _ms(getattr(self, name), name)
        for name in ("window_ms", "baseline_ms", "timeout_ms"):
            value = getattr(self, name)
            if value % self.batch_ms:
                raise ValueError(
                    f"monitor {name} {value} ms must be a multiple of the batch interval "
                    f"{self.batch_ms} ms, e.g. {max(1, value // self.batch_ms) * self.batch_ms}"
                )
        if self.baseline_ms <= self.window_ms:
            raise ValueError(
                f"monitor baseline_ms {self.baseline_ms} must be longer than window_ms "
                f"{self.window_ms}: the baseline is the part of it before the window"
            )
        unknown = set(self.alert_dimensions) - set(GROUP_DIMENSIONS)
        if unknown:
            raise ValueError(
                f"monitor alert_dimensions {sorted(unknown)} are not dimensions; "
                f"choose from {', '.join(GROUP_DIMENSIONS)}"
            )
        if not isinstance(self.alert_min_joins, int) or self.alert_min_joins <= 0:
            raise ValueError(
                f"monitor alert_min_joins {self.alert_min_joins!r} must be a positive number "
                "of join attempts"
            )
        for name in ("buffering_threshold", "alert_floor", "alert_factor", "join_alert_floor"):
            object.__setattr__(self, name, Fraction(getattr(self, name)))
