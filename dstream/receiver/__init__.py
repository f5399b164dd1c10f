"""The paper's network receiver: records from clients that cannot write to Kafka, stored on
two executors before they are acknowledged (Sec. 4.1, 4.3).

::

    from dstream.receiver import createStream, receiverAddresses

    lines = createStream(ssc, secret=b"s3cret", port=9999)    # 127.0.0.1:9999
    lines.flatMap(str.split).countByValue().pprint()
    ssc.start()

    # elsewhere, any Python process (dstream.receiver.client needs no Spark):
    from dstream.receiver.client import ReceiverClient
    with ReceiverClient([("127.0.0.1", 9999)], secret=b"s3cret") as client:
        client.send("a line")
        client.wait_committed(timeout=60)

The protocol is in :mod:`dstream.receiver.protocol`, the client in
:mod:`dstream.receiver.client`, the guarantees in docs/receiver.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dstream.receiver.api import createStream, receiverAddresses

__all__ = ["createStream", "receiverAddresses"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: ``import dstream.receiver.client`` must not import PySpark.
    if name not in __all__:
        raise AttributeError(f"module 'dstream.receiver' has no attribute {name!r}")
    value = getattr(import_module("dstream.receiver.api"), name)
    globals()[name] = value
    return value
