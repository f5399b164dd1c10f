"""How a driver process ends: SIGTERM (YARN's and Kubernetes' stop) and a failed interval.

Each case runs a plain program (``python prog.py``: no signal handler of its own) in a
process of its own on ``local[2]``, with a slow output (2 s of work per 1 s interval), so
that intervals are in flight and generated ahead when the signal comes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from dstream.cli.status import directory_status
from dstream.storage.commits import COMMIT_MARKER
from testbed.drivers import wait_for

PROGRAM = textwrap.dedent(
    """
    import os, sys, time
    from pyspark import SparkContext
    from dstream import StreamingContext
    from dstream.sparkconf import recommended_conf

    mode, source, out, ckpt = sys.argv[1:5]
    conf = recommended_conf("local[2]", "shutdown-" + mode).set("spark.ui.enabled", "false")
    if mode == "graceful":
        conf.set("spark.streaming.stopGracefullyOnShutdown", "true")
    sc = SparkContext(conf=conf)
    if mode != "failing":
        sc.setLogLevel("OFF")
    ssc = StreamingContext(sc, 1)
    ssc.checkpoint(ckpt)

    def slow(rows):
        # Every interval fails from the moment bad.txt is in the input directory.
        if os.path.exists(os.path.join(source, "bad.txt")):
            raise ValueError("a bad record")
        time.sleep(2.0)
        return list(rows)

    ssc.textFileStream(source).transform(
        lambda rdd: rdd.coalesce(1).mapPartitions(slow)
    ).saveAsTextFiles(out + "/lines")
    ssc.start()
    print("started", flush=True)
    ssc.awaitTermination()
    """
)


class Run:
    def __init__(self, tmp_path: Path, mode: str) -> None:
        self.root = tmp_path
        for name in ("in", "out", "ckpt"):
            (tmp_path / name).mkdir()
        script = tmp_path / "prog.py"
        script.write_text(PROGRAM)
        args = [sys.executable, str(script), mode]
        args += [str(tmp_path / n) for n in ("in", "out", "ckpt")]
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "started"
        self.sent: list[str] = []
        self._stop = threading.Event()
        self._writer = threading.Thread(target=self._write, daemon=True)
        self._writer.start()

    def _write(self) -> None:
        n = 0
        while not self._stop.wait(0.3):
            lines = [f"f{n}-{k}" for k in range(3)]
            hidden = self.root / "in" / f".f{n:04d}"
            hidden.write_text("\n".join(lines) + "\n")
            hidden.rename(self.root / "in" / f"f{n:04d}.txt")
            self.sent.extend(lines)
            n += 1

    def put(self, name: str, text: str) -> None:
        hidden = self.root / "in" / f".{name}"
        hidden.write_text(text)
        hidden.rename(self.root / "in" / name)

    def committed(self) -> dict[str, list[str]]:
        out = self.root / "out"
        result = {}
        for d in sorted(out.iterdir()):
            if d.name.startswith("lines-") and (d / COMMIT_MARKER).exists():
                result[d.name] = [
                    line
                    for part in sorted(d.glob("part-*"))
                    for line in part.read_text().splitlines()
                ]
        return result

    def finish(self, timeout_s: float = 120) -> tuple[int, str]:
        self._stop.set()
        self._writer.join()
        _, err = self.proc.communicate(timeout=timeout_s)
        return self.proc.returncode, err

    def kill(self) -> None:
        self._stop.set()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.mark.parametrize("mode", ["graceful", "immediate"])
def test_sigterm_stops_the_program_and_exits_with_143(tmp_path: Path, mode: str) -> None:
    """spark.streaming.stopGracefullyOnShutdown=true: SIGTERM lets every interval generated
    so far finish and commit, then the process exits with 143. Without it (the default, as
    Spark's), it exits at once: the intervals in flight are abandoned uncommitted, for a
    restarted driver to run."""
    run = Run(tmp_path, mode)
    try:
        # 2 s of work per 1 s interval: by the third commit, ~5 intervals wait behind it.
        wait_for(lambda: len(run.committed()) >= 3, 120, "three committed intervals", 0.05)
        signalled_ms = int(time.time() * 1000)
        run.proc.send_signal(signal.SIGTERM)  # to the driver alone, as Kubernetes does
        code, err = run.finish()
    finally:
        run.kill()
    assert code == 143, err[-3000:]
    committed = run.committed()
    lines = [line for batch in committed.values() for line in batch]
    assert len(lines) == len(set(lines)) and set(lines) <= set(run.sent)
    times = sorted(int(name.rsplit("-", 1)[1]) for name in committed)
    assert times == list(range(times[0], times[-1] + 1000, 1000)), "an interval was skipped"
    assert not [d for d in os.listdir(tmp_path / "out") if d.startswith("lines-") and
                d not in committed], "an output left uncommitted under its final name"  # fmt: skip
    if mode == "graceful":
        # Every interval generated before the signal (the timer generates one at each
        # interval's end: the one ending after the signal is not) finished and committed.
        assert times[-1] >= signalled_ms - 1000, (times[-1], signalled_ms)
        program = directory_status(str(tmp_path / "ckpt"))["program"]
        assert program["pending"] == [] and program["failed"] == [], program
    else:
        # The waiting intervals were abandoned: the newest committed is seconds old.
        assert times[-1] < signalled_ms - 2500, (times[-1], signalled_ms)


def test_a_failed_interval_ends_the_program_promptly_and_quietly(tmp_path: Path) -> None:
    """awaitTermination raises the failed interval's error and the script ends: the process
    exits with the traceback, without retrying the intervals nobody waits for any more."""
    run = Run(tmp_path, "failing")
    try:
        # 2 s of work per 1 s interval: by the third commit, ~5 intervals wait behind it,
        # and each fails once bad.txt is there.
        wait_for(lambda: len(run.committed()) >= 3, 120, "three committed intervals", 0.05)
        run.put("bad.txt", "boom\n")
        code, err = run.finish(timeout_s=120)
    finally:
        run.kill()
    assert code == 1, err[-3000:]
    assert "ValueError: a bad record" in err
    assert "cannot schedule new futures" not in err, err[-3000:]
    # The failure's traceback once (awaitTermination's; the log gives its headline), and
    # the stop cancels only running jobs: no "Failed to cancel job group" per waiting one.
    assert err.count("--- original traceback ---") == 1, err[-6000:]
    assert "(awaitTermination raises it with its traceback)" in err
    assert "Failed to cancel job group" not in err, err[-3000:]
    # Only the interval that failed was tried (three times: output_retries=2), not the ones
    # waiting behind it once nobody waited for them (the old exit ran each, ~6,000 lines).
    retried = set(re.findall(r"failed at batch ([0-9: .-]+) \(attempt", err))
    assert len(retried) == 1, retried
