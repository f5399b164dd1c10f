"""Time from a driver restart to caught-up (the paper's master recovery, Sec. 5.3: 12 s on
100 nodes).

apps/recoverable.py (a word count with running totals and a 10 s window, 2 s intervals, state
checkpointed every 4 s) reads files that bench/common/generator.py writes at --rate records/s. After
--before seconds its driver is killed with SIGKILL (its whole process group: driver, JVM,
Python workers); it stays down --down seconds while input keeps arriving, and is started
again with the same command. Reported, from the moment of the restart:

* startup: until getOrCreate has restored the program and started it (JVM and Spark start,
  reading the journal);
* caught up: until an interval whose batch time is after the restart completes within one
  batch interval of its batch time — every interval missed while down, and those in flight
  at the kill, have been (re)computed and output.

    .venv/bin/python -m bench.paper.recovery --rate 1000 --before 30 --down 5 --trials 3
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common.generator import Generator

APP = Path(__file__).resolve().parents[2] / "apps" / "recoverable.py"


class Driver:
    def __init__(self, work: Path, batch: str, checkpoint_every: str) -> None:
        self.work = work
        self.batch, self.checkpoint_every = batch, checkpoint_every
        self.events: list[dict[str, Any]] = []
        self.proc: subprocess.Popen[str] | None = None
        self._cond = threading.Condition()

    def start(self) -> float:
        began = time.time()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(APP),
                "--input",
                str(self.work / "in"),
                "--output",
                str(self.work / "out"),
                "--checkpoint",
                str(self.work / "ckpt"),
                "--batch",
                self.batch,
                "--checkpoint-every",
                self.checkpoint_every,
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        return began

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                event["seen"] = time.time()
                with self._cond:
                    self.events.append(event)
                    self._cond.notify_all()

    def wait(self, predicate: Any, timeout_s: float) -> dict[str, Any]:
        with self._cond:
            found: list[dict[str, Any]] = []

            def check() -> bool:
                found[:] = [e for e in self.events if predicate(e)]
                return bool(found)

            if not self._cond.wait_for(check, timeout_s):
                raise TimeoutError("the driver did not get there in time")
            return found[0]

    def kill9(self) -> float:
        assert self.proc is not None
        at = time.time()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        return at

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)


def trial(rate: int, before: float, down: float, batch: str, every: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="dstream-bench-recovery-"))
    for d in ("in", "out"):
        (work / d).mkdir()
    gen = Generator(str(work / "in"), rate).start()
    driver = Driver(work, batch, every)
    try:
        return _trial(gen, driver, before, down, rate)
    finally:
        gen.stop()
        driver.kill9()  # whatever happened, leave no driver behind


def _trial(gen: Generator, driver: Driver, before: float, down: float, rate: int) -> dict[str, Any]:
    driver.start()
    driver.wait(lambda e: e.get("started"), 180)
    threading.Event().wait(before)
    killed_at = driver.kill9()
    done = [e for e in driver.events if "batch_ms" in e]
    last_done = max(e["batch_ms"] for e in done)
    batch_ms = done[1]["batch_ms"] - done[0]["batch_ms"]
    # Keeping up: an interval is done within one batch interval of its batch time.
    steady = statistics.median(e["done_ms"] - e["batch_ms"] for e in done[len(done) // 2 :])
    if steady > batch_ms:
        raise RuntimeError(
            f"the program did not keep up before the kill (delay {steady} ms > {batch_ms} ms); "
            "lower --rate"
        )
    driver.events.clear()
    threading.Event().wait(down)
    restart = driver.start()
    started = driver.wait(lambda e: e.get("started"), 180)
    restart_ms = int(restart * 1000)
    caught = driver.wait(
        lambda e: (
            "batch_ms" in e
            and e["batch_ms"] >= restart_ms
            and e["done_ms"] - e["batch_ms"] <= batch_ms
        ),
        600,
    )
    replayed = [e for e in driver.events if "batch_ms" in e and e["batch_ms"] < restart_ms]
    driver.stop()
    return {
        "rate": rate,
        "down_s": down,
        "intervals_lost_at_kill": int((killed_at * 1000 - last_done) // batch_ms),
        "intervals_replayed": len(replayed),
        "delay_before_kill_ms": steady,
        "startup_s": started["seen"] - restart,
        "caught_up_s": caught["seen"] - restart,
        "restored": started["restored"],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--batch", default="2s")
    p.add_argument("--checkpoint-every", default="4s")
    p.add_argument("--before", type=float, default=30)
    p.add_argument("--down", type=float, default=5)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "recovery.json")
    )
    args = p.parse_args()
    # A SIGTERM (e.g. from `timeout`) unwinds through the trials' clean-up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows = []
    for _ in range(args.trials):
        row = trial(args.rate, args.before, args.down, args.batch, args.checkpoint_every)
        rows.append(row)
        print(json.dumps(row), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=2))
    startup = statistics.median(r["startup_s"] for r in rows)
    caught = statistics.median(r["caught_up_s"] for r in rows)
    print(
        f"\nrestart -> restored and started: median {startup:.1f} s; -> caught up: median "
        f"{caught:.1f} s ({args.down:.0f} s down, {args.rate} records/s, {len(rows)} trials)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
