"""Bad records set aside (``StreamingSettings(bad_records="quarantine")``), on the driver.

Tasks note the records their user functions raised on (:mod:`dstream.tasks.bad_record_notes`) in
one accumulator per program. When an interval completes, the engine *harvests* what its
tasks noted: the records are counted in the interval's ``BatchInfo``, progress record and
Streaming tab, kept for ``ssc.quarantined()`` (the newest :data:`KEEP`), and, when the
program has a checkpoint directory, written to ``<checkpoint>/quarantine/<interval ms>.json``
before the interval's metadata record: the dead-letter output, one JSON file per interval
that set records aside, which survives the driver. A partition computed twice (recovery,
speculation, replay, a restarted driver) sets aside the same records under the same key,
so they are counted and written once.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any, NamedTuple

from dstream.storage.filesystem import filesystem_for
from dstream.tasks.bad_record_notes import Noted, QuarantineParam, Slot
from dstream.time import Time

if TYPE_CHECKING:
    from dstream.streams.graph import DStreamGraph

__all__ = ["KEEP", "Quarantine", "QuarantinedRecord", "read_quarantined"]

KEEP = 10_000  # records ssc.quarantined() returns at most (the newest)
_SEEN = 100_000  # slots remembered as harvested (a late recomputation is not counted again)


class QuarantinedRecord(NamedTuple):
    """A record a user function raised on, set aside: the interval it belongs to, the
    operator (``"map at app.py:12"``), the partition, its position in the partition (for a
    state update: the n-th key set aside there), the record's ``repr`` (a state update's:
    ``(key, new values)``; cut at 500 characters) and the error."""

    time: Time
    operator: str
    partition: int
    position: int
    record: str
    error: str
    stream: int = -1  # the operator's stream in the program (two on one line differ)

    def to_json(self) -> dict[str, Any]:
        return {
            "time_ms": self.time.ms,
            "stream": self.stream,
            "operator": self.operator,
            "partition": self.partition,
            "position": self.position,
            "record": self.record,
            "error": self.error,
        }


class Quarantine:
    """One program's set-aside records (made with its graph)."""

    def __init__(self, graph: DStreamGraph) -> None:
        self._graph = graph
        self._acc: Any = None
        self._lock = threading.Lock()
        self._records: deque[QuarantinedRecord] = deque(maxlen=KEEP)
        self._seen: OrderedDict[Slot, None] = OrderedDict()

    @property
    def active(self) -> bool:
        return self._graph.settings.bad_records == "quarantine"

    def accumulator(self) -> Any:
        """The accumulator tasks note bad records in (made with the first task that may)."""
        with self._lock:
            if self._acc is None:
                self._acc = self._graph.sc.accumulator({}, QuarantineParam())
            return self._acc

    def harvest(self, time: Time) -> int:
        """Take what the tasks of intervals up to ``time`` set aside and was not taken
        before; write it out; return how many records that is."""
        with self._lock:
            acc = self._acc
        if acc is None:
            return 0
        notes: dict[Slot, Noted] = acc.value  # the driver's copy, merged as tasks end
        taken: list[tuple[Slot, Noted]] = []
        for slot in list(notes):  # list(): tasks' updates arrive on the accumulator thread
            if slot.time_ms <= time.ms:
                noted = notes.pop(slot, None)
                if noted is not None and slot not in self._seen:
                    taken.append((slot, noted))
        if not taken:
            return 0
        records = [
            QuarantinedRecord(
                Time(s.time_ms), s.operator, s.partition, position, record, error, s.stream
            )
            for s, noted in sorted(taken)
            for position, record, error in noted.samples
        ]
        count = sum(noted.total for _, noted in taken)
        self._write(records, {s: n.total for s, n in taken})
        with self._lock:
            for slot, _ in taken:
                self._seen[slot] = None
            while len(self._seen) > _SEEN:
                self._seen.popitem(last=False)
            self._records.extend(records)
        return count

    def records(self, since: Time | None = None) -> list[QuarantinedRecord]:
        with self._lock:
            return [r for r in self._records if since is None or r.time >= since]

    def _write(self, records: list[QuarantinedRecord], counts: dict[Slot, int]) -> None:
        directory = self._graph.runtime.checkpoint_dir
        if directory is None:
            return
        parent = f"{directory.rstrip('/')}/quarantine"
        fs = filesystem_for(parent, self._graph.sc)
        fs.mkdirs(parent)
        for time_ms in sorted({s.time_ms for s in counts}):
            path = f"{parent}/{time_ms}.json"
            slots = {
                (s.stream, s.operator, s.partition): n
                for s, n in counts.items()
                if s.time_ms == time_ms
            }
            new = set(slots)
            kept = [r.to_json() for r in records if r.time.ms == time_ms]
            if fs.exists(path):  # a restarted driver ran it again, or a slot came late
                old = json.loads(fs.read_bytes(path))
                for stream, op, partition, n in old["slots"]:
                    slots.setdefault((stream, op, partition), n)
                kept = [
                    r
                    for r in old["records"]
                    if (r["stream"], r["operator"], r["partition"]) not in new
                ] + kept
            body = {
                "time_ms": time_ms,
                "count": sum(slots.values()),
                "slots": [[st, op, p, n] for (st, op, p), n in sorted(slots.items())],
                "records": kept,
            }
            temp = f"{parent}/_{time_ms}.json.tmp"  # '_': readers skip it
            fs.write_bytes(temp, json.dumps(body, indent=1).encode())
            fs.delete(path)
            fs.rename(temp, path)


def read_quarantined(checkpoint_dir: str, sc: Any = None) -> list[QuarantinedRecord]:
    """Every record set aside under ``checkpoint_dir`` (the files survive the driver), in
    interval order; ``sc`` is needed for an ``hdfs://`` directory."""
    parent = f"{checkpoint_dir.rstrip('/')}/quarantine"
    fs = filesystem_for(parent, sc)
    if not fs.exists(parent):
        return []
    out = []
    for name in sorted(fs.list_names(parent), key=lambda n: int(n.split(".")[0])):
        if not name.endswith(".json"):
            continue
        body = json.loads(fs.read_bytes(f"{parent}/{name}"))
        for r in body["records"]:
            out.append(
                QuarantinedRecord(
                    Time(r["time_ms"]), r["operator"], r["partition"], r["position"],
                    r["record"], r["error"], r.get("stream", -1),
                )
            )  # fmt: skip
    return out
