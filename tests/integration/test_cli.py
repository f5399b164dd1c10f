"""The dstream command: status of a checkpoint directory (no Spark), and run with
spark-submit-like options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dstream.cli import main
from dstream.scheduler.engine import engine_of
from dstream.time import human_time

from .conftest import Harness

REPO = Path(__file__).resolve().parents[2]


def test_status_tells_what_a_checkpoint_directory_holds(
    harness: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h: Harness = harness()
    ckpt = tmp_path / "ckpt"
    h.ssc.checkpoint(str(ckpt))
    (tmp_path / "in").mkdir()
    pairs = h.ssc.textFileStream(str(tmp_path / "in")).map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(lambda n, o: sum(n) + (o or 0)).setName("totals")
    totals.checkpoint(1).foreachRDD(lambda rdd: rdd.count())
    h.ssc.start()
    h.run_batches(1)
    engine_of(h.ssc).checkpointer.wait_idle(60)
    h.run_batches(1)
    engine_of(h.ssc).checkpointer.wait_idle(60)
    h.ssc.stop(stopSparkContext=False)
    assert main(["status", str(ckpt), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    program = status["program"]
    assert program["lastCompleted"] == human_time(2000) and program["pending"] == []
    assert "totals" in program["streams"] and program["batchInterval"] == "1000 ms"
    (state,) = status["states"]
    assert state["stream"] == "totals" and state["lastCheckpoint"] is not None
    assert state["checkpoints"] and all(c["complete"] for c in state["checkpoints"])
    assert status["owner"]["epoch"] == 1 and status["owner"]["pid"] == os.getpid()
    assert main(["status", str(ckpt)]) == 0
    text = capsys.readouterr().out
    assert f"completed     up to {human_time(2000)}" in text and "owner         epoch 1" in text


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "is not a directory; give the directory passed to ssc.checkpoint()"),
        (lambda p: (p / "x.csv").write_text("a") and p, "is not a dstream checkpoint directory"),
    ],
)  # fmt: skip
def test_status_of_a_wrong_directory_is_one_line_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, message: str
) -> None:
    assert main(["status", str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


APP = textwrap.dedent(
    """
    from pyspark import SparkConf, SparkContext
    from dstream import StreamingContext

    sc = SparkContext(conf=SparkConf())  # master and settings come from dstream run
    assert sc.master == "local[2]" and sc.getConf().get("spark.dstream.test") == "yes"
    # dstream's recommended settings, unless --conf gives its own
    assert sc.getConf().get("spark.shuffle.io.maxRetries") == "1"
    assert sc.getConf().get("spark.locality.wait") == "1s"
    ssc = StreamingContext(sc, 1)
    ssc.rateStream(100).count().foreachRDD(lambda rdd: rdd.count())
    ssc.start()
    ssc.awaitTerminationOrTimeout(4)
    ssc.stop(stopSparkContext=True, stopGraceFully=True)
    """
)


@pytest.mark.slow
def test_run_passes_master_settings_and_checkpoint_to_an_unchanged_program(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    ckpt = tmp_path / "ckpt"
    done = subprocess.run(
        [sys.executable, "-m", "dstream", "run", "--master", "local[2]",
         "--conf", "spark.dstream.test=yes", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.locality.wait=1s",
         "--checkpoint", str(ckpt), "--progress", str(app)],
        check=False, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (ckpt / "DSTREAM").exists()  # the program set no checkpoint directory
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(lines) >= 2 and all(" rows  " in line for line in lines), done.stdout
