"""Which state partitions get a second copy in memory under a budget: PPA's partially active
replication plan (its Sec. 4), on D-Streams. Pure: no Spark.

Every tentative output has a priority; a state partition's *profit* is how much
priority-weighted fidelity the outputs it reaches keep if it survives a failure: the sum of
those outputs' priorities times the partition's share of the state's rate (PPA's Eq. 4
weights a partition by its rate). Its *cost* is its size. PPA's structure-aware search over
minimal complete trees reduces here to a greedy choice by profit density (profit per byte):
behind the all-to-all shuffle that feeds a keyed state every output partition depends on
every input partition, so there are no tree structures to tell apart, and what one partition
buys is its own share. The plan spends the budget in that order, skipping what no longer
fits (a knapsack's greedy bound).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Candidate", "plan"]


@dataclass(frozen=True)
class Candidate:
    """One state partition that may get a copy."""

    stream: int
    partition: int
    size: int  # bytes in memory
    profit: float  # priority-weighted fidelity it keeps through a failure


def plan(candidates: list[Candidate], budget: int) -> dict[int, set[int]]:
    """The partitions to copy, by stream, spending at most ``budget`` bytes."""
    ranked = sorted(
        (c for c in candidates if c.profit > 0),
        key=lambda c: (-(c.profit / max(c.size, 1)), c.stream, c.partition),
    )
    chosen: dict[int, set[int]] = {}
    left = budget
    for c in ranked:
        if c.size <= left:
            chosen.setdefault(c.stream, set()).add(c.partition)
            left -= c.size
    return chosen
