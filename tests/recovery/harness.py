"""kill -9 the driver of a real streaming application, restart it, and collect what it
committed — on the local file system or on HDFS.

apps/recoverable.py runs in its own process group (driver, its JVM and Python workers). A
generator writes input files into the watched directory while the application runs. The
driver is killed with SIGKILL at random moments, while a state checkpoint is being written,
and while an interval's output is being committed; each time it is restarted with the same
command, and StreamingContext.getOrCreate resumes it from its journal. The union of all
committed outputs must then equal that of a run without failures: every input line in
exactly one interval, and the final running word counts exact.
"""

from __future__ import annotations

import random
import threading
from collections import Counter

from testbed.drivers import App, Storage, wait_for, wait_for_kill_point

FILES, LINES_PER_FILE = 60, 4
WORDS = ("to be or not that is the question whether tis nobler in mind").split()


def input_lines() -> list[list[str]]:
    rng = random.Random(7)
    return [
        [f"L{f:03d}-{n} " + " ".join(rng.choices(WORDS, k=5)) for n in range(LINES_PER_FILE)]
        for f in range(FILES)
    ]


def expected() -> tuple[Counter[str], Counter[str]]:
    """Every input line once, and the word counts over all of them."""
    lines = input_lines()
    return (
        Counter(line for file_lines in lines for line in file_lines),
        Counter(w for file_lines in lines for line in file_lines for w in line.split()[1:]),
    )


def write_inputs(storage: Storage, lines: list[list[str]], done: threading.Event) -> None:
    pace = threading.Event()
    for f, file_lines in enumerate(lines):
        storage.put_input(f"f{f:03d}.txt", "\n".join(file_lines) + "\n")
        pace.wait(0.2)  # the input's own rate: one file every 200 ms
    done.set()


class CommittedLines:
    """The input lines in the committed ``lines-*`` outputs, polled while the application
    runs. A committed directory never changes, so each is read once: re-reading them all at
    every poll costs a growing number of WebHDFS requests on HDFS, CPU the driver on the same
    two cores then lacks."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.read: dict[str, list[str]] = {}  # the lines of each committed lines-<ms>

    def __call__(self) -> Counter[str]:
        s = self.storage
        for d in s.names("out"):
            if d.startswith("lines-") and d not in self.read:
                entries = s.names(f"out/{d}")
                assert "_DSTREAM_COMMIT" in entries, d
                parts = [p for p in entries if p.startswith("part-")]
                self.read[d] = [
                    ln for p in parts for ln in s.read_text(f"out/{d}/{p}").splitlines()
                ]
        return Counter(line for lines in self.read.values() for line in lines)


def committed_lines(storage: Storage) -> Counter[str]:
    return CommittedLines(storage)()


def newest(storage: Storage, prefix: str) -> int:
    """The newest interval (ms) of a committed ``<prefix>-<ms>`` output (-1 before any): a
    commit renames the output into place, so every such name is complete."""
    names = storage.names("out")
    return max((int(d.rsplit("-", 1)[1]) for d in names if d.startswith(f"{prefix}-")), default=-1)


def final_totals(storage: Storage) -> dict[str, int]:
    last = f"totals-{newest(storage, 'totals')}"
    totals = {}
    for part in storage.names(f"out/{last}"):
        if part.startswith("part-"):
            for line in storage.read_text(f"out/{last}/{part}").splitlines():
                word, count = eval(line)  # the files hold repr((word, count))
                totals[word] = count
    return totals


def _committed(storage: Storage, prefix: str) -> dict[int, list[str]]:
    """Each committed ``<prefix>-<ms>`` output's lines, by interval."""
    found = {}
    for d in storage.names("out"):
        if d.startswith(f"{prefix}-") and "_DSTREAM_COMMIT" in storage.names(f"out/{d}"):
            parts = [p for p in storage.names(f"out/{d}") if p.startswith("part-")]
            found[int(d.rsplit("-", 1)[1])] = [
                ln for p in parts for ln in storage.read_text(f"out/{d}/{p}").splitlines()
            ]
    return found


def wrong_windows(storage: Storage, window_ms: int = 10_000) -> list[int]:
    """The committed ``window-<ms>`` outputs that differ from the word counts of the lines
    committed for the intervals of their window (the app's 10 s): an exact oracle however
    the intervals fell, since every line is committed in exactly one interval."""
    lines, windows = _committed(storage, "lines"), _committed(storage, "window")
    wrong = []
    for t, got in sorted(windows.items()):
        want: Counter[str] = Counter()
        for u, text in lines.items():
            if t - window_ms < u <= t:
                want.update(w for line in text for w in line.split()[1:])
        counts = dict(eval(line) for line in got)  # the files hold repr((word, count))
        if counts != {w: n for w, n in want.items() if n}:
            wrong.append(t)
    return wrong


def run(
    storage: Storage, kills: list[str], extra_args: list[str] | None = None
) -> tuple[Counter[str], dict[str, int], list[bool]]:
    storage.make_dirs()
    lines = input_lines()
    app = App(storage, extra_args or [])
    try:
        app.start()
        done = threading.Event()
        writer = threading.Thread(target=write_inputs, args=(storage, lines, done))
        writer.start()
        rng = random.Random(11)
        for kind in kills:
            wait_for_kill_point(storage, kind, rng)
            app.kill9()
            app.start()
        writer.join()
        want = expected()[0]
        committed = CommittedLines(storage)
        try:
            wait_for(lambda: set(committed()) == set(want), 300, "all input", 0.5)
        except AssertionError as timeout:
            missing = sorted(set(want) - set(committed()))
            files = sorted({line.split("-", 1)[0] for line in missing})
            raise AssertionError(
                f"{timeout}: {len(missing)} lines of {len(want)} never committed "
                f"(input files {', '.join(files)}); {app.report()}"
            ) from None
        # The totals of the interval that read the last input line, then a last kill: a
        # graceful stop would first run every interval generated ahead (tens of seconds
        # behind real time after a restart), after all input (tests/integration/
        # test_shutdown.py proves the graceful stop).
        last_input = max(int(d.rsplit("-", 1)[1]) for d, ls in committed.read.items() if ls)
        wait_for(
            lambda: newest(storage, "totals") >= last_input, 120, "the last input's totals", 0.5
        )
    finally:
        app.kill9()  # never leave a driver behind, whatever failed
    return committed_lines(storage), final_totals(storage), app.restored
