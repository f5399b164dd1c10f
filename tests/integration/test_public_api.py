"""The objects a user holds show the user's API and nothing else: every public name of a
DStream (of every kind a program builds) and of a StreamingContext is PySpark's, or one of
dstream's documented extras. Engine hooks (compute, clear_metadata, ...) start with ``_``."""

from __future__ import annotations

import operator
import re
import socket
from pathlib import Path
from typing import Any

import pyspark.streaming

from dstream import ManualClock, StreamingContext

ROOT = Path(__file__).resolve().parents[2]
# The README and the pages it links (docs/).
README = "\n".join(
    p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
)


def public(obj: object) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


PYSPARK_DSTREAM = public(pyspark.streaming.DStream)
PYSPARK_CONTEXT = public(pyspark.streaming.StreamingContext)
# dstream's own additions, each documented in the README or a page of docs/.
DSTREAM_EXTRAS = {
    "approximateRecovery",
    "recoveryStrategy",
    "remember",
    "rescale",
    "save",
    "saveToTable",
    "setName",
    "track",
}
# live queries (dstream.api.queries)
DSTREAM_EXTRAS |= {"latest", "at", "snapshot", "lookup", "toDF", "createOrReplaceTempView"}
TRACK_EXTRAS = {"changes"}
CONTEXT_EXTRAS = {
    "fileStream",
    "rateStream",
    "textBatchStream",
    "executor_monitor",
    "wait_for_batch",
    "lastProgress",
    "recentProgress",
    "replay",
    "quarantined",
}


def test_every_extra_is_documented_in_the_readme_or_docs() -> None:
    for name in DSTREAM_EXTRAS | TRACK_EXTRAS | CONTEXT_EXTRAS:
        assert re.search(rf"`[^`]*\b{name}\b[^`]*`|\| .*\b{name}\b.* \|", README), name


def test_streams_and_the_context_show_only_the_documented_api(sc: Any, tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))  # the socket stream connects to it
    ssc = StreamingContext(sc, 1, clock=ManualClock(0))
    queue = ssc.queueStream([[1, 2]])
    pairs = queue.map(lambda x: (x, 1))
    track = pairs.track(lambda k, e: e, lambda k, s, e: s, 2)
    streams: dict[str, Any] = {
        "queueStream": queue,
        "textFileStream": ssc.textFileStream(str(tmp_path)),
        "textBatchStream": ssc.textBatchStream(str(tmp_path)).dstream,
        "rateStream": ssc.rateStream(10),
        "socketTextStream": ssc.socketTextStream("127.0.0.1", server.getsockname()[1]),
        "map": pairs,
        "window": pairs.window(2),
        "reduceByKeyAndWindow": pairs.reduceByKeyAndWindow(operator.add, operator.sub, 2),
        "updateStateByKey": pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)),
        "union": queue.union(queue),
        "transform": queue.transform(lambda rdd: rdd),
        "track().changes()": track.changes(),
    }
    for stream in [*streams.values(), track]:
        stream.foreachRDD(lambda rdd: None)
    ssc.start()  # started streams carry their run-time state too: check that as well
    try:
        for kind, stream in streams.items():
            assert public(stream) == PYSPARK_DSTREAM | DSTREAM_EXTRAS, kind
        assert public(track) == PYSPARK_DSTREAM | DSTREAM_EXTRAS | TRACK_EXTRAS
        # getActiveOrCreate is PySpark's and dstream's too.
        assert public(ssc) == PYSPARK_CONTEXT | CONTEXT_EXTRAS
    finally:
        ssc.stop(stopSparkContext=False)
        server.close()
