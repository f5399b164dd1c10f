"""The installed wheel, with its runtime dependencies only, runs every feature.

CI builds the wheel, installs it into a fresh virtual environment (no test extras) and runs
this program from outside the source tree (`make clean-install-smoke`). It touches every
source, every operator family, the columnar path, checkpoints and driver recovery, the
listener and the executor monitor (the JVM shim shipped in the wheel), and checks values,
so a runtime import that is not a declared dependency fails here, not in a user's task.
"""

from __future__ import annotations

import operator
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from dstream.scheduler.engine import engine_of


def main() -> int:
    import dstream
    from dstream.scheduler.shim import SHIM_JAR

    for path in (Path(dstream.__file__), SHIM_JAR):
        if "site-packages" not in str(path.resolve()) or not path.is_file():
            sys.exit(f"{path} is not in the installed wheel: this must run outside the tree")

    # The distribution's name, version, licence and command, as pip installed them.
    from importlib.metadata import distribution

    dist = distribution("pyspark-dstream")
    if dist.version != dstream.__version__:
        sys.exit(f"the wheel says {dist.version}, dstream.__version__ {dstream.__version__}")
    if not any(f.name == "LICENSE" and "Apache License" in f.read_text() for f in dist.files or []):
        sys.exit("the wheel carries no LICENSE")
    script = Path(sys.executable).with_name("dstream")
    shown = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
    if not shown.stdout.startswith(f"pyspark-dstream {dstream.__version__} (import dstream)"):
        sys.exit(f"dstream --version printed {shown.stdout!r}")

    from pyspark import SparkContext

    from dstream import ManualClock, StreamingContext, StreamingListener, Time
    from dstream.sparkconf import recommended_conf

    sc = SparkContext(
        conf=recommended_conf("local[2]", "clean-install").set("spark.ui.enabled", "false")
    )
    sc.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="dstream-smoke-"))
    text, binary, out, ckpt = (work / n for n in ("text", "binary", "out", "ckpt"))
    for d in (text, binary):
        d.mkdir()
    lines = ["the quick brown fox", "a lazy dog", "the end"]
    (text / "a.txt").write_text("\n".join(lines) + "\n")
    (binary / "b.bin").write_bytes(b"abcdwxyz")
    now = int(time.time() * 1000) // 1000 * 1000 + 1000
    for f in (text / "a.txt", binary / "b.bin"):  # they arrive in the first interval
        os.utime(f, ns=((now + 500) * 1_000_000,) * 2)

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        conn.sendall(b"one\ntwo\n")
        conn.close()

    threading.Thread(target=serve, daemon=True).start()

    class Batches(StreamingListener):
        def __init__(self) -> None:
            self.records: list[int] = []

        def onBatchCompleted(self, batchCompleted: Any) -> None:
            self.records.append(batchCompleted.batchInfo().numRecords())

    got: dict[str, list[Any]] = {}

    def keep(name: str) -> Any:
        return lambda rdd: got.setdefault(name, []).append(sorted(rdd.collect(), key=repr))

    def build(clock: ManualClock) -> StreamingContext:
        ssc = StreamingContext(sc, 1, clock=clock)
        ssc.checkpoint(str(ckpt))
        words = ssc.textFileStream(str(text)).flatMap(str.split)
        pairs = words.map(lambda w: (w, 1))
        pairs.reduceByKey(operator.add).foreachRDD(keep("reduceByKey"))
        pairs.reduceByKeyAndWindow(operator.add, operator.sub, 2).foreachRDD(keep("window"))
        totals = pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0))
        totals.checkpoint(2).foreachRDD(keep("updateStateByKey"))
        sessions = pairs.track(lambda k, e: e, lambda k, s, e: s + e, 3)
        sessions.count().foreachRDD(keep("track"))
        pairs.join(pairs.mapValues(str)).count().foreachRDD(keep("join"))
        batches = ssc.textBatchStream(str(text))
        batches.contains("the").count().foreachRDD(keep("contains"))
        batches.words().countByValue().foreachRDD(keep("columnar"))
        ssc.fileStream(str(text), lambda p: p.endswith(".txt")).count().foreachRDD(
            keep("fileStream")
        )
        ssc.binaryRecordsStream(str(binary), 4).foreachRDD(keep("binary"))
        ssc.rateStream(100).count().foreachRDD(keep("rate"))
        words.window(2, 1).countByValue().saveAsTextFiles(str(out / "words"))
        words.save(lambda t, rdd: got.setdefault("save", []).append(t), name="sink")
        return ssc

    clock = ManualClock(now)
    ssc = StreamingContext.getOrCreate(str(ckpt), lambda: build(clock), sc)
    listener = Batches()
    ssc.addStreamingListener(listener)
    # Sources that cannot survive a driver restart, in a context of their own (no checkpoint).
    volatile = StreamingContext(sc, 1, clock=clock)
    volatile.queueStream([[1, 2]]).transform(lambda rdd: rdd.map(lambda x: x * 10)).pprint()
    received = volatile.socketTextStream("127.0.0.1", server.getsockname()[1])
    received.foreachRDD(keep("socket"))
    ssc.start()
    volatile.start()
    received._node._wait_for_buffered(2, 60)  # the receiver has both lines before the cut
    for _ in range(4):
        clock.advance(1000)
    assert ssc.wait_for_batch(now + 4000, 180) and volatile.wait_for_batch(now + 4000, 180)
    volatile.stop(stopSparkContext=False)
    engine_of(ssc).checkpointer.wait_idle(60)
    counts = dict(Counter(w for line in lines for w in line.split()))
    assert dict(got["reduceByKey"][0]) == counts, got["reduceByKey"]
    assert dict(got["columnar"][0]) == counts and got["contains"][0] == [2]
    assert dict(got["window"][1]) == counts and got["window"][2] == []  # left the window
    assert dict(got["updateStateByKey"][-1]) == counts
    assert got["track"][:4] == [[len(counts)]] * 3 + [[0]]  # timed out after 3 s
    assert got["fileStream"][0] == [3] and got["binary"][0] == [b"abcd", b"wxyz"]
    assert got["join"][0] == [sum(c * c for c in counts.values())]
    assert got["rate"] == [[100]] * 4 and got["socket"][0] == ["one", "two"]
    assert len(got["save"]) == 4 and (out / f"words-{now + 1000}").is_dir()
    assert listener.records[0] >= len(lines) and ssc.executor_monitor.tasks_of(Time(now + 1000))
    ssc.stop(stopSparkContext=False)

    # Driver recovery from the checkpoint directory: the saved program, not setup, runs.
    clock = ManualClock(now + 4000)
    resumed = StreamingContext.getOrCreate(str(ckpt), lambda: sys.exit("setup ran"), sc)
    resumed.start()
    clock.advance(1000)
    assert resumed.wait_for_batch(now + 5000, 180)
    resumed.stop(stopSparkContext=True)
    print("clean install: every source, operator family, columnar path, checkpoint, recovery")
    return 0


if __name__ == "__main__":
    sys.exit(main())
