"""Throughput (issue 7, the paper's Sec. 6.1): the highest input rate (records/s) each system
sustains on Grep, WordCount (30 s sliding window with the inverse) and TopK (10 most frequent
words over 30 s), on 100-byte records written as one file per interval into a watched
directory, the same files for every system.

Sustained means: for ``--sustain-s`` seconds after ``--warmup-s``, mean interval processing
time below the interval and p95 end-to-end latency below ``--latency-bound-ms`` (default
twice the interval: 2 s with 1 s intervals, 1 s with 0.5 s). End-to-end latency of a file =
(time the output function of the interval that read it returned) - (time its rename into
the watched directory returned). The rate is found by a search: doubling from
``--start-rate`` until a probe fails, bisection to ``--tolerance``, the final point repeated
(bench/paper/throughput_search.py). Every probe is a process of its own with a fresh
SparkContext on ``local[2]`` (bench/paper/throughput_probe.py); the systems are in
bench/paper/throughput_systems.py.

    # the full search (long: hours), then the report (BENCHMARKS.md, PNG plots)
    .venv/bin/python -m bench.paper.throughput --interval-ms 1000
    .venv/bin/python -m bench.paper.throughput --interval-ms 500
    .venv/bin/python -m bench.paper.throughput --report
    # the same program in every system? each runs over the same 4 files; outputs must agree
    .venv/bin/python -m bench.paper.throughput --check
    # a smoke run: fixed rates instead of the search
    .venv/bin/python -m bench.paper.throughput --rates 5000 --sustain-s 8 --warmup-s 4
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.paper.throughput_input import RecordPool, Writer
from bench.paper.throughput_probe import ProbeParams
from bench.paper.throughput_search import Criteria, ProbeSummary, search, verdict
from bench.paper.throughput_systems import PATTERN, SYSTEMS, WORKLOADS, top

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent


def probe_in_subprocess(p: ProbeParams, out: Path, timeout_s: float) -> dict[str, Any]:
    """Run one probe in its own process group; kill the group (its JVM and Python workers
    included) if it outlives ``timeout_s``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    params = {k: v for k, v in vars(p).items()}
    cmd = [sys.executable, "-m", "bench.paper.throughput_probe", json.dumps(params), str(out)]
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise RuntimeError(
            f"probe {p.system}/{p.workload} at {p.rate} records/s ran over {timeout_s:.0f} s "
            "and was killed; check the machine is idle, or shorten --sustain-s"
        ) from None
    if code != 0 or not out.exists():
        raise RuntimeError(
            f"probe {p.system}/{p.workload} at {p.rate} records/s exited with {code}; "
            f"rerun it alone: {shlex.join(cmd)}"
        )
    return json.loads(out.read_text())


def versions() -> dict[str, str]:
    import pyarrow
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "pyarrow": pyarrow.__version__,
        "java": (java.stderr.splitlines() or ["?"])[0],
        "dstream_commit": commit.stdout.strip(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
    }


def probe_params(args: argparse.Namespace, system: str, workload: str, rate: int) -> ProbeParams:
    return ProbeParams(
        system=system,
        workload=workload,
        rate=rate,
        interval_ms=args.interval_ms,
        warmup_s=args.warmup_s,
        sustain_s=args.sustain_s,
        latency_bound_ms=args.criteria.latency_bound_ms,
        master=args.master,
        pool_records=args.pool_records,
        pool_cache=args.pool_cache,
        max_warmup_s=args.max_warmup_s,
        work_root=args.work_root,
    )


def measure(args: argparse.Namespace, system: str, workload: str) -> dict[str, Any]:
    """Search (or probe ``--rates``) one system on one workload; every probe's JSON is kept."""
    tag = f"{args.interval_ms}ms-{workload}-{system}"
    seq = 0

    def probe(rate: int) -> ProbeSummary:
        nonlocal seq
        seq += 1
        p = probe_params(args, system, workload, rate)
        out = Path(args.out) / "probes" / f"{tag}-{seq:02d}-{rate}.json"
        warmup_s = p.max_warmup_s if p.max_warmup_s is not None else 2 * p.warmup_s + 10
        result = probe_in_subprocess(p, out, timeout_s=warmup_s + p.sustain_s + 180)
        if result["summary"] is None:
            raise RuntimeError(f"probe {out} measured nothing; make --sustain-s longer")
        summary = ProbeSummary.from_json(result["summary"])
        ok, why = verdict(summary, args.criteria)
        print(
            f"{tag} {rate:>8} rec/s: mean proc {summary.mean_processing_ms:6.0f} ms, "
            f"p95 latency {summary.p95_latency_ms:6.0f} ms -> {'pass' if ok else 'FAIL: ' + why}",
            flush=True,
        )
        return summary

    if args.rates:
        probes = []
        for rate in args.rates:
            s = probe(rate)
            probes.append((s, *verdict(s, args.criteria)))
        sustained = max((s.rate for s, ok, _ in probes if ok), default=None)
        capped = False
    else:
        found = search(
            probe,
            args.criteria,
            start_rate=args.start_rate,
            max_rate=args.max_rate,
            min_rate=args.min_rate,
            tolerance=args.tolerance,
            repeats=args.repeats,
        )
        probes, sustained, capped = found.probes, found.sustained_rate, found.capped
    row = {
        "system": system,
        "workload": workload,
        "interval_ms": args.interval_ms,
        "latency_bound_ms": args.criteria.latency_bound_ms,
        "warmup_s": args.warmup_s,
        "max_warmup_s": args.max_warmup_s,
        "sustain_s": args.sustain_s,
        "searched": not args.rates,
        "command": shlex.join(["python", "-m", "bench.paper.throughput", *sys.argv[1:]]),
        "measured": time.strftime("%Y-%m-%d %H:%M %Z"),
        "dstream_commit": args.commit,
        "sustained_rate": sustained,
        "capped": capped,
        "probes": [{**s.to_json(), "passed": ok, "why": why} for s, ok, why in probes],
    }
    (Path(args.out) / f"{tag}.json").write_text(json.dumps(row, indent=2))
    return row


# -- --check -------------------------------------------------------------------------------


def expected(args: argparse.Namespace, files: int, rate: int) -> dict[str, Any]:
    """The oracle, in plain Python over the very bytes the writer will write."""
    pool = RecordPool(args.pool_records, args.pool_cache)
    counts = Writer("", pool, rate, args.interval_ms, files).counts(files)
    per_file = [pool.file(n, c).decode("ascii").splitlines() for n, c in enumerate(counts)]
    words: Counter[str] = Counter(w for lines in per_file for line in lines for w in line.split())
    return {
        "grep_per_file": {
            f"in-{n:07d}.txt": sum(PATTERN in line for line in lines)
            for n, lines in enumerate(per_file)
        },
        "wordcount": dict(words),
        "topk": top(dict(words)),
    }


def check_one(workload: str, want: dict[str, Any], probe: dict[str, Any]) -> list[str]:
    """What is wrong with one system's outputs (an empty list: they are right)."""
    problems = []
    results = probe["results"]
    batches = {str(b["key"]): b for b in probe["batches"]}
    missing = [f["name"] for f in probe["files"] if f["latency_ms"] is None]
    if missing:
        problems.append(f"no result for the interval(s) that read {missing}")
    if workload == "grep":
        total = sum(r for k, r in results.items() if r is not None and batches[k]["files"])
        if total != sum(want["grep_per_file"].values()):
            problems.append(f"grep total {total} != {sum(want['grep_per_file'].values())}")
        for k, b in batches.items():
            if len(b["files"]) == 1 and results.get(k) != want["grep_per_file"][b["files"][0]]:
                problems.append(f"grep of {b['files'][0]}: {results.get(k)}")
        return problems
    last = probe["files"][-1]
    final = results.get(str(last["batch"]))
    if workload == "wordcount" and final != want["wordcount"]:
        diff = {
            w: (final.get(w) if final else None, c)
            for w, c in want["wordcount"].items()
            if not final or final.get(w) != c
        }
        problems.append(f"window counts differ on {len(diff)} words, e.g. {list(diff.items())[:3]}")
    if workload == "topk" and final != want["topk"]:
        problems.append(f"top {final} != {want['topk']}")
    return problems


def check(args: argparse.Namespace) -> int:
    files, rate = 4, 2000
    failures = 0
    summary = Path(args.out) / "check.json"
    # Merged with earlier checks, so one system can be re-checked alone.
    report: dict[str, Any] = json.loads(summary.read_text()) if summary.exists() else {}
    for workload in args.workloads:
        want = expected(args, files, rate)
        for system in args.systems:
            p = ProbeParams(
                system=system,
                workload=workload,
                rate=rate,
                interval_ms=args.interval_ms,
                warmup_s=0,
                sustain_s=files * args.interval_ms / 1000,
                latency_bound_ms=30_000,  # only how long to wait for the last result
                master=args.master,
                pool_records=args.pool_records,
                pool_cache=args.pool_cache,
                work_root=args.work_root,
                files=files,
                keep_results=True,
            )
            out = Path(args.out) / "check" / f"{workload}-{system}.json"
            probe = probe_in_subprocess(p, out, timeout_s=240)
            problems = check_one(workload, want, probe)
            failures += bool(problems)
            reads = [b["files"] for b in probe["batches"] if b["files"]]
            report[f"{workload}/{system}"] = {
                "problems": problems,
                "batches_files": reads,
                "dstream_commit": versions()["dstream_commit"],
            }
            print(f"check {workload:9} {system:17} {problems or 'ok'}")
            print(f"      intervals read {reads}", flush=True)
    summary.write_text(json.dumps(report, indent=2))
    print("all outputs agree" if not failures else f"{failures} system/workload(s) disagree")
    return 1 if failures else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    p.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--latency-bound-ms", type=int, default=None, help="default: 2 x interval")
    p.add_argument("--sustain-s", type=float, default=60)
    p.add_argument("--warmup-s", type=float, default=20)
    p.add_argument(
        "--max-warmup-s",
        type=float,
        default=None,
        help="longest warm-up while the system drains its start-up backlog "
        "(default 2 x --warmup-s + 10)",
    )
    p.add_argument("--start-rate", type=int, default=5000)
    p.add_argument("--max-rate", type=int, default=2_000_000)
    p.add_argument("--min-rate", type=int, default=250)
    p.add_argument("--tolerance", type=float, default=0.1)
    p.add_argument("--repeats", type=int, default=1, help="runs of the final point")
    p.add_argument("--rates", type=int, nargs="+", help="probe these rates instead of searching")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--pool-records", type=int, default=500_000)
    p.add_argument("--pool-cache", default="/tmp/dstream-throughput-pool")
    p.add_argument(
        "--work-root",
        default=None,
        help="where each probe's watched directory goes (default: /dev/shm if writable, "
        "else the system's temporary directory)",
    )
    p.add_argument("--out", default=str(BENCH / "results" / "throughput"))
    p.add_argument("--check", action="store_true", help="cross-check the systems' outputs")
    p.add_argument("--report", action="store_true", help="write BENCHMARKS.md and the plots")
    args = p.parse_args()
    if args.report:
        from bench.paper.throughput_report import write_report

        write_report(Path(args.out), ROOT / "BENCHMARKS.md")
        return 0
    args.criteria = Criteria.for_interval(args.interval_ms, args.latency_bound_ms)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.check:
        return check(args)
    run: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "bench.paper.throughput", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "versions": versions(),
    }
    (Path(args.out) / f"run-{args.interval_ms}ms.json").write_text(json.dumps(run, indent=2))
    args.commit = run["versions"]["dstream_commit"]
    for workload in args.workloads:
        for system in args.systems:
            row = measure(args, system, workload)
            print(
                f"== {workload} {system}: sustained {row['sustained_rate']} records/s", flush=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
