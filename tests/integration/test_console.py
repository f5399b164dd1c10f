"""What a plain ``python`` streaming program prints to its console (dstream.console): dstream's
log lines in Spark's console format at Spark's level, no progress bar cutting through pprint's
records, and a stop without warnings. One program in a process of its own (logging and the
progress bar are per process), on PySpark's defaults as a new user runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import logging, threading, time
    from pyspark import SparkConf, SparkContext
    from dstream import StreamingContext, StreamingListener

    # PySpark's defaults under plain python (a shell to Spark): the progress bar is on.
    conf = SparkConf().setMaster("local[2]").setAppName("console")
    conf.set("spark.ui.showConsoleProgress", "true").set("spark.log.level", "WARN")
    conf.set("spark.ui.enabled", "false")
    sc = SparkContext(conf=conf)
    ssc = StreamingContext(sc, 1)
    printed = threading.Event()

    class FirstBatch(StreamingListener):
        def onBatchCompleted(self, batchCompleted):
            printed.set()

    ssc.addStreamingListener(FirstBatch())
    ssc.queueStream([sc.parallelize(["a record"])]).pprint()
    ssc.start()
    assert printed.wait(120)
    # A stage running for over 0.5 s: Spark's bar would redraw it on stderr.
    sc.parallelize([0], 1).map(lambda x: time.sleep(2) or x).count()
    logging.getLogger("dstream.example").warning("a warning")
    logging.getLogger("dstream.example").info("an info line")  # below spark.log.level
    ssc.stop(stopSparkContext=True)
    print("stopped", flush=True)
    """
)


def test_a_plain_program_prints_formatted_logs_no_progress_bar_and_no_stop_warnings(
    tmp_path: Path,
) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Time: " in done.stdout and "a record" in done.stdout
    assert done.stdout.rstrip().endswith("stopped")
    err = done.stderr
    # dstream's records read like Spark's own console lines, at spark.log.level.
    assert re.search(
        r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d WARN dstream\.example: a warning$", err, re.M
    ), err[-3000:]
    assert "an info line" not in err
    # pprint stopped the bar before the slow stage: nothing redrawn over the records.
    assert "[Stage " not in err, err[-3000:]
    assert "Failed to cancel job group" not in err, err[-3000:]
