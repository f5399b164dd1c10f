"""Two drivers on one checkpoint directory, for real: a driver that was paused (SIGSTOP on its
whole process group: driver, JVM, workers) resumes after a second driver took over. It must
stop at its next write, saying that another driver owns the directory, and the outputs must
still hold every input line exactly once (no interval deleted, emptied or doubled)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from testbed.drivers import App, LocalStorage, wait_for
from tests.recovery.harness import (
    CommittedLines,
    committed_lines,
    expected,
    input_lines,
    write_inputs,
)

pytestmark = pytest.mark.slow


def committed(storage: LocalStorage) -> int:
    return sum(1 for d in storage.names("out") if d.startswith("lines-"))


def test_a_paused_driver_that_resumes_after_a_takeover_is_fenced_off(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.make_dirs()
    first, second = App(storage, []), App(storage, [])
    try:
        first.start()
        done = threading.Event()
        writer = threading.Thread(target=write_inputs, args=(storage, input_lines(), done))
        writer.start()
        wait_for(lambda: committed(storage) >= 3, 120, "three committed intervals", 0.05)
        assert first.proc is not None
        os.killpg(first.proc.pid, signal.SIGSTOP)  # a long GC pause, a frozen VM...
        try:
            second.start()  # ...meanwhile an operator (or a supervisor) starts another driver
            assert second.restored == [True]
            before = committed(storage)
            wait_for(lambda: committed(storage) >= before + 3, 120, "the new driver's work", 0.05)
        finally:
            os.killpg(first.proc.pid, signal.SIGCONT)
        # The old driver wakes up: its next write finds a newer epoch, and it stops.
        assert first.proc.wait(120) == 1
        text = first.stderr_text
        assert text is not None
        assert "another driver took over checkpoint directory" in text, (
            f"the old driver stopped for another reason: {first.report()}"
        )
        assert "epoch 2" in text
        writer.join()
        want = expected()[0]
        lines = CommittedLines(storage)
        wait_for(lambda: set(lines()) == set(want), 300, "all input", 0.2)
        # Then the finally's kill, not a graceful stop: that would first run every interval
        # generated ahead of a driver still catching up, after all input.
    finally:
        first.kill9()
        second.kill9()
    assert committed_lines(storage) == want  # every line once: nothing lost, emptied, doubled
