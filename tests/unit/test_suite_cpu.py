"""scripts/suite_cpu.py's charging of CPU ticks to tests, on made-up /proc snapshots."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "suite_cpu.py"
spec = importlib.util.spec_from_file_location("suite_cpu", SCRIPT)
assert spec is not None and spec.loader is not None
suite_cpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite_cpu)

WORKER, DRIVER, EXECUTOR, STRAY = (10, 1), (11, 2), (12, 3), (50, 4)


def charged(before: dict, after: dict) -> tuple[Counter[str], Counter[str]]:
    tests: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    suite_cpu.charge(before, after, {WORKER[0]: "t::a"}, tests, outside)
    return tests, outside


def test_a_descendants_ticks_go_to_its_workers_test() -> None:
    before = {WORKER: (None, 100, 0), DRIVER: (WORKER, 50, 0), EXECUTOR: (DRIVER, 10, 0)}
    after = {WORKER: (None, 104, 0), DRIVER: (WORKER, 70, 0), EXECUTOR: (DRIVER, 40, 0)}
    tests, outside = charged(before, after)
    assert tests == {"t::a": 4 + 20 + 30} and not outside


def test_a_process_that_ended_is_charged_its_last_ticks_once() -> None:
    # The executor had 10 ticks at the first look and ended with 16: its parent's reaped
    # children's time grew by 16, of which only the 6 not seen before are new.
    before = {WORKER: (None, 100, 0), DRIVER: (WORKER, 50, 0), EXECUTOR: (DRIVER, 10, 0)}
    after = {WORKER: (None, 100, 0), DRIVER: (WORKER, 50, 16)}
    tests, _ = charged(before, after)
    assert tests == {"t::a": 6}


def test_a_chain_that_ended_together_is_charged_its_last_ticks_once() -> None:
    # The driver (50 seen, 55 at its end) reaped its executor (10 seen, 13 at its end), then
    # the worker reaped the driver: the worker's reaped children's time grew by 55 + 13.
    before = {WORKER: (None, 100, 0), DRIVER: (WORKER, 50, 0), EXECUTOR: (DRIVER, 10, 0)}
    after = {WORKER: (None, 100, 68)}
    tests, _ = charged(before, after)
    assert tests == {"t::a": 5 + 3}


def test_a_reused_pid_is_a_new_process() -> None:
    # pid 12 ended (10 ticks seen, 12 at its end) and a new process got pid 12 (3 ticks).
    before = {WORKER: (None, 100, 0), DRIVER: (WORKER, 50, 0), EXECUTOR: (DRIVER, 10, 0)}
    reused = (EXECUTOR[0], 99)
    after = {WORKER: (None, 100, 0), DRIVER: (WORKER, 50, 12), reused: (DRIVER, 3, 0)}
    tests, _ = charged(before, after)
    assert tests == {"t::a": 2 + 3}


def test_a_process_outside_every_pytest_process_is_listed_apart() -> None:
    tests, outside = charged({STRAY: (None, 5, 0)}, {STRAY: (None, 9, 0)})
    assert not tests and sum(outside.values()) == 4


def test_two_workers_writing_their_tests_at_once_keep_both(tmp_path: Path, monkeypatch) -> None:
    # Worker 2 writes its test between worker 1's write and rename (a shared temporary
    # file once made worker 1's rename fail and stopped it).
    monkeypatch.setenv(suite_cpu.ENV, str(tmp_path))
    pid = iter([1, 1, 2, 2])
    monkeypatch.setattr(suite_cpu.os, "getpid", lambda: next(pid))
    replace = Path.replace
    interleaved = []

    def replace_after_the_other(self: Path, target: Path) -> Path:
        if not interleaved:
            interleaved.append(True)
            suite_cpu._write("t::two")
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", replace_after_the_other)
    suite_cpu._write("t::one")
    assert suite_cpu.current_tests(tmp_path) == {1: "t::one", 2: "t::two"}
