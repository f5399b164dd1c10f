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

With ``placement="driver"`` the receiver runs on the driver (one listening thread per
address, one thread per connection); the blocks live on executors. With
``placement="executors"`` each address is a receiver task on an executor
(:mod:`dstream.receiver.tracker`), which stores the blocks and registers them here
(``_register_remote``) before it acknowledges them. What survives what is in
docs/receiver.md.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

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
from dstream.receiver.ledger import CommittedBlocks
from dstream.receiver.protocol import (
    ACK_COMMITTED,
    ACK_STORED,
    HandshakeRefusedError,
    ProtocolError,
    accept_handshake,
    read_block,
    send_ack,
)
from dstream.receiver.tracker import (
    COMMITTED,
    KNOWN,
    NEW,
    REFUSED,
    ExecutorReceivers,
    RemoteBlock,
)
from dstream.sources.base import InputDStream
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.graph import DStreamGraph

__all__ = ["ReceiverInputDStream"]

log = logging.getLogger(__name__)

_HANDSHAKE_TIMEOUT_S = 10.0
_STORE_ATTEMPTS = 6
# Blocks of one connection stored in one job at most: those already received when the
# previous store finished (a client keeps sending while its blocks are stored).
_BATCH_BLOCKS = 64
Key = tuple[str, int]


def _readable(sock: socket.socket) -> bool:
    """Whether more of the client's data has already arrived (without waiting)."""
    ready, _, _ = select.select([sock], [], [], 0)
    return bool(ready)


class _Connection:
    """One authenticated client connection; acknowledgements are sent under its lock."""

    def __init__(self, sock: socket.socket, client: str, listener: int) -> None:
        self.sock, self.client, self.listener = sock, client, listener
        self.lock = threading.Lock()

    def ack(self, kind: bytes, seq: int) -> None:
        with self.lock, contextlib.suppress(OSError):
            send_ack(self.sock, kind, seq)


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
    # were committed: see _take_recovered). _read refuses any other.
    _durable = True

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
        "_state_lock",
        "_store_lock",
        "_stopping",
        "_servers",
        "_threads",
        "_connections",
        "_live",
        "_pending",
        "_intervals",
        "_known",
        "_committed",
        "_to_commit",
        "_lost",
        "_awaited",
        "_recovered",
        "_restored_until",
        "_last_read",
        "_bound",
        "_refusals",
        "_remote",
        "_held_by",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        # Guards the state below; waited on by tests for pending blocks.
        self._state_lock = threading.Condition()
        self._store_lock = threading.Lock()  # one batch of blocks stored at a time
        self._stopping = threading.Event()
        self._servers: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        # client -> its latest connection (to the driver's receiver, or to one on an executor)
        self._connections: dict[str, _Connection | _RemoteClient] = {}
        self._live: set[socket.socket] = set()  # every open connection (closed at stop)
        self._pending: list[StoredBlock] = []  # stored, not yet in an interval
        self._intervals: dict[Time, list[StoredBlock]] = {}
        self._known: dict[Key, Time | None] = {}  # stored blocks -> their interval (None: pending)
        self._committed = CommittedBlocks()
        self._to_commit: list[Key] = []  # committed, "C" not yet sent
        # Restored from the journal: the blocks of each interval, which died with the
        # previous driver; the clients send them again (see _read).
        self._lost: dict[Time, list[Key]] = {}
        self._awaited: dict[Key, Time] = {}  # block -> the restored interval it belongs to
        self._recovered: dict[Time, dict[Key, StoredBlock]] = {}
        self._restored_until: Time | None = None
        self._last_read: Time | None = None  # the latest interval that took pending blocks
        self._bound: list[tuple[str, int]] = []
        # Refused handshakes, as (peer address, reason), for monitoring and tests.
        self._refusals: list[tuple[str, str]] = []
        self._remote: ExecutorReceivers | None = None  # placement="executors"
        self._held_by: str | None = None  # the state whose checkpoint holds commits back

    # ---- lifecycle ----
    def _start(self) -> None:
        self._stopping.clear()
        if self._placement == "executors":
            self._start_on_executors()
            return
        for index, (host, port) in enumerate(self._wanted):
            try:
                server = socket.create_server((host, port))
            except OSError as exc:
                self._stop()  # the addresses bound so far
                raise OSError(
                    exc.errno,
                    f"{self._label} cannot listen on {host}:{port} ({exc.strerror}); another "
                    "program (or stream) holds that port: pick another one, or port=0 for any "
                    "free one",
                ) from exc
            server.settimeout(0.5)
            self._servers.append(server)
            self._bound.append(server.getsockname()[:2])
            self._spawn(self._accept_forever, server, index)
        info = self._info(True)
        self._graph.bus.post("onReceiverStarted", StreamingListenerReceiverStarted(info))
        log.info("%s listening on %s", self._label, self._bound)

    def _start_on_executors(self) -> None:
        self._bound = list(self._wanted)  # until each receiver says where it listens
        self._remote = ExecutorReceivers(
            self._graph.sc,
            stream_id=self._id,
            label=self._label,
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
        log.info("%s: receivers starting on executors at %s", self._label, self._wanted)

    def _stop(self) -> None:
        self._release_commits()  # the intervals completed before stop() are on record
        self._stopping.set()
        with self._state_lock:
            self._state_lock.notify_all()  # receivers waiting for room give up
        if self._remote is not None:  # (its registrations waiting for room have returned)
            self._remote.stop()
        for server in self._servers:
            with contextlib.suppress(OSError):
                server.close()
        with self._state_lock:
            live = list(self._live)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with self._state_lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=_HANDSHAKE_TIMEOUT_S + 5)
        with self._state_lock:
            blocks = self._pending + [b for bs in self._intervals.values() for b in bs]
            self._pending, self._intervals, self._known = [], {}, {}
        drop_blocks(self._graph.sc, blocks)
        info = replace(self._info(False), last_error_message="Stopped by driver")
        self._graph.bus.post("onReceiverStopped", StreamingListenerReceiverStopped(info))

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(
            target=target, args=args, name=f"dstream-receiver-{self._id}", daemon=True
        )
        with self._state_lock:  # accept threads of several addresses spawn at once
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    # ---- the listening and connection threads ----
    def _accept_forever(self, server: socket.socket, index: int) -> None:
        while not self._stopping.is_set():
            try:
                sock, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by _stop
            self._spawn(self._serve, sock, f"{peer[0]}:{peer[1]}", index)

    def _serve(self, sock: socket.socket, peer: str, listener: int) -> None:
        with self._state_lock:
            self._live.add(sock)
        try:
            self._serve_connection(sock, peer, listener)
        finally:
            with self._state_lock:
                self._live.discard(sock)

    def _serve_connection(self, sock: socket.socket, peer: str, listener: int) -> None:
        with sock:
            try:
                sock.settimeout(_HANDSHAKE_TIMEOUT_S)
                client = accept_handshake(
                    sock, self._secret, lambda why: self._refused(peer, why, None)
                ).hex()
                sock.settimeout(None)
            except HandshakeRefusedError:
                return  # recorded and reported by _refused before the client was told
            except (OSError, ProtocolError) as exc:
                self._refused(peer, f"handshake failed: {exc}", exc)
                return
            conn = _Connection(sock, client, listener)
            with self._state_lock:
                self._connections[client] = conn
            try:
                while not self._stopping.is_set():
                    block = read_block(sock)
                    if block is None:
                        return
                    # The blocks that already arrived go with it, as far as there is room.
                    room = self._wait_for_room((client, block[0]))
                    batch, records = [block], len(block[1])
                    while len(batch) < _BATCH_BLOCKS and records < room and _readable(sock):
                        block = read_block(sock)
                        if block is None:
                            break
                        batch.append(block)
                        records += len(block[1])
                    self._take_blocks(conn, batch)
                    if block is None:
                        return
            except Exception as exc:  # the connection fails; the client sends again
                if not self._stopping.is_set():
                    message = f"connection from client {client} at {peer} failed: {exc}"
                    log.warning("%s: %s", self._label, message)
                    info = self._info(True, message, exc)
                    self._graph.bus.post("onReceiverError", StreamingListenerReceiverError(info))
            finally:
                with self._state_lock:
                    if self._connections.get(client) is conn:
                        del self._connections[client]

    def _refused(self, peer: str, reason: str, exc: BaseException | None) -> None:
        log.warning("%s refused a client at %s: %s", self._label, peer, reason)
        self._refusals.append((peer, reason))
        info = self._info(True, f"refused a client at {peer}: {reason}", exc)
        self._graph.bus.post("onReceiverError", StreamingListenerReceiverError(info))

    def _take_blocks(self, conn: _Connection, blocks: list[tuple[int, list[bytes]]]) -> None:
        """Store a connection's blocks (in arrival order) that are not stored yet, in one
        job, then acknowledge each; blocks sent again after a failure are acknowledged
        without storing them twice."""
        stored: list[StoredBlock] = []
        with self._store_lock:
            new: list[tuple[str, int, list[Any]]] = []
            again: list[tuple[int, bool]] = []
            with self._state_lock:
                for seq, raw in blocks:
                    key = (conn.client, seq)
                    if key in self._committed or key in self._known:
                        again.append((seq, key in self._committed))
                    else:  # (a client sends a block once per connection)
                        records: list[Any] = (
                            [r.decode("utf-8", "replace") for r in raw] if self._as_text else raw
                        )
                        new.append((conn.client, seq, records))
            for seq, committed in again:  # sent again after a failure: drop the copy
                conn.ack(ACK_STORED, seq)
                if committed:
                    conn.ack(ACK_COMMITTED, seq)
            if new:
                stored = self._store(new)
                with self._state_lock:
                    for block in stored:
                        owner = self._awaited.pop(block.key, None)
                        if owner is None:
                            self._pending.append(block)
                        else:  # a block of an interval a restarted driver recomputes: back in it
                            self._recovered.setdefault(owner, {})[block.key] = block
                        self._known[block.key] = owner
                    self._state_lock.notify_all()
        for block in stored:
            conn.ack(ACK_STORED, block.seq)

    # ---- receivers on executors (dstream.receiver.tracker) ----
    def _register_remote(self, block: RemoteBlock, tracker: Any) -> int:
        """A block a receiver on an executor stored: NEW (now pending, or back in the
        restored interval that waits for it), KNOWN or COMMITTED (a copy sent again: the
        receiver drops it), REFUSED when stopping. Waits while the stream is full."""
        key = (block.client, block.seq)
        with self._state_lock:
            self._connections[block.client] = _RemoteClient(tracker, block.client)
        while True:
            with self._state_lock:
                if self._stopping.is_set():
                    return REFUSED
                if key in self._committed:
                    return COMMITTED
                if key in self._known:
                    return KNOWN
            self._wait_for_room(key)
            with self._state_lock:
                if self._stopping.is_set():
                    return REFUSED
                if key in self._committed or key in self._known:
                    continue  # another receiver registered it meanwhile
                stored = stream_block(
                    self._graph.sc,
                    self._id,
                    block.client,
                    block.seq,
                    block.count,
                    block.unique,
                    block.executors,
                    self._as_text,
                )
                owner = self._awaited.pop(key, None)
                if owner is None:
                    self._pending.append(stored)
                else:
                    self._recovered.setdefault(owner, {})[key] = stored
                self._known[key] = owner
                self._state_lock.notify_all()
                return NEW

    def _remote_error(self, kind: int, peer: str, message: str) -> None:
        if kind == 0:
            self._refused(peer, message, None)
            return
        if not self._stopping.is_set():
            log.warning("%s: %s", self._label, message)
            info = self._info(True, message)
            self._graph.bus.post("onReceiverError", StreamingListenerReceiverError(info))

    def _remote_started(self, index: int, executor: str, address: tuple[str, int]) -> None:
        host, port = address
        log.info("%s: receiver %d on %s:%d (executor %s)", self._label, index, host, port, executor)
        with self._state_lock:
            self._bound[index] = address
            self._state_lock.notify_all()

    def _receivers(self) -> dict[int, tuple[str, tuple[str, int]]]:
        """index -> (executor id, address) of each receiver on an executor now listening."""
        return {} if self._remote is None else self._remote.receivers()

    def _wait_for_room(self, key: Key) -> float:
        """Backpressure: while ``receiver_max_buffered`` records (or, under
        ``StreamingSettings(backpressure=True)``, the rate estimator's allowance for one
        interval) wait for the next interval, take no new block (this connection is not
        read, TCP slows the client down). A block a recomputed interval waits for is
        always taken. Returns how many records may still wait (infinite for such a block)."""

        def waiting() -> int:
            return sum(b.count for b in self._pending)

        with self._state_lock:
            if key in self._awaited:
                return float("inf")
            self._state_lock.wait_for(
                lambda: waiting() < self._held_limit() or self._stopping.is_set()
            )
            return self._held_limit() - waiting()

    def _set_rate_limit(self, rate: float | None) -> None:
        with self._state_lock:
            super()._set_rate_limit(rate)
            self._state_lock.notify_all()  # a higher limit: room again

    def _store(self, blocks: list[tuple[str, int, list[Any]]]) -> list[StoredBlock]:
        """Store blocks on ``replicas`` executors each, trying again while executors come and
        go (a lost peer is replaced); NotReplicatedError after the last attempt."""
        sc = self._graph.sc
        client, first = blocks[0][:2]
        sc.setJobDescription(
            f"{self._label}: store {len(blocks)} block(s) from {first} of client {client}"
        )
        for attempt in range(1, _STORE_ATTEMPTS + 1):
            try:
                return store_blocks(sc, blocks, self._replicas)
            except NotReplicatedError as exc:
                if attempt == _STORE_ATTEMPTS or self._stopping.is_set():
                    raise
                log.warning("%s: %s; storing it again (attempt %d)", self._label, exc, attempt + 1)
                self._stopping.wait(min(0.5 * 2**attempt, 8.0))
        raise AssertionError("unreachable")

    # ---- every interval ----
    def _can_compute(self, time: Time) -> bool:
        # What _read accepts: a past interval only while its blocks are kept (or, after a
        # restart, on record), so a state's rebuild that would need more steps instead.
        if not super()._can_compute(time):
            return False
        with self._state_lock:
            return (
                time in self._generated
                or time in self._intervals
                or (self._restored_until is not None and time <= self._restored_until)
                or self._last_read is None
                or time > self._last_read
            )

    def _read(self, time: Time) -> RDD[Any]:
        with self._state_lock:
            if time in self._intervals:  # asked again while its blocks are stored
                blocks = self._intervals[time]
            elif self._restored_until is not None and time <= self._restored_until:
                blocks = self._take_recovered(time)
            elif self._last_read is not None and time <= self._last_read:
                raise RuntimeError(
                    f"{self._label} was asked again for interval {time}, whose blocks it no "
                    "longer keeps; make the windows or remember() durations cover what the "
                    "program reads"
                )
            else:
                self._last_read = time
                blocks, self._pending = self._pending, []
                self._state_lock.notify_all()  # room again for the receivers
            self._intervals[time] = blocks
            for block in blocks:
                self._known[block.key] = time
        self._record_count(time, sum(b.count for b in blocks))
        return interval_rdd(self._graph.sc, blocks)

    def _take_recovered(self, time: Time) -> list[StoredBlock]:
        """The blocks of an interval the previous driver generated: its journaled blocks,
        sent again by their clients (they were never committed), waited for at most
        ``recovery_wait_s``. Called with the state lock held."""
        journaled = self._lost.get(time, [])
        # Blocks of an interval that completed before the crash were committed: their clients
        # forgot them (a window or state recomputing that interval misses them).
        keys = [k for k in journaled if k not in self._committed]
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
        self._state_lock.wait_for(
            lambda: len(self._recovered.get(time, {})) >= len(keys) or self._stopping.is_set(),
            self._recovery_wait_s,
        )
        got = self._recovered.pop(time, {})
        self._lost.pop(time, None)
        missing = [k for k in keys if k not in got]
        for key in missing:
            self._awaited.pop(key, None)  # if it comes later, it goes into a later interval
        if missing:
            log.warning(
                "%s: %d of the %d blocks of interval %s were not sent again within %g s (their "
                "clients: %s); the interval is recomputed without them, and they go into a "
                "later interval if they come",
                self._label,
                len(missing),
                len(keys),
                time,
                self._recovery_wait_s,
                ", ".join(sorted({c for c, _ in missing})),
            )
        return [got[k] for k in keys if k in got]

    def _input_metadata(self, time: Time) -> dict[str, Any]:
        with self._state_lock:
            blocks = list(self._intervals.get(time, ()))
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
        self._release_commits()
        # A driver restarted from the record of this completion recomputes the intervals
        # after it, and, for the windows and states downstream, those they read: at most
        # `remember` (the widest window, or a state's reach back to its checkpoint) before
        # the next one. Older intervals are never read again, so their blocks are committed
        # (the clients forget them). Without windows or state that is this interval.
        keep = self._remember_duration or self._slide_duration
        through = self._commit_horizon(time, keep)
        dropped: list[StoredBlock] = []
        with self._state_lock:
            keys = [b.key for t, bs in self._intervals.items() if t <= through for b in bs]
            # Restored intervals that no recomputation read: committed, not kept waiting.
            for t in [t for t in self._lost if t <= through]:
                keys += self._lost.pop(t)
                dropped += self._recovered.pop(t, {}).values()
            for block in dropped:
                self._known.pop(block.key, None)
            for key in keys:
                self._awaited.pop(key, None)
                if key not in self._committed:
                    self._committed.add(*key)
                    self._to_commit.append(key)
        drop_blocks(self._graph.sc, dropped)

    def _states_hold(self, keep: Duration) -> tuple[Time, str] | None:
        """The latest interval whose blocks the states downstream may still need, and the
        state that needs it (None if none holds more than ``keep`` does).

        ``keep`` (this stream's remember duration) allows each state a checkpoint up to its
        replay span (three of its checkpoint intervals) old: a state rebuilt after a
        restart, or after its next checkpoint, folds in this stream's intervals after its
        last published checkpoint, less the windows between them, which ``keep`` covers
        beyond that span. A checkpoint that falls further behind (slow or failing writes)
        holds this stream's blocks back with it: stored, and kept by their clients (which
        wait at their ``max_kept_blocks``), instead of lost to the rebuild."""
        hold: tuple[Time, str] | None = None
        for state in self._states_downstream():
            floor = state._replay_floor()
            if floor is not None and (hold is None or floor + state._replay_span() < hold[0]):
                hold = (floor + state._replay_span(), state._label)
        return None if hold is None else (hold[0] - keep, hold[1])

    def _commit_horizon(self, time: Time, keep: Duration) -> Time:
        """Blocks of intervals at or before the returned time are read by no recomputation
        a driver restarted from the record of ``time``'s completion makes (they can be
        committed)."""
        usual = time + self._slide_duration - keep
        hold = self._states_hold(keep)
        if hold is None or hold[0] >= usual:
            self._held_by = None
            return usual
        through, held_by = hold
        if held_by != self._held_by:
            log.warning(
                "%s: blocks after %s are not committed yet: the last checkpoint of %s is too "
                "far behind interval %s, and a restart would rebuild it from there; its "
                "clients keep those blocks until a newer checkpoint is written",
                self._label,
                through,
                held_by,
                time,
            )
        self._held_by = held_by
        return through

    def _release_commits(self) -> None:
        with self._state_lock:
            keys, self._to_commit = self._to_commit, []
            connections = dict(self._connections)
        for client, seq in keys:
            conn = connections.get(client)
            if conn is not None:
                conn.ack(ACK_COMMITTED, seq)

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        keep = self._remember_duration or self._slide_duration
        hold = self._states_hold(keep)
        forget = time - keep if hold is None else min(time - keep, hold[0])
        dropped: list[StoredBlock] = []
        with self._state_lock:
            for t in [t for t in self._intervals if t <= forget]:
                for block in self._intervals.pop(t):
                    self._known.pop(block.key, None)
                    dropped.append(block)
        drop_blocks(self._graph.sc, dropped)

    # ---- the metadata journal ----
    def _journal_state(self) -> dict[str, Any] | None:
        with self._state_lock:
            intervals = {t.ms: [[b.client, b.seq] for b in bs] for t, bs in self._intervals.items()}
            # Restored intervals not recomputed yet stay on record for a next restart.
            for t, keys in self._lost.items():
                intervals.setdefault(t.ms, [[c, seq] for c, seq in keys])
            return {
                "intervals": intervals,
                "committed": self._committed.to_json(),
            }

    def _restore_state(self, state: dict[str, Any]) -> None:
        with self._state_lock:
            self._committed = CommittedBlocks.from_json(state["committed"])
            self._lost = {
                Time(int(ms)): [(c, int(s)) for c, s in keys]
                for ms, keys in state["intervals"].items()
            }
            self._awaited = {
                key: t
                for t, keys in self._lost.items()
                for key in keys
                if key not in self._committed  # completed: their clients forgot them
            }
            self._recovered = {}
            self._restored_until = max(self._lost, default=None)

    # ---- for listeners and tests ----
    def _info(
        self, active: bool, message: str = "", error: BaseException | None = None
    ) -> ReceiverInfo:
        conf = self._graph.sc.getConf()
        return ReceiverInfo(
            stream_id=self._id,
            receiver_name=f"BlockReceiver-{self._id}",
            is_active=active,
            host=conf.get("spark.driver.host") or socket.gethostname(),
            last_error_message=message,
            last_error="" if error is None else "".join(traceback.format_exception(error)),
            last_error_time_ms=self._graph.clock.now().ms if message else -1,
        )

    def _description(self) -> str:
        return f"{self._operator}[{', '.join(f'{h}:{p}' for h, p in self._bound or self._wanted)}]"

    def _wait_for_pending(self, blocks: int, timeout_s: float) -> bool:
        """Block until ``blocks`` blocks wait for the next interval (for tests and demos)."""
        with self._state_lock:
            return self._state_lock.wait_for(lambda: len(self._pending) >= blocks, timeout_s)

    def _wait_for_receivers(self, count: int, timeout_s: float) -> bool:
        """Block until ``count`` receivers on executors listen (for tests and demos)."""
        with self._state_lock:
            return self._state_lock.wait_for(lambda: len(self._receivers()) >= count, timeout_s)

    def _kill_listener(self, index: int) -> None:
        """Close listening address ``index`` and its connections, as if that receiver died
        (for tests: its clients fail over to the next address)."""
        with contextlib.suppress(OSError):
            self._servers[index].close()
        with self._state_lock:
            doomed = [
                c
                for c in self._connections.values()
                if isinstance(c, _Connection) and c.listener == index
            ]
        for conn in doomed:  # (a client's older connections through it have failed already)
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)

    def _pending_blocks(self) -> list[StoredBlock]:
        with self._state_lock:
            return list(self._pending)
