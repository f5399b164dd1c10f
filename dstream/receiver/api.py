"""``createStream`` and ``receiverAddresses``: the receiver stream's public entry points
(re-exported by :mod:`dstream.receiver`, which loads them on first use so that the client
library imports without PySpark)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dstream.dstream import handle_for, node_of
from dstream.receiver.source import ReceiverInputDStream
from dstream.streams.graph import graph_of

if TYPE_CHECKING:
    from dstream.context import StreamingContext
    from dstream.dstream import DStream

__all__ = ["createStream", "receiverAddresses"]


def _is_local(master: str) -> bool:
    """One block manager only (``local``, ``local[n]``): no second executor to copy to."""
    return master == "local" or master.startswith("local[")


def createStream(
    ssc: StreamingContext,
    secret: bytes | str,
    port: int | Sequence[int] = 0,
    *,
    host: str = "127.0.0.1",
    replicas: int | None = None,
    asText: bool = True,
    recoveryWait: float = 60.0,
    placement: str = "driver",
) -> DStream[Any]:
    """A stream of the records that :class:`~dstream.receiver.client.ReceiverClient`\\ s send.

    - ``secret``: the shared secret clients must prove they know (HMAC-SHA256
      challenge-response; the secret never crosses the network). At least 16 bytes.
    - ``port``: where to listen, or several ports (several receivers of one stream: a client
      given all of them fails over from one to the next and the stream drops the blocks it
      gets twice); 0 picks a free port (see :func:`receiverAddresses`).
    - ``host``: the interface to listen on; loopback unless told otherwise (the protocol
      authenticates but does not encrypt).
    - ``replicas``: executors each block is stored on before it is acknowledged; 2 by
      default, 1 under a ``local``/``local[n]`` master (a single block manager).
    - ``asText``: records as str (UTF-8, malformed bytes as U+FFFD) or, False, as bytes.
    - ``recoveryWait``: seconds a driver restarted from a checkpoint waits for the clients to
      send again the blocks of each interval it recomputes (they died with the previous
      driver), so that the interval reads exactly the records it read before.
    - ``placement``: where the receivers run. ``"driver"`` (the default): in the driver
      process, which stores each block through a Spark job. ``"executors"``: each port is a
      receiver task on an executor (a core held for the stream's life, as Spark's
      receivers), which stores each block in its executor's block manager and on another
      executor itself, and is started again on another executor, on the same port, when its
      executor dies. Needs the JVM shim (``make shim``) and fixed ports.

    Each interval's RDD has one partition per block received during the interval.
    """
    if isinstance(secret, str):
        secret = secret.encode()
    if not isinstance(secret, bytes) or len(secret) < 16:
        raise ValueError(
            "receiver createStream() secret must be bytes or str of at least 16 bytes (got "
            f"{len(secret) if isinstance(secret, bytes | str) else type(secret).__name__}); "
            "use e.g. secrets.token_hex(16) and give the same secret to the clients"
        )
    ports = [port] if isinstance(port, int) else list(port)
    if not ports or any(
        isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < 65536 for p in ports
    ):
        raise ValueError(
            f"receiver createStream() port {port!r} must be an int in 0..65535 (0: any free "
            "port) or a non-empty list of them"
        )
    if not isinstance(host, str) or not host:
        raise ValueError(f"receiver createStream() host {host!r} must be a non-empty str")
    local = _is_local(ssc.sparkContext.master or "")
    if replicas is None:
        replicas = 1 if local else 2
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= 3:
        raise ValueError(f"receiver createStream() replicas={replicas!r} must be 1, 2 or 3")
    if local and replicas > 1:
        raise ValueError(
            f"receiver createStream() replicas={replicas}: the master "
            f"{ssc.sparkContext.master!r} has a single block manager, so blocks cannot be "
            "stored twice; use replicas=1 there, or a cluster (local-cluster[...] for tests)"
        )
    if isinstance(recoveryWait, bool) or not isinstance(recoveryWait, int | float):
        raise ValueError(f"receiver createStream() recoveryWait={recoveryWait!r} must be seconds")
    if not 0 <= recoveryWait <= 3600:
        raise ValueError(
            f"receiver createStream() recoveryWait={recoveryWait} must be in 0..3600 seconds"
        )
    if placement not in ("driver", "executors"):
        raise ValueError(
            f"receiver createStream() placement={placement!r} must be 'driver' (receivers in "
            "the driver process) or 'executors' (receiver tasks on executors)"
        )
    if placement == "executors" and 0 in ports:
        raise ValueError(
            f"receiver createStream() port {port!r} with placement='executors' must be fixed "
            "(not 0): a receiver started again on another executor listens on the same port, "
            "where its clients connect again"
        )
    graph = graph_of(ssc)
    graph.check_can_add("receiverStream")
    return handle_for(
        ReceiverInputDStream(
            graph,
            secret,
            [(host, p) for p in ports],
            replicas=replicas,
            as_text=asText,
            recovery_wait_s=float(recoveryWait),
            placement=placement,
        )
    )


def receiverAddresses(stream: DStream[Any]) -> list[tuple[str, int]]:
    """The ``(host, port)`` addresses a started receiver stream listens on (with the ports
    that port=0 picked; for receivers on executors, the address each one reported, or the
    one asked for until it has)."""
    node = node_of(stream)
    if not isinstance(node, ReceiverInputDStream):
        raise TypeError(
            f"receiverAddresses() takes a stream made by dstream.receiver.createStream, not "
            f"{type(stream).__name__}"
        )
    if not node._bound:
        raise RuntimeError("receiverAddresses(): the stream listens once ssc.start() has run")
    return list(node._bound)
