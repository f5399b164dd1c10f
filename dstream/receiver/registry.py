"""Every block a receiver stream holds, under one lock: stored and waiting for the next
interval (pending), taken by an interval, committed, and, after a restart, the blocks of the
journaled intervals that their clients send again. The receivers (on the driver,
:mod:`dstream.receiver.server`; on executors, :mod:`dstream.receiver.tracker`) add blocks
here; the stream (:mod:`dstream.receiver.source`) takes each interval's and commits them.

::

    add_stored ──▶ pending ──take(t)──▶ intervals[t] ──commit_through──▶ committed ──▶ "C"
                       ▲                      │ forget_through: unpersisted
    backpressure: wait_for_room while pending holds an interval's worth

The lock is a Condition: receivers wait on it for room, an interval waits on it for the
blocks of a recomputed interval, tests wait on it for pending blocks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from dstream.receiver.blocks import StoredBlock
from dstream.receiver.ledger import CommittedBlocks
from dstream.receiver.protocol import ACK_COMMITTED
from dstream.time import Time

__all__ = ["AckChannel", "BlockRegistry", "Key"]

log = logging.getLogger(__name__)

Key = tuple[str, int]  # (client id, block seq)


class AckChannel(Protocol):
    """Where a client hears of its blocks: its connection to the driver's receiver, or the
    tracker connection of the receiver on an executor it sends to."""

    def ack(self, kind: bytes, seq: int) -> None: ...


class BlockRegistry:
    """The blocks of one receiver stream (see the module docstring). ``held_limit()`` is how
    many records may wait for the next interval; ``stopping`` is set when the stream stops
    (waiters give up)."""

    def __init__(
        self, label: str, held_limit: Callable[[], int], stopping: threading.Event
    ) -> None:
        self._label = label
        self._held_limit = held_limit
        self._stopping = stopping
        self.lock = threading.Condition()
        # client -> where its acknowledgements go (its latest connection)
        self.connections: dict[str, AckChannel] = {}
        self.pending: list[StoredBlock] = []  # stored, not yet in an interval
        self.intervals: dict[Time, list[StoredBlock]] = {}
        self.known: dict[Key, Time | None] = {}  # stored blocks -> their interval (None: pending)
        self.committed = CommittedBlocks()
        self._to_commit: list[Key] = []  # committed, "C" not yet sent
        # Restored from the journal: the blocks of each interval, which died with the
        # previous driver; the clients send them again (see take).
        self._lost: dict[Time, list[Key]] = {}
        self.awaited: dict[Key, Time] = {}  # block -> the restored interval it belongs to
        self._recovered: dict[Time, dict[Key, StoredBlock]] = {}
        self.restored_until: Time | None = None
        self.last_read: Time | None = None  # the latest interval that took pending blocks

    # ---- receiving -------------------------------------------------------------------------
    def seen(self, key: Key) -> str | None:
        """ "committed", "known" (stored, not committed) or None; call with the lock held."""
        if key in self.committed:
            return "committed"
        if key in self.known:
            return "known"
        return None

    def add_stored(self, block: StoredBlock) -> None:
        """A newly stored block: pending, or back in the restored interval that waits for it.
        Call with the lock held."""
        owner = self.awaited.pop(block.key, None)
        if owner is None:
            self.pending.append(block)
        else:
            self._recovered.setdefault(owner, {})[block.key] = block
        self.known[block.key] = owner
        self.lock.notify_all()

    def wait_for_room(self, key: Key) -> float:
        """Backpressure: while ``held_limit()`` records wait for the next interval, take no
        new block (the receiver does not read the client, TCP slows it down). A block a
        recomputed interval waits for is always taken. Returns how many records may still
        wait (infinite for such a block)."""

        def waiting() -> int:
            return sum(b.count for b in self.pending)

        with self.lock:
            if key in self.awaited:
                return float("inf")
            self.lock.wait_for(lambda: waiting() < self._held_limit() or self._stopping.is_set())
            return self._held_limit() - waiting()

    def room_changed(self) -> None:
        """The limit rose (backpressure): wake the receivers waiting for room."""
        with self.lock:
            self.lock.notify_all()

    # ---- each interval ---------------------------------------------------------------------
    def can_take(self, time: Time) -> bool:
        """Whether :meth:`take` gives ``time``'s blocks: kept, on record after a restart, or
        a new interval."""
        with self.lock:
            return (
                time in self.intervals
                or (self.restored_until is not None and time <= self.restored_until)
                or self.last_read is None
                or time > self.last_read
            )

    def take(self, time: Time, recovery_wait_s: float) -> list[StoredBlock]:
        """The blocks of interval ``time``: the ones it took before, the journaled ones sent
        again (after a restart), or every pending block (a new interval)."""
        with self.lock:
            if time in self.intervals:  # asked again while its blocks are stored
                blocks = self.intervals[time]
            elif self.restored_until is not None and time <= self.restored_until:
                blocks = self._take_recovered(time, recovery_wait_s)
            elif self.last_read is not None and time <= self.last_read:
                raise RuntimeError(
                    f"{self._label} was asked again for interval {time}, whose blocks it no "
                    "longer keeps; make the windows or remember() durations cover what the "
                    "program reads"
                )
            else:
                self.last_read = time
                blocks, self.pending = self.pending, []
                self.lock.notify_all()  # room again for the receivers
            self.intervals[time] = blocks
            for block in blocks:
                self.known[block.key] = time
            return blocks

    def _take_recovered(self, time: Time, wait_s: float) -> list[StoredBlock]:
        """The blocks of an interval the previous driver generated: its journaled blocks,
        sent again by their clients (they were never committed), waited for at most
        ``wait_s``. Called with the lock held."""
        journaled = self._lost.get(time, [])
        # Blocks of an interval that completed before the crash were committed: their clients
        # forgot them (a window or state recomputing that interval misses them).
        keys = [k for k in journaled if k not in self.committed]
        if len(keys) < len(journaled):
            log.warning(
                "%s: interval %s completed before the restart; its %d committed blocks are not "
                "sent again, so a recomputation of it reads none of them",
                self._label,
                time,
                len(journaled) - len(keys),
            )
        if keys:
            log.info("%s: waiting for the %d blocks of interval %s", self._label, len(keys), time)
        self.lock.wait_for(
            lambda: len(self._recovered.get(time, {})) >= len(keys) or self._stopping.is_set(),
            wait_s,
        )
        got = self._recovered.pop(time, {})
        self._lost.pop(time, None)
        missing = [k for k in keys if k not in got]
        for key in missing:
            self.awaited.pop(key, None)  # if it comes later, it goes into a later interval
        if missing:
            log.warning(
                "%s: %d of the %d blocks of interval %s were not sent again within %g s (their "
                "clients: %s); the interval is recomputed without them, and they go into a "
                "later interval if they come",
                self._label,
                len(missing),
                len(keys),
                time,
                wait_s,
                ", ".join(sorted({c for c, _ in missing})),
            )
        return [got[k] for k in keys if k in got]

    def blocks_of(self, time: Time) -> list[StoredBlock]:
        with self.lock:
            return list(self.intervals.get(time, ()))

    # ---- commits ---------------------------------------------------------------------------
    def commit_through(self, through: Time) -> list[StoredBlock]:
        """Commit the blocks of every interval up to ``through`` (their "C" goes out at the
        next :meth:`release_commits`); returns the blocks of restored intervals that no
        recomputation read, to be dropped."""
        dropped: list[StoredBlock] = []
        with self.lock:
            keys = [b.key for t, bs in self.intervals.items() if t <= through for b in bs]
            # Restored intervals that no recomputation read: committed, not kept waiting.
            for t in [t for t in self._lost if t <= through]:
                keys += self._lost.pop(t)
                dropped += self._recovered.pop(t, {}).values()
            for block in dropped:
                self.known.pop(block.key, None)
            for key in keys:
                self.awaited.pop(key, None)
                if key not in self.committed:
                    self.committed.add(*key)
                    self._to_commit.append(key)
        return dropped

    def release_commits(self) -> None:
        """Tell the clients of the blocks committed since the last call."""
        with self.lock:
            keys, self._to_commit = self._to_commit, []
            connections = dict(self.connections)
        for client, seq in keys:
            conn = connections.get(client)
            if conn is not None:
                conn.ack(ACK_COMMITTED, seq)

    def forget_through(self, forget: Time) -> list[StoredBlock]:
        """Forget the intervals up to ``forget``; returns their blocks, to be dropped."""
        dropped: list[StoredBlock] = []
        with self.lock:
            for t in [t for t in self.intervals if t <= forget]:
                for block in self.intervals.pop(t):
                    self.known.pop(block.key, None)
                    dropped.append(block)
        return dropped

    def clear(self) -> list[StoredBlock]:
        """At stop: forget every stored block; returns them, to be dropped."""
        with self.lock:
            blocks = self.pending + [b for bs in self.intervals.values() for b in bs]
            self.pending, self.intervals, self.known = [], {}, {}
            return blocks

    # ---- the metadata journal --------------------------------------------------------------
    def journal_state(self) -> dict[str, Any]:
        with self.lock:
            intervals = {t.ms: [[b.client, b.seq] for b in bs] for t, bs in self.intervals.items()}
            # Restored intervals not recomputed yet stay on record for a next restart.
            for t, keys in self._lost.items():
                intervals.setdefault(t.ms, [[c, seq] for c, seq in keys])
            return {"intervals": intervals, "committed": self.committed.to_json()}

    def restore(self, state: dict[str, Any]) -> None:
        with self.lock:
            self.committed = CommittedBlocks.from_json(state["committed"])
            self._lost = {
                Time(int(ms)): [(c, int(s)) for c, s in keys]
                for ms, keys in state["intervals"].items()
            }
            self.awaited = {
                key: t
                for t, keys in self._lost.items()
                for key in keys
                if key not in self.committed  # completed: their clients forgot them
            }
            self._recovered = {}
            self.restored_until = max(self._lost, default=None)

    # ---- for tests and demos ---------------------------------------------------------------
    def wait_for_pending(self, blocks: int, timeout_s: float) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: len(self.pending) >= blocks, timeout_s)

    def pending_blocks(self) -> list[StoredBlock]:
        with self.lock:
            return list(self.pending)
