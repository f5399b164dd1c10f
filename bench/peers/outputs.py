"""The pure part of the peers harness (#62): reading the systems' output lines, folding them
into results, judging them against the oracle, and summarising latencies. No Spark, no
peers: tests/unit/test_peers_outputs.py runs it directly.

An output line, as bench/peers/programs print them (``N> `` is Flink's subtask prefix;
``+I[...]``/``+U[...]`` its SQL ``print`` connector's rows, whose retractions ``-U``/``-D``
carry nothing new)::

    g <event second> <count> <newest event time ms>
    t <key> <running total> <newest event time ms>
    w <window> <word> <count in the window> <newest event time ms>
    k <window> <word> <count in the window> <newest event time ms>

``w`` (WordCount) and ``k`` (TopK, the window's top words) lines name their window by any
label the system gives it (its end, its id); the newest event time is the newest record of the
window the system knows of (some print it per word: the window's is the largest of its lines).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "Output",
    "Verdict",
    "fold",
    "judge",
    "judge_top",
    "judge_window",
    "latency_summary",
    "parse_line",
    "windows",
]

WINDOWED = ("w", "k")

_SUBTASK = re.compile(r"^\d+> ")


@dataclass(frozen=True)
class Output:
    kind: str  # "g", "t", "w" or "k"
    key: str  # event second, key or word
    value: int
    ts: int  # newest event time the value covers, epoch ms
    arrived: int  # when the harness read the line, epoch ms
    window: str = ""  # "w" and "k" lines: the window's label


def parse_line(line: str, arrived: int) -> Output | None:
    """One output line, or None for anything else (logs, retractions)."""
    line = _SUBTASK.sub("", line.strip())
    if line[:3] in ("+I[", "+U["):
        line = line[3:-1]
    elif line[:3] in ("-U[", "-D["):
        return None
    parts = line.split()
    try:
        if len(parts) == 4 and parts[0] in ("g", "t"):
            return Output(parts[0], parts[1], int(parts[2]), int(parts[3]), arrived)
        if len(parts) == 5 and parts[0] in WINDOWED:
            return Output(parts[0], parts[2], int(parts[3]), int(parts[4]), arrived, parts[1])
    except ValueError:
        pass
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


def windows(outputs: Iterable[Output]) -> dict[str, dict[str, int]]:
    """``{window: {word: count}}`` of ``w`` or ``k`` lines; a word printed twice for one window
    (an update, a replay) keeps its largest count."""
    out: dict[str, dict[str, int]] = {}
    for o in outputs:
        counts = out.setdefault(o.window, {})
        counts[o.key] = max(counts.get(o.key, o.value), o.value)
    return out


def _fullest(outputs: Iterable[Output]) -> dict[str, int]:
    """The window holding the most: the one that covers every record when the input is
    shorter than a window (every other one holds a part)."""
    return max(windows(outputs).values(), key=lambda c: sum(c.values()), default={})


def judge_window(outputs: Iterable[Output], want: dict[str, int]) -> Verdict:
    """WordCount: the fullest window's counts against the counts over every record."""
    return judge(_fullest(outputs), want)


def judge_top(outputs: Iterable[Output], want: dict[str, int], k: int) -> Verdict:
    """TopK: the fullest window's top ``k`` words against the counts over every record. Exact
    but for ties: a word counts as exact when its count is the oracle's and no word outside
    the answer has a higher one (which of the words tied at the ``k``-th count are shown is
    the system's choice). ``keys`` is ``k`` (or fewer, if fewer words exist); words beyond
    the ``k`` most frequent, or that the oracle does not have, are ``unexpected``."""
    got = _fullest(outputs)
    best = sorted(got.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    size = min(k, len(want))
    ranked = sorted(want.values(), reverse=True)
    kth = ranked[size - 1] if size else 0
    exact = lost = doubled = unexpected = 0
    for word, count in best:
        if word not in want or want[word] < kth:
            unexpected += 1
        elif count == want[word]:
            exact += 1
        elif count < want[word]:
            lost += 1
        else:
            doubled += 1
    # A word above the k-th count that is not shown is lost too.
    shown = {w for w, _ in best}
    lost += sum(1 for w, c in want.items() if c > kth and w not in shown)
    return Verdict(size, exact, lost, doubled, unexpected)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile; ``inf`` for no values."""
    if not values:
        return math.inf
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def latency_summary(outputs: Sequence[Output]) -> dict[str, float]:
    """End-to-end latency of output lines: read by the harness minus the newest event time
    they cover (the write time of the newest record in them). A window's ``w``/``k`` lines are
    one output: its last line read minus the newest event time of any of its lines."""
    lat = [o.arrived - o.ts for o in outputs if o.kind not in WINDOWED]
    per_window: dict[tuple[str, str], tuple[int, int]] = {}
    for o in outputs:
        if o.kind in WINDOWED:
            arrived, ts = per_window.get((o.kind, o.window), (0, 0))
            per_window[o.kind, o.window] = (max(arrived, o.arrived), max(ts, o.ts))
    lat += [arrived - ts for arrived, ts in per_window.values()]
    return {
        "outputs": len(lat),
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "max_ms": max(lat, default=math.inf),
    }
