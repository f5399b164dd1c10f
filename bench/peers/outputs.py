"""The pure part of the peers harness (#62): reading the systems' output lines, folding them
into results, judging them against the oracle, and summarising latencies. No Spark, no
peers: tests/unit/test_peers_outputs.py runs it directly.

An output line, as bench/peers/programs print them (``N> `` is Flink's subtask prefix;
``+I[...]``/``+U[...]`` its SQL ``print`` connector's rows, whose retractions ``-U``/``-D``
carry nothing new)::

    g <event second> <count> <newest event time ms>
    t <key> <running total> <newest event time ms>
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Output", "Verdict", "fold", "judge", "latency_summary", "parse_line"]

_SUBTASK = re.compile(r"^\d+> ")


@dataclass(frozen=True)
class Output:
    kind: str  # "g" or "t"
    key: str
    value: int
    ts: int  # newest event time the value covers, epoch ms
    arrived: int  # when the harness read the line, epoch ms


def parse_line(line: str, arrived: int) -> Output | None:
    """One output line, or None for anything else (logs, retractions)."""
    line = _SUBTASK.sub("", line.strip())
    if line[:3] in ("+I[", "+U["):
        line = line[3:-1]
    elif line[:3] in ("-U[", "-D["):
        return None
    parts = line.split()
    if len(parts) != 4 or parts[0] not in ("g", "t"):
        return None
    try:
        return Output(parts[0], parts[1], int(parts[2]), int(parts[3]), arrived)
    except ValueError:
        return None


def fold(outputs: Iterable[Output], upsert: bool) -> dict[str, int]:
    """``{key: value}``: partial counts added up, or (``upsert``) the largest value seen per
    key. Totals and counts only grow, so the largest is the newest whatever order lines from
    different workers arrive in; a replay that prints the same totals again changes nothing."""
    out: dict[str, int] = {}
    for o in outputs:
        if upsert:
            out[o.key] = max(out.get(o.key, o.value), o.value)
        else:
            out[o.key] = out.get(o.key, 0) + o.value
    return out


@dataclass(frozen=True)
class Verdict:
    """How a system's results compare with the oracle, key by key."""

    keys: int  # keys the oracle has
    exact: int
    lost: int  # value below the oracle's, or the key missing
    doubled: int  # value above the oracle's (records counted twice)
    unexpected: int  # keys the oracle does not have

    @property
    def ok(self) -> bool:
        return self.exact == self.keys and not self.unexpected

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def judge(got: dict[str, int], want: dict[str, int]) -> Verdict:
    exact = lost = doubled = 0
    for key, value in want.items():
        have = got.get(key, 0)
        if have == value:
            exact += 1
        elif have < value:
            lost += 1
        else:
            doubled += 1
    return Verdict(len(want), exact, lost, doubled, len(set(got) - set(want)))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile; ``inf`` for no values."""
    if not values:
        return math.inf
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def latency_summary(outputs: Sequence[Output]) -> dict[str, float]:
    """End-to-end latency of output lines: read by the harness minus the newest event time
    they cover (the write time of the newest record in them)."""
    lat = [o.arrived - o.ts for o in outputs]
    return {
        "outputs": len(lat),
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "max_ms": max(lat, default=math.inf),
    }
