"""Input for the file-based benchmarks: one file of text records per slice of time, written
under a hidden name and renamed into the watched directory, so every system under test
reads exactly the same records the same way.

Records are 100-byte lines of Zipf-distributed words (dstream.sources.textgen), seeded by
the file's sequence number: the content of file n is the same in every run.

    .venv/bin/python -m bench.common.generator DIR --rate 5000 --seconds 60 --every-ms 250
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from dstream.sources.textgen import generate_lines


class Generator:
    """Writes ``rate`` records per second as one file every ``every_ms``, in a thread."""

    def __init__(self, directory: str, rate: int, every_ms: int = 250, record_bytes: int = 100):
        self.directory = Path(directory)
        self.rate = rate
        self.every_ms = every_ms
        self.record_bytes = record_bytes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.files = 0
        self.records = 0
        # (file name, time its rename completed, epoch ms): for end-to-end latency.
        self.written: list[tuple[str, int]] = []

    def set_rate(self, rate: int) -> None:
        self.rate = rate

    def start(self) -> Generator:
        self._thread = threading.Thread(target=self._run, name="generator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        step = self.every_ms / 1000
        next_at = time.monotonic()
        owed = 0.0
        while not self._stop.is_set():
            owed += self.rate * step
            count = int(owed)
            owed -= count
            name = f"in-{self.files:07d}.txt"
            lines = generate_lines(self.files, count, self.record_bytes)
            hidden = self.directory / f".{name}"
            hidden.write_text("".join(line + "\n" for line in lines))
            os.rename(hidden, self.directory / name)
            self.written.append((name, int(time.time() * 1000)))
            self.files += 1
            self.records += count
            next_at += step
            self._stop.wait(max(0.0, next_at - time.monotonic()))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--rate", type=int, default=5000)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--every-ms", type=int, default=250)
    args = p.parse_args()
    gen = Generator(args.directory, args.rate, args.every_ms).start()
    threading.Event().wait(args.seconds)
    gen.stop()
    print(f"wrote {gen.records} records in {gen.files} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
