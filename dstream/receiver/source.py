"""The receiver input stream (driver side): clients' blocks stored on two executors before
they are acknowledged, each interval the union of the blocks that arrived in it.

::

    client ──"B" seq──▶ handshake ok? ──▶ stored before? ──yes──▶ "A" (and "C" if committed)
                                              │ no
                                              ▼
                          RDD persisted MEMORY_AND_DISK_2, materialised, on 2 executors
                                              │
                                              ▼
                                    pending ──▶ "A" seq
    generate t   pending blocks ──▶ blocks(t) (their ids on record in the journal) ──▶ RDD(t)
    complete t   blocks(t) committed (journaled); their "C" goes out at the next completion,
                 when the journal already says t completed
    clear t      blocks(t) unpersisted

The stream's jobs are split by module: the receivers of ``placement="driver"`` (TCP server
and handshake: :mod:`dstream.receiver.server`), those of ``placement="executors"`` (a receiver
task per address: :mod:`dstream.receiver.tracker`, which stores the blocks and registers them
here, ``_register_remote``, before it acknowledges them), the blocks it holds and
backpressure (:mod:`dstream.receiver.registry`), storing blocks in Spark
(:mod:`dstream.receiver.blocks`) and the commit horizon (:mod:`dstream.receiver.horizon`).
This module is the graph node: each interval's RDD, recovery, commits and the journal. What
survives what is in docs/receiver.md.
"""

from __future__ import annotations

import logging
import socket
import threading
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.jvm import live_conf
from dstream.listener import (
    ReceiverInfo,
    StreamingListenerReceiverError,
    StreamingListenerReceiverStarted,
    StreamingListenerReceiverStopped,
)
from dstream.receiver.blocks import (
    NotReplicatedError,
    StoredBlock,
    drop_blocks,
    interval_rdd,
    store_blocks,
    stream_block,
)
from dstream.receiver.horizon import commit_horizon, states_hold
from dstream.receiver.protocol import ACK_COMMITTED
from dstream.receiver.registry import BlockRegistry
from dstream.receiver.server import DriverReceivers
from dstream.receiver.tracker import (
    COMMITTED,
    KNOWN,
    NEW,
    REFUSED,
    ExecutorReceivers,
    RemoteBlock,
)
from dstream.sources.base import InputDStream
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.graph import DStreamGraph

__all__ = ["ReceiverInputDStream"]

log = logging.getLogger(__name__)

_STORE_ATTEMPTS = 6


class _RemoteClient:
    """A client connected to a receiver on an executor: its commits go through the
    receiver's tracker connection (the receiver passes them on; its "A"s it sends itself)."""

    def __init__(self, tracker: Any, client: str) -> None:
        self.tracker, self.client = tracker, client

    def ack(self, kind: bytes, seq: int) -> None:
        if kind == ACK_COMMITTED:
            self.tracker.commit(self.client, seq)


class ReceiverInputDStream(InputDStream):
    _counts_in_tasks = False
    # A stream restored from a checkpoint written before receivers could run on executors
    # has no placement of its own: it ran in the driver.
    _placement = "driver"
    # It can produce a past interval again: one it remembers (its blocks are still stored)
    # and, after a restart, one on record in the journal (its blocks are sent again, or
    # were committed: see BlockRegistry.take). _read refuses any other.
    durable = True

    def __init__(
        self,
        graph: DStreamGraph,
        secret: bytes,
        addresses: list[tuple[str, int]],
        *,
        replicas: int,
        as_text: bool,
        recovery_wait_s: float,
        placement: str = "driver",
    ) -> None:
        super().__init__(graph, name="receiverStream")
        self._placement = placement
        self._secret = secret
        self._wanted = list(addresses)
        self._replicas = replicas
        self._as_text = as_text
        self._recovery_wait_s = recovery_wait_s

    _transient: ClassVar[tuple[str, ...]] = (
        "_stopping",
        "_blocks",
        "_driver",
        "_remote",
        "_bound",
        "_refusals",
        "_held_by",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        self._stopping = threading.Event()
        # Every block it holds, and backpressure; its lock is waited on by tests.
        self._blocks = BlockRegistry(self.label, self._held_limit, self._stopping)
        self._driver: DriverReceivers | None = None  # placement="driver"
        self._remote: ExecutorReceivers | None = None  # placement="executors"
        self._bound: list[tuple[str, int]] = []
        # Refused handshakes, as (peer address, reason), for monitoring and tests.
        self._refusals: list[tuple[str, str]] = []
        self._held_by: str | None = None  # the state whose checkpoint holds commits back

    # ---- lifecycle ----
    def start(self) -> None:
        self._stopping.clear()
        if self._placement == "executors":
            self._start_on_executors()
            return
        self._driver = DriverReceivers(
            self.label,
            f"dstream-receiver-{self._id}",
            self._secret,
            self._as_text,
            self._blocks,
            self._store,
            self._stopping,
            on_refused=self._refused,
            on_error=self._report_error,
        )
        self._driver.start(self._wanted)
        self._bound = self._driver.bound
        info = self._info(True)
        self._graph.bus.post("onReceiverStarted", StreamingListenerReceiverStarted(info))
        log.info("%s listening on %s", self.label, self._bound)

    def _start_on_executors(self) -> None:
        self._bound = list(self._wanted)  # until each receiver says where it listens
        self._remote = ExecutorReceivers(
            self._graph.sc,
            stream_id=self._id,
            label=self.label,
            secret=self._secret,
            addresses=self._wanted,
            replicas=self._replicas,
            as_text=self._as_text,
            register=self._register_remote,
            on_error=self._remote_error,
            on_started=self._remote_started,
        )
        self._remote.start()
        info = self._info(True)
        self._graph.bus.post("onReceiverStarted", StreamingListenerReceiverStarted(info))
        log.info("%s: receivers starting on executors at %s", self.label, self._wanted)

    def stop(self) -> None:
        self._blocks.release_commits()  # the intervals completed before stop() are on record
        self._stopping.set()
        self._blocks.room_changed()  # receivers waiting for room give up
        if self._remote is not None:  # (its registrations waiting for room have returned)
            self._remote.stop()
        if self._driver is not None:
            self._driver.stop()
        drop_blocks(self._graph.sc, self._blocks.clear())
        info = replace(self._info(False), last_error_message="Stopped by driver")
        self._graph.bus.post("onReceiverStopped", StreamingListenerReceiverStopped(info))

    def _refused(self, peer: str, reason: str, exc: BaseException | None) -> None:
        log.warning("%s refused a client at %s: %s", self.label, peer, reason)
        self._refusals.append((peer, reason))
        self._report_error(f"refused a client at {peer}: {reason}", exc)

    def _report_error(self, message: str, exc: BaseException | None = None) -> None:
        info = self._info(True, message, exc)
        self._graph.bus.post("onReceiverError", StreamingListenerReceiverError(info))

    # ---- receivers on executors (dstream.receiver.tracker) ----
    def _register_remote(self, block: RemoteBlock, tracker: Any) -> int:
        """A block a receiver on an executor stored: NEW (now pending, or back in the
        restored interval that waits for it), KNOWN or COMMITTED (a copy sent again: the
        receiver drops it), REFUSED when stopping. Waits while the stream is full."""
        key = (block.client, block.seq)
        blocks = self._blocks
        with blocks.lock:
            blocks.connections[block.client] = _RemoteClient(tracker, block.client)
        while True:
            with blocks.lock:
                if self._stopping.is_set():
                    return REFUSED
                seen = blocks.seen(key)
                if seen is not None:
                    return COMMITTED if seen == "committed" else KNOWN
            blocks.wait_for_room(key)
            with blocks.lock:
                if self._stopping.is_set():
                    return REFUSED
                if blocks.seen(key) is not None:
                    continue  # another receiver registered it meanwhile
                blocks.add_stored(
                    stream_block(
                        self._graph.sc,
                        self._id,
                        block.client,
                        block.seq,
                        block.count,
                        block.unique,
                        block.executors,
                        self._as_text,
                    )
                )
                return NEW

    def _remote_error(self, kind: int, peer: str, message: str) -> None:
        if kind == 0:
            self._refused(peer, message, None)
            return
        if not self._stopping.is_set():
            log.warning("%s: %s", self.label, message)
            self._report_error(message)

    def _remote_started(self, index: int, executor: str, address: tuple[str, int]) -> None:
        host, port = address
        log.info("%s: receiver %d on %s:%d (executor %s)", self.label, index, host, port, executor)
        with self._blocks.lock:
            self._bound[index] = address
            self._blocks.lock.notify_all()

    def receivers(self) -> dict[int, tuple[str, tuple[str, int]]]:
        """index -> (executor id, address) of each receiver on an executor now listening."""
        return {} if self._remote is None else self._remote.receivers()

    def set_rate_limit(self, rate: float | None) -> None:
        with self._blocks.lock:
            super().set_rate_limit(rate)
        self._blocks.room_changed()  # a higher limit: room again

    def _store(self, blocks: list[tuple[str, int, list[Any]]]) -> list[StoredBlock]:
        """Store blocks on ``replicas`` executors each, trying again while executors come and
        go (a lost peer is replaced); NotReplicatedError after the last attempt."""
        sc = self._graph.sc
        client, first = blocks[0][:2]
        sc.setJobDescription(
            f"{self.label}: store {len(blocks)} block(s) from {first} of client {client}"
        )
        for attempt in range(1, _STORE_ATTEMPTS + 1):
            try:
                return store_blocks(sc, blocks, self._replicas)
            except NotReplicatedError as exc:
                if attempt == _STORE_ATTEMPTS or self._stopping.is_set():
                    raise
                log.warning("%s: %s; storing it again (attempt %d)", self.label, exc, attempt + 1)
                self._stopping.wait(min(0.5 * 2**attempt, 8.0))
        raise AssertionError("unreachable")

    # ---- every interval ----
    def _can_compute(self, time: Time) -> bool:
        # What _read accepts: a past interval only while its blocks are kept (or, after a
        # restart, on record), so a state's rebuild that would need more steps instead.
        if not super()._can_compute(time):
            return False
        return time in self._generated or self._blocks.can_take(time)

    def _read(self, time: Time) -> RDD[Any]:
        blocks = self._blocks.take(time, self._recovery_wait_s)
        self.set_record_count(time, sum(b.count for b in blocks))
        return interval_rdd(self._graph.sc, blocks)

    def input_metadata(self, time: Time) -> dict[str, Any]:
        blocks = self._blocks.blocks_of(time)
        return {
            "blocks": [
                {"client": b.client, "seq": b.seq, "records": b.count, "executors": b.executors}
                for b in blocks
            ],
            "Description": f"{len(blocks)} received blocks",
        }

    def _on_batch_completed(self, time: Time) -> None:
        super()._on_batch_completed(time)
        # The engine journals this completion right after this call: the clients hear of
        # what was committed before it now, and of what is committed here at the next
        # completion.
        self._blocks.release_commits()
        # Older intervals are never read again by a driver restarted from this completion's
        # record (dstream.receiver.horizon), so their blocks are committed (the clients
        # forget them). Without windows or state that is this interval.
        keep = self._remember_duration or self.slide_duration
        hold = states_hold(self._states_downstream(), keep)
        through, held_by = commit_horizon(time, self.slide_duration, keep, hold)
        if held_by is not None and held_by != self._held_by:
            log.warning(
                "%s: blocks after %s are not committed yet: the last checkpoint of %s is too "
                "far behind interval %s, and a restart would rebuild it from there; its "
                "clients keep those blocks until a newer checkpoint is written",
                self.label,
                through,
                held_by,
                time,
            )
        self._held_by = held_by
        drop_blocks(self._graph.sc, self._blocks.commit_through(through))

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        keep = self._remember_duration or self.slide_duration
        hold = states_hold(self._states_downstream(), keep)
        forget = time - keep if hold is None else min(time - keep, hold[0])
        drop_blocks(self._graph.sc, self._blocks.forget_through(forget))

    # ---- the metadata journal ----
    def journal_state(self) -> dict[str, Any] | None:
        return self._blocks.journal_state()

    def restore_state(self, state: dict[str, Any]) -> None:
        self._blocks.restore(state)

    # ---- for listeners and tests ----
    def _info(
        self, active: bool, message: str = "", error: BaseException | None = None
    ) -> ReceiverInfo:
        conf = live_conf(self._graph.sc)
        return ReceiverInfo(
            stream_id=self._id,
            receiver_name=f"BlockReceiver-{self._id}",
            is_active=active,
            host=conf.get("spark.driver.host") or socket.gethostname(),
            last_error_message=message,
            last_error="" if error is None else "".join(traceback.format_exception(error)),
            last_error_time_ms=self._graph.clock.now().ms if message else -1,
        )

    def description(self) -> str:
        return f"{self._operator}[{', '.join(f'{h}:{p}' for h, p in self._bound or self._wanted)}]"

    def _wait_for_pending(self, blocks: int, timeout_s: float) -> bool:
        """Block until ``blocks`` blocks wait for the next interval (for tests and demos)."""
        return self._blocks.wait_for_pending(blocks, timeout_s)

    def _wait_for_receivers(self, count: int, timeout_s: float) -> bool:
        """Block until ``count`` receivers on executors listen (for tests and demos)."""
        with self._blocks.lock:
            return self._blocks.lock.wait_for(lambda: len(self.receivers()) >= count, timeout_s)

    def _kill_listener(self, index: int) -> None:
        """Close listening address ``index`` and its connections, as if that receiver died
        (for tests: its clients fail over to the next address)."""
        assert self._driver is not None, "receivers on executors have no listener here"
        self._driver.kill_listener(index)

    def _pending_blocks(self) -> list[StoredBlock]:
        return self._blocks.pending_blocks()
