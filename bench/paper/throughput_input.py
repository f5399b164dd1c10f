"""Input for the throughput benchmark: one file per interval, at a target rate, written under
a hidden name and renamed into the watched directory at the middle of the interval, the same
way for every system.

The records are bench/common/generator.py's (100-byte Zipf lines from dstream.sources.textgen), but
drawn from a pool generated once and cached on disk: textgen produces ~90k records/s on one
core, so generating them live at the rates searched would take a core from the system under
test on a 2-core machine. Pool chunk ``i`` is ``generate_lines(seed=i, count=CHUNK)``, and
file ``n`` of ``count`` records is records ``[n * count, (n + 1) * count)`` of the pool
(wrapping around): the same bytes in every run and for every system.

Files are renamed in at the middle of an interval (intervals aligned to multiples of the
interval in epoch time, as Spark's and dstream's batch timers and Structured Streaming's
processing-time trigger are), so a file is never raced against a batch boundary.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from dstream.sources.textgen import generate_lines

__all__ = ["RecordPool", "Writer", "WrittenFile"]

RECORD_BYTES = 100
LINE_BYTES = RECORD_BYTES + 1  # with its newline
CHUNK = 10_000


class RecordPool:
    """``records`` deterministic lines, cached in ``cache_dir`` after the first use."""

    def __init__(self, records: int, cache_dir: str) -> None:
        if records < CHUNK or records % CHUNK:
            raise ValueError(f"pool of {records} records must be a positive multiple of {CHUNK}")
        path = Path(cache_dir) / f"pool-{records}x{RECORD_BYTES}.txt"
        if not path.exists() or path.stat().st_size != records * LINE_BYTES:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            with tmp.open("w", encoding="ascii") as out:
                for i in range(records // CHUNK):
                    out.write("".join(f"{line}\n" for line in generate_lines(i, CHUNK)))
            os.replace(tmp, path)
        self.data = path.read_bytes()
        self.records = records
        self.path = path

    def segments(self, start: int, count: int) -> list[tuple[int, int]]:
        """Byte ranges ``(offset, length)`` of the pool holding records ``[start, start +
        count)``, wrapping around."""
        out = []
        start %= self.records
        while count > 0:
            take = min(count, self.records - start)
            out.append((start * LINE_BYTES, take * LINE_BYTES))
            count -= take
            start = 0
        return out

    def write_file(self, n: int, count: int, target: Path) -> None:
        """``file(n, count)``'s bytes into ``target``, copied by the kernel from the pool's
        file (sendfile, which also works from the disk into tmpfs, where copy_file_range
        refuses): no bytes pass through this process, so the writer takes little CPU and no
        GIL from the system under test."""
        with open(self.path, "rb") as src, open(target, "wb") as dst:
            for offset, length in self.segments(n * count, count):
                copied = 0
                while copied < length:
                    done = os.sendfile(dst.fileno(), src.fileno(), offset + copied, length - copied)
                    if done <= 0:
                        raise OSError(f"sendfile from {self.path} returned {done}")
                    copied += done

    def lines(self, start: int, count: int) -> bytes:
        """Records ``[start, start + count)`` of the pool, wrapping around, as file bytes."""
        return b"".join(self.data[o : o + n] for o, n in self.segments(start, count))

    def file(self, n: int, count: int) -> bytes:
        return self.lines(n * count, count)


@dataclass(frozen=True)
class WrittenFile:
    name: str
    number: int
    records: int
    renamed_ms: int  # epoch ms just after the rename returned


class Writer:
    """Writes one file per interval, ``rate`` records/s, in a thread: ``files`` files, or
    until :meth:`finish_with` or :meth:`stop` if ``files`` is None. A file is deleted
    ``retain_s`` seconds after its rename (never, if infinite)."""

    def __init__(
        self,
        directory: str,
        pool: RecordPool,
        rate: int,
        interval_ms: int,
        files: int | None,
        retain_s: float = math.inf,
    ) -> None:
        self.directory = Path(directory)
        self.pool = pool
        self.rate = rate
        self.interval_ms = interval_ms
        self.files = files
        self.retain_ms = retain_s * 1000
        self.deleted = 0  # files 0 .. deleted - 1 are gone
        self.written: list[WrittenFile] = []
        self.first_boundary_ms = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def counts(self, files: int) -> list[int]:
        """Records per file: ``rate * interval`` with the fraction carried over."""
        out, owed = [], 0.0
        for _ in range(files):
            owed += self.rate * self.interval_ms / 1000
            out.append(int(owed))
            owed -= int(owed)
        return out

    def boundary_ms(self, n: int) -> int:
        """The start of the interval in which file ``n`` is renamed in (at its middle)."""
        return self.first_boundary_ms + n * self.interval_ms

    def start(self, lead_ms: int = 1000) -> Writer:
        """Start with the interval that begins at least ``lead_ms`` from now."""
        now = int(time.time() * 1000)
        step = self.interval_ms
        self.first_boundary_ms = -(-(now + lead_ms) // step) * step
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)
        self._thread.start()
        return self

    def finish_with(self, files: int) -> None:
        """Write files up to number ``files - 1``, then stop."""
        self.files = files

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        self._stop.set()
        self.join()

    def _run(self) -> None:
        n, owed = 0, 0.0
        while self.files is None or n < self.files:
            owed += self.rate * self.interval_ms / 1000
            count = int(owed)
            owed -= count
            name = f"in-{n:07d}.txt"
            hidden = self.directory / f".{name}"
            self.pool.write_file(n, count, hidden)  # ahead of time, off the clock
            due_ms = self.boundary_ms(n) + self.interval_ms // 2
            if self._stop.wait(max(0.0, due_ms / 1000 - time.time())):
                hidden.unlink()
                return
            os.utime(hidden)  # mtime = now: file sources choose files by modification time
            os.rename(hidden, self.directory / name)
            self.written.append(WrittenFile(name, n, count, int(time.time() * 1000)))
            n += 1
            self._delete_old(self.written[-1].renamed_ms)

    def _delete_old(self, now_ms: int) -> None:
        while (
            self.deleted < len(self.written)
            and now_ms - self.written[self.deleted].renamed_ms > self.retain_ms
        ):
            (self.directory / self.written[self.deleted].name).unlink(missing_ok=True)
            self.deleted += 1
