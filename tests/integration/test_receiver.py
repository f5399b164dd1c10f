"""The receiver stream on the suite's local[2] context: every record a client sends is in
exactly one interval, acknowledged blocks are committed once their interval completes, a
client with the wrong secret is refused and reported, and a client whose first address is
dead fails over to the next."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from dstream import StreamingListener
from dstream.errors import ContextStateError
from dstream.receiver import createStream, receiverAddresses
from dstream.receiver.client import ReceiverClient, ReceiverRefusedError
from testbed.drivers import wait_for

SECRET = b"0123456789abcdef-test-secret"


class Errors(StreamingListener):
    def __init__(self) -> None:
        self.messages: list[str] = []

    def onReceiverError(self, receiverError: Any) -> None:
        self.messages.append(receiverError.receiverInfo().lastErrorMessage())


def collect(stream: Any) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    stream.foreachRDD(lambda t, rdd: out.__setitem__(t.ms, rdd.collect()))
    return out


def test_records_in_equal_records_out(harness: Any) -> None:
    h = harness()
    stream = createStream(h.ssc, SECRET)
    out = collect(stream)
    h.ssc.start()
    sent: list[str] = []
    with ReceiverClient(receiverAddresses(stream), SECRET, block_records=7) as client:
        for interval in range(3):
            for i in range(20):
                record = f"r{interval}-{i}"
                client.send(record)
                sent.append(record)
            assert client.wait_stored(60)  # acknowledged = stored before the interval
            assert stream._node._wait_for_pending(1, 60)
            h.run_batches(1)
        # The last interval's commit goes out once a later interval completes.
        h.run_batches(2)
        assert client.wait_committed(60)
        assert client.sent_blocks == 9  # 3 x (7 + 7 + 6)
    received = [r for records in out.values() for r in records]
    assert Counter(received) == Counter(sent)
    assert sorted(out[1000]) == sorted(sent[:20])  # each interval: the blocks it received
    assert sorted(out[3000]) == sorted(sent[40:])


def test_a_client_with_the_wrong_secret_is_refused(harness: Any) -> None:
    h = harness()
    stream = createStream(h.ssc, SECRET)
    out = collect(stream)
    errors = Errors()
    h.ssc.addStreamingListener(errors)
    h.ssc.start()
    client = ReceiverClient(receiverAddresses(stream), b"not-the-secret-at-all")
    try:
        client.send("sneaky")
        with pytest.raises(ReceiverRefusedError, match="authentication failed"):
            client.wait_committed(60)
    finally:
        client.close()
    assert len(stream._node._refusals) == 1
    assert "wrong HMAC" in stream._node._refusals[0][1]
    h.run_batches(1)  # the listener bus delivers the report
    assert any("refused a client" in m for m in errors.messages), errors.messages
    assert stream._node._pending_blocks() == []
    assert out == {1000: []}  # nothing of the refused client's got in


def test_a_client_fails_over_to_the_next_address(harness: Any) -> None:
    import socket

    h = harness()
    stream = createStream(h.ssc, SECRET)
    out = collect(stream)
    h.ssc.start()
    with socket.create_server(("127.0.0.1", 0)) as dead:  # bound, then closed: refuses
        dead_address = dead.getsockname()[:2]
    with ReceiverClient([dead_address, *receiverAddresses(stream)], SECRET) as client:
        for i in range(10):
            client.send(f"x{i}")
        assert client.wait_stored(60)
        h.run_batches(3)
        assert client.wait_committed(60)
    assert sorted(r for rs in out.values() for r in rs) == sorted(f"x{i}" for i in range(10))


def test_a_receiver_dies_and_the_client_resends_to_the_other_once_only(harness: Any) -> None:
    h = harness()
    stream = createStream(h.ssc, SECRET, [0, 0])  # two receivers of one stream
    out = collect(stream)
    h.ssc.start()
    first, second = receiverAddresses(stream)
    sent = [f"y{i}" for i in range(40)]
    with ReceiverClient([first, second], SECRET, block_records=5) as client:
        for record in sent[:30]:
            client.send(record)
        assert client.wait_stored(60)
        h.run_batches(1)  # interval 1 holds the 6 blocks; not committed to the client yet
        assert client.kept_blocks == 6
        stream._node._kill_listener(0)
        for record in sent[30:]:  # sent on to the second receiver, after the 6 kept ones
            client.send(record)
        assert client.wait_stored(60)
        assert client.connections == 2
        h.run_batches(3)
        assert client.wait_committed(60)
    # The 6 blocks the second receiver got again were dropped, not stored twice.
    assert sorted(out[1000]) == sorted(sent[:30])
    assert Counter(r for rs in out.values() for r in rs) == Counter(sent)


@pytest.mark.parametrize("placement", ["driver", "executors"])
def test_the_receiver_takes_no_block_while_an_interval_worth_waits(
    harness: Any, placement: str
) -> None:
    from dstream.receiver.source import ReceiverInputDStream
    from dstream.settings import StreamingSettings

    h = harness(settings=StreamingSettings(receiver_max_buffered=10))
    stream = createStream(h.ssc, SECRET, free_port(), placement=placement)
    assert isinstance(stream._node, ReceiverInputDStream)
    out = collect(stream)
    h.ssc.start()
    if placement == "executors":
        assert stream._node._wait_for_receivers(1, 60)
    sent = [f"z{i}" for i in range(20)]
    with ReceiverClient(receiverAddresses(stream), SECRET, block_records=5) as client:
        for record in sent:
            client.send(record)
        client.flush()
        assert stream._node._wait_for_pending(2, 60)
        # 10 records wait for the next interval: no third block is taken meanwhile.
        assert not client.wait_stored(1.0)
        first = sorted(b.seq for b in stream._node._pending_blocks())
        if placement == "driver":
            assert first == [0, 1]
        else:  # a connection's blocks are stored several at a time: any two come first
            assert len(first) == 2
        h.run_batches(1)  # takes them: room again
        assert client.wait_stored(60)
        h.run_batches(3)
        assert client.wait_committed(60)
    assert sorted(out[1000]) == sorted(r for seq in first for r in sent[5 * seq : 5 * seq + 5])
    assert Counter(r for rs in out.values() for r in rs) == Counter(sent)


def test_stopping_while_a_receiver_on_an_executor_waits_for_room(harness: Any) -> None:
    """A block registration waiting for room (backpressure) is refused at stop: the
    receiver task ends and no job is left."""
    from dstream.receiver.source import ReceiverInputDStream
    from dstream.settings import StreamingSettings

    h = harness(settings=StreamingSettings(receiver_max_buffered=5))
    stream = createStream(h.ssc, SECRET, free_port(), placement="executors")
    assert isinstance(stream._node, ReceiverInputDStream)
    collect(stream)
    h.ssc.start()
    assert stream._node._wait_for_receivers(1, 60)
    with ReceiverClient(receiverAddresses(stream), SECRET, block_records=5) as client:
        for i in range(15):
            client.send(f"w{i}")
        client.flush()
        assert stream._node._wait_for_pending(1, 60)
        assert not client.wait_stored(1.0)  # the others wait for room
        remote = stream._node._remote
        assert remote is not None
        sc = h.ssc.sparkContext
        h.ssc.stop(stopSparkContext=False)
        # Every receiver thread had ended when stop() checked (a registration left waiting
        # would have held its tracker thread past the join).
        assert remote.unfinished == []
        assert list(sc.statusTracker().getActiveJobsIds()) == []


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_user_errors_name_the_value_and_the_fix(harness: Any) -> None:
    import socket

    h = harness()
    threads_before = set(threading.enumerate())
    with socket.create_server(("127.0.0.1", 0)) as taken:
        stream = createStream(h.ssc, SECRET, taken.getsockname()[1])
        collect(stream)
        with pytest.raises(OSError, match="holds that port: pick another one, or port=0"):
            h.ssc.start()
    # The failed start stopped what it had started (listener bus, executor monitor, Streaming
    # tab): nothing of it keeps running, and the context is stopped.
    assert {t.name for t in set(threading.enumerate()) - threads_before} == set()
    with pytest.raises(ContextStateError, match="stopped StreamingContext"):
        h.ssc.start()
    h = harness()
    with pytest.raises(ValueError, match="at least 16 bytes"):
        createStream(h.ssc, b"short")
    with pytest.raises(ValueError, match="single block manager"):
        createStream(h.ssc, SECRET, replicas=2)
    with pytest.raises(ValueError, match="port 70000"):
        createStream(h.ssc, SECRET, 70000)
    with pytest.raises(ValueError, match="placement='executor' must be 'driver'"):
        createStream(h.ssc, SECRET, 9999, placement="executor")
    with pytest.raises(ValueError, match=r"port \[9999, 0\] with placement='executors' must be"):
        createStream(h.ssc, SECRET, [9999, 0], placement="executors")


def test_a_receiver_on_an_executor_stores_before_it_acknowledges(harness: Any) -> None:
    """placement="executors" on local[2]: the receiver is a task (its "executor" is the
    driver's), blocks are StreamBlockIds in the block manager, bytes stay bytes, and
    stopping the stream ends the receiver's job."""

    from dstream.receiver.blocks import _executors
    from dstream.receiver.source import ReceiverInputDStream

    h = harness()
    sc = h.ssc.sparkContext
    port = free_port()
    stream = createStream(h.ssc, SECRET, port, placement="executors", asText=False)
    assert isinstance(stream._node, ReceiverInputDStream)
    out = collect(stream)
    h.ssc.start()
    assert stream._node._wait_for_receivers(1, 60)
    assert receiverAddresses(stream) == [("127.0.0.1", port)]
    assert [executor for executor, _ in stream._node.receivers().values()] == ["driver"]
    sent = [f"r{i}".encode() for i in range(11)] + [b"\xff not UTF-8"]
    with ReceiverClient(receiverAddresses(stream), SECRET, block_records=5) as client:
        for record in sent:
            client.send(record)
        assert client.wait_stored(60)  # "A": stored and registered with the driver
        assert stream._node._wait_for_pending(3, 60)
        first = [b.spark_id for b in stream._node._pending_blocks()]
        assert {i[:2] for i in first} == {("input", stream._node.id)}
        assert all(_executors(sc, first))
        h.run_batches(2)  # the first interval's commit goes out when the second completes
        assert client.wait_committed(60)
    # The first interval is forgotten after the second: its blocks' copies are deleted.
    wait_for(
        lambda: not any(_executors(sc, first)), 60, "the first interval's blocks removed", 0.05
    )
    assert Counter(r for records in out.values() for r in records) == Counter(sent)
    h.ssc.stop(stopSparkContext=False)
    assert list(sc.statusTracker().getActiveJobsIds()) == []


def test_blocks_received_together_are_stored_in_one_job(harness: Any) -> None:
    from dstream.receiver.blocks import interval_rdd, store_blocks

    sc = harness().ssc.sparkContext
    tracker = sc.statusTracker()
    group = "receiver-batch-test"
    sc.setJobGroup(group, "store_blocks")
    try:
        blocks = store_blocks(
            sc, [("c1", 4, ["a", "b"]), ("c1", 5, ["c"]), ("c2", 0, ["d", "e", "f"])], 1
        )
    finally:
        sc.setJobGroup("", "")
    assert len(tracker.getJobIdsForGroup(group)) == 1  # one job, not one per block
    rdd_id = blocks[0].spark_id[1]
    assert [(b.key, b.count, b.spark_id) for b in blocks] == [
        (("c1", 4), 2, ("rdd", rdd_id, 0)),
        (("c1", 5), 1, ("rdd", rdd_id, 1)),
        (("c2", 0), 3, ("rdd", rdd_id, 2)),
    ]
    assert all(b.executors for b in blocks)  # the block manager master knows where each is
    # An interval's RDD: a partition per block, in the order given, read from storage.
    rdd = interval_rdd(sc, [blocks[2], blocks[0]])
    assert rdd.glom().collect() == [["d", "e", "f"], ["a", "b"]]
    # The batch's copies stay until its last block is dropped.
    blocks[0].drop()
    blocks[2].drop()
    assert sc._jsc.getPersistentRDDs().containsKey(rdd_id)
    assert interval_rdd(sc, [blocks[1]]).collect() == ["c"]
    blocks[1].drop()
    assert not sc._jsc.getPersistentRDDs().containsKey(rdd_id)
