"""Run PySpark's own streaming tests against dstream and against pyspark.streaming (issue #13).

dstream claims to be a drop-in for ``pyspark.streaming``. This script measures the claim with
the peer's own suite: it copies Spark's test files into a temporary directory, rewrites their
imports so they test dstream, and runs them with pytest against both engines in the same run,
then prints pass/fail/error counts per file for each engine and every dstream failure with its
test id and a one-line reason.

The test files are not part of this project and are not downloaded (the machine reaches only
package registries). Put these files of apache/spark (Apache License 2.0) in one directory:

    python/pyspark/streaming/tests/test_dstream.py
    python/pyspark/streaming/tests/test_context.py
    python/pyspark/streaming/tests/test_listener.py

for example with a sparse checkout on a machine with network access::

    git clone --filter=blob:none --no-checkout https://github.com/apache/spark.git
    cd spark && git sparse-checkout set python/pyspark/streaming/tests && git checkout v4.0.0
    cp python/pyspark/streaming/tests/test_{dstream,context,listener}.py DIR/

(bench/results/pyspark_suite/NOTES.md names the exact blobs the recorded run used). Their base
class ``PySparkStreamingTestCase`` is taken from the installed pyspark
(``pyspark/testing/streamingutils.py``, shipped in the PySpark wheel), so it matches the
pyspark version the peer runs.

Rewrites, for the dstream run only (the peer runs the files as Spark ships them):

- ``from pyspark.streaming import StreamingContext`` / ``StreamingListener`` -> ``from dstream
  import ...`` (in the tests and in the base class);
- ``from pyspark.testing.streamingutils import PySparkStreamingTestCase`` -> the rewritten
  copy of the base class.

Usage::

    .venv/bin/python -m bench.peers.pyspark_suite DIR [--engines dstream pyspark]
        [--smoke] [-k EXPR] [--json OUT.json]

``--smoke`` runs two tests per file (well under a minute per engine). Every engine runs each
file in its own pytest process on ``local[2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

SUITE_FILES = ("test_dstream.py", "test_context.py", "test_listener.py")
ENGINES = ("dstream", "pyspark")
BASE_MODULE = "suite_streamingutils"  # the base class's copy inside the temporary directory
# Two quick tests per file for --smoke (by name, as pytest's -k takes them).
SMOKE_TESTS = "test_map or test_window or test_queue_stream or test_union or test_batch_info"
FILE_TIMEOUT_S = 900  # a hung file is reported as an error, not waited on forever

_IMPORT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"^(\s*)from pyspark\.streaming import (StreamingContext|StreamingListener)\b",
            re.MULTILINE,
        ),
        r"\1from dstream import \2",
    ),
    (
        re.compile(r"^(\s*)from pyspark\.testing\.streamingutils import\b", re.MULTILINE),
        rf"\1from {BASE_MODULE} import",
    ),
)


@dataclass(frozen=True)
class Outcome:
    """One test's result: ``passed``, ``failed``, ``error`` or ``skipped``."""

    test_id: str
    result: str
    reason: str = ""


def rewrite_imports(source: str, engine: str) -> str:
    """Return ``source`` with the imports that pick the streaming engine pointed at ``engine``.

    For ``pyspark`` only the base class import moves to the local copy; for ``dstream`` the
    ``StreamingContext`` and ``StreamingListener`` imports move to dstream too.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} is not one of {ENGINES}; pass dstream or pyspark")
    rules = [
        (pattern, replacement)
        for pattern, replacement in _IMPORT_RULES
        if engine == "dstream" or "streamingutils" in pattern.pattern
    ]
    for pattern, replacement in rules:
        source = pattern.sub(replacement, source)
    return source


def one_line(text: str | None, limit: int = 160) -> str:
    """The first meaningful line of a failure message, shortened to ``limit`` characters."""
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def parse_junit(xml_text: str, file_name: str) -> list[Outcome]:
    """The outcomes in a pytest JUnit XML report, test ids as ``file::Class::test``."""
    outcomes = []
    for case in ET.fromstring(xml_text).iter("testcase"):
        class_name = case.get("classname", "").rsplit(".", 1)[-1]
        test_id = f"{file_name}::{class_name}::{case.get('name')}"
        result, reason = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                result = "failed" if tag == "failure" else tag
                reason = one_line(node.get("message") or node.text)
                break
        outcomes.append(Outcome(test_id, result, reason))
    return outcomes


def count(outcomes: list[Outcome]) -> dict[str, int]:
    """Counts by result, every result named (zero when absent)."""
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for outcome in outcomes:
        counts[outcome.result] += 1
    return counts


def prepare(upstream: Path, work: Path, engine: str) -> Path:
    """Write the rewritten test files and base class for ``engine`` under ``work/engine``."""
    import pyspark.testing.streamingutils as base

    target = work / engine
    target.mkdir(parents=True)
    base_source = Path(base.__file__).read_text()
    (target / f"{BASE_MODULE}.py").write_text(rewrite_imports(base_source, engine))
    for name in SUITE_FILES:
        source = upstream / name
        if not source.is_file():
            raise SystemExit(
                f"{source} is missing: put apache/spark's python/pyspark/streaming/tests/{name} "
                f"in {upstream} (see this script's docstring for how to get it)"
            )
        (target / name).write_text(rewrite_imports(source.read_text(), engine))
    return target


def run_file(directory: Path, name: str, select: str | None) -> list[Outcome]:
    """Run one test file with pytest in its own process; its outcomes."""
    report = directory / f"{name}.xml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(directory), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env["PYSPARK_SUBMIT_ARGS"] = (
        "--master local[2] --conf spark.ui.enabled=false "
        "--conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 "
        "pyspark-shell"
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={report}",
        "--rootdir",
        str(directory),
        name,
    ]
    if select:
        command += ["-k", select]
    try:
        subprocess.run(
            command, cwd=directory, env=env, timeout=FILE_TIMEOUT_S, check=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return [Outcome(f"{name}::*", "error", f"the file did not finish in {FILE_TIMEOUT_S} s")]
    if not report.exists():
        return [Outcome(f"{name}::*", "error", "pytest wrote no report (collection crashed)")]
    return parse_junit(report.read_text(), name)


def format_report(results: dict[str, dict[str, list[Outcome]]]) -> str:
    """Counts per file and engine, then each dstream failure with its one-line reason."""
    lines = [f"{'file':<20} {'engine':<9} {'passed':>6} {'failed':>6} {'error':>6} {'skipped':>7}"]
    for engine, per_file in results.items():
        for name, outcomes in per_file.items():
            c = count(outcomes)
            lines.append(
                f"{name:<20} {engine:<9} {c['passed']:>6} {c['failed']:>6} {c['error']:>6} "
                f"{c['skipped']:>7}"
            )
        total = count([o for outcomes in per_file.values() for o in outcomes])
        lines.append(
            f"{'total':<20} {engine:<9} {total['passed']:>6} {total['failed']:>6} "
            f"{total['error']:>6} {total['skipped']:>7}"
        )
    broken = [
        o
        for outcomes in results.get("dstream", {}).values()
        for o in outcomes
        if o.result in ("failed", "error")
    ]
    lines.append("")
    lines.append(f"dstream failures and errors: {len(broken)}")
    lines.extend(f"  {o.result:<6} {o.test_id}: {o.reason}" for o in broken)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("upstream", type=Path, help="directory holding Spark's test files")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--smoke", action="store_true", help="a few quick tests per file")
    parser.add_argument("-k", dest="select", help="pytest -k expression (overrides --smoke)")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    args = parser.parse_args(argv)
    select = args.select or (SMOKE_TESTS if args.smoke else None)
    results: dict[str, dict[str, list[Outcome]]] = {}
    with tempfile.TemporaryDirectory(prefix="pyspark-suite-") as tmp:
        for engine in args.engines:
            directory = prepare(args.upstream.resolve(), Path(tmp), engine)
            results[engine] = {name: run_file(directory, name, select) for name in SUITE_FILES}
            print(f"{engine}: done", file=sys.stderr, flush=True)
    print(format_report(results))
    if args.json:
        payload = {
            engine: {name: [asdict(o) for o in outcomes] for name, outcomes in per_file.items()}
            for engine, per_file in results.items()
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
