"""Where the test suite's CPU goes, test by test: every process's CPU time charged to the test
its pytest process (a worker of pytest-xdist, or pytest itself) was running when it was
spent, the processes it started (drivers, executor JVMs, Python workers, services)
included. The suite's wall time on 2 cores is its CPU time over two (#60 item 11: 92 % busy
on a fresh clone), so this is the list to cut from.

    .venv/bin/python scripts/suite_cpu.py --out build/suite-cpu.json -- \\
        make test PYTEST_WORKERS='-n 2 -p suite_cpu'

The command runs with this directory on PYTHONPATH, so ``-p suite_cpu`` loads this module
as a pytest plugin in every pytest process: it writes the test it runs to a file named after
its pid. Meanwhile this script samples /proc every 0.25 s and charges each process's CPU
since the last sample to the nearest ancestor that is a pytest process (a process that
ended between two samples is charged through its parent's reaped-children time). CPU of
processes whose pytest ancestor is gone (an orphan reparented to init: a killed driver's
executors; the command's own setup before pytest) is listed by process name under
``outside``; the sampler's own CPU is ``sampler_cpu_s``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV = "SUITE_CPU_DIR"
BETWEEN = "(between tests)"


# ---- the pytest plugin (-p suite_cpu) ----------------------------------------------------------
def _write(text: str) -> None:
    directory = os.environ.get(ENV)
    if not directory:
        return
    # Each process its own temporary file: two workers once renamed one shared "test.tmp"
    # between the other's write and rename, and the FileNotFoundError stopped a worker.
    path = Path(directory) / f"test.{os.getpid()}"
    temporary = Path(directory) / f"test.{os.getpid()}.tmp"
    try:
        temporary.write_text(text)
        temporary.replace(path)
    except OSError as exc:  # the measurement is lost for this test; the suite goes on
        print(f"suite_cpu: {path}: {exc}", file=sys.stderr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """In the process that runs the test (an xdist worker; not the controller, which only
    hears the reports)."""
    _write(item.nodeid)
    yield
    _write(BETWEEN)


# ---- the sampler --------------------------------------------------------------------------------
Key = tuple[int, int]  # (pid, start time): a pid reused by a new process is another key


def snapshot() -> dict[Key, tuple[Key | None, int, int]]:
    """Every process: its parent's key, its own CPU ticks, its reaped children's ticks."""
    raw: dict[int, tuple[int, int, int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        utime, stime, cutime, cstime = map(int, fields[11:15])
        raw[int(name)] = (int(fields[1]), utime + stime, cutime + cstime, int(fields[19]))
    out: dict[Key, tuple[Key | None, int, int]] = {}
    for pid, (ppid, own, children, started) in raw.items():
        parent = raw.get(ppid)
        out[(pid, started)] = ((ppid, parent[3]) if parent else None, own, children)
    return out


def current_tests(directory: Path) -> dict[int, str]:
    tests = {}
    for path in directory.glob("test.*"):
        if path.suffix == ".tmp":
            continue
        try:
            tests[int(path.name.split(".", 1)[1])] = path.read_text()
        except (OSError, ValueError):
            continue
    return tests


def charge(
    before: dict[Key, tuple[Key | None, int, int]],
    after: dict[Key, tuple[Key | None, int, int]],
    tests: dict[int, str],
    charged: Counter[str],
    outside: Counter[str],
) -> None:
    """Charge the ticks spent between two snapshots."""
    # Per surviving process: what its descendants that ended had at the last look (in its
    # reaped children's time now, and charged before). A chain that ended together (a
    # driver and its executors) is reaped up to the nearest survivor.
    gone: Counter[Key] = Counter()
    for key, (parent, own, children) in before.items():
        if key in after:
            continue
        up = parent
        while up is not None and up not in after and up in before:
            up = before[up][0]
        if up is not None and up in after:
            gone[up] += own + children
    for key, (_parent, own, children) in after.items():
        seen = before.get(key)
        spent = own + children if seen is None else own - seen[1] + children - seen[2]
        spent -= gone.get(key, 0)
        if spent <= 0:
            continue
        test = None
        look: Key | None = key
        for _ in range(64):
            if look is None or look not in after:
                break
            if look[0] in tests:
                test = tests[look[0]]
                break
            look = after[look][0]
        if test is not None:
            charged[test] += spent
        else:
            try:
                name = Path(f"/proc/{key[0]}/comm").read_text().strip()
            except OSError:
                name = "?"
            outside[name] += spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON written")
    parser.add_argument("--every", type=float, default=0.25, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the suite's command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the suite's command after --")
    hz = os.sysconf("SC_CLK_TCK")
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as directory:
        here = str(Path(__file__).resolve().parent)
        env = {
            **os.environ,
            ENV: directory,
            "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
        }
        began = time.monotonic()
        suite = subprocess.Popen(command, env=env)
        charged: Counter[str] = Counter()
        outside: Counter[str] = Counter()
        before = snapshot()
        while suite.poll() is None:
            time.sleep(args.every)
            after = snapshot()
            charge(before, after, current_tests(Path(directory)), charged, outside)
            before = after
    wall = time.monotonic() - began
    tests = {test: round(ticks / hz, 2) for test, ticks in charged.most_common()}
    result = {
        "command": command,
        "returncode": suite.returncode,
        "wall_s": round(wall, 1),
        "cpu_s": round(sum(tests.values()), 1),
        "tests": tests,
        "sampler_cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 1),
        "outside": {name: round(ticks / hz, 2) for name, ticks in outside.most_common()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['cpu_s']} CPU-s charged to tests in {result['wall_s']} s; {args.out}")
    for test, seconds in list(tests.items())[:20]:
        print(f"{seconds:8.1f}  {test}")
    return int(suite.returncode)


if __name__ == "__main__":
    sys.exit(main())
