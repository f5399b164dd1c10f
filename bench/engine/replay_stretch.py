"""What replaying a stateless stretch as one job could gain, in plain PySpark (no engine).

Issue 36 asks replay to run >= 10x live for a light program; the engine's replay runs one
Spark job per interval (bench/README.md, "Live queries and replay"). This probe measures the
replay bench's light program (each interval's lines counted by first letter) over
``--intervals`` files of 2,000 lines three ways, on one local[2] context, alternating, and
reports the median wall time per interval of each:

* ``per_interval``: one ``textFile -> map -> reduceByKey -> saveAsTextFile`` job per file
  (what the engine does per interval today, without its bookkeeping);
* ``one_job_hadoop``: every file's ``textFile`` tagged with its interval, one union, one
  ``reduceByKey`` keyed by (interval, key), one job writing each interval's lines into its
  own directory from the tasks;
* ``one_job_python``: the same with the files read in the Python workers (no Hadoop input
  format, no JobConf per file).

Every way's lines are compared interval by interval with ``per_interval``'s.

    .venv/bin/python -m bench.engine.replay_stretch --intervals 30 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context
from dstream.sources.textgen import generate_lines


def per_interval(sc: Any, files: list[str], out: Path) -> None:
    for i, path in enumerate(files):
        sc.textFile(path).map(lambda line: (line[:1], 1)).reduceByKey(
            operator.add, 2
        ).saveAsTextFile(str(out / f"i{i:05d}"))


def _writer(out: str) -> Callable[[int, Iterable[Any]], Iterator[int]]:
    def write(split: int, records: Iterable[Any]) -> Iterator[int]:
        by_interval: dict[int, list[str]] = {}
        for (i, key), value in records:
            by_interval.setdefault(i, []).append(str((key, value)))
        for i, lines in by_interval.items():
            directory = os.path.join(out, f"i{i:05d}")
            os.makedirs(directory, exist_ok=True)
            with open(os.path.join(directory, f"part-{split:05d}"), "w") as f:
                f.write("".join(line + "\n" for line in lines))
        yield len(by_interval)

    return write


def _tagged_counts(tagged: Any, out: Path) -> None:
    tagged.reduceByKey(operator.add, 2).mapPartitionsWithIndex(_writer(str(out))).count()


def one_job_hadoop(sc: Any, files: list[str], out: Path) -> None:
    rdds = [
        sc.textFile(path).map(lambda line, i=i: ((i, line[:1]), 1)) for i, path in enumerate(files)
    ]
    _tagged_counts(sc.union(rdds), out)


def _read_tagged(item: tuple[int, str]) -> Iterator[tuple[tuple[int, str], int]]:
    i, path = item
    with open(path) as f:
        for line in f:
            yield (i, line.rstrip("\n")[:1]), 1


def one_job_python(sc: Any, files: list[str], out: Path) -> None:
    items = list(enumerate(files))
    _tagged_counts(sc.parallelize(items, min(len(items), 4)).flatMap(_read_tagged), out)


WAYS: dict[str, Callable[[Any, list[str], Path], None]] = {
    "per_interval": per_interval,
    "one_job_hadoop": one_job_hadoop,
    "one_job_python": one_job_python,
}


def lines_by_interval(out: Path) -> dict[str, list[str]]:
    return {
        d.name: sorted(x for p in d.glob("part-*") for x in p.read_text().splitlines())
        for d in sorted(out.iterdir())
        if d.is_dir()
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=30)
    p.add_argument("--records-per-interval", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3, help="rounds after one unreported warm-up")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dstream-bench-replay-stretch-"))
    files = []
    for i in range(args.intervals):
        path = work / f"f{i:05d}.txt"
        path.write_text("\n".join(generate_lines(i, args.records_per_interval, 100)) + "\n")
        files.append(str(path))
    sc = spark_context("dstream-bench-replay-stretch")
    ms: dict[str, list[float]] = {name: [] for name in WAYS}
    same: dict[str, bool] = {}
    try:
        for r in range(args.rounds + 1):
            for name, way in WAYS.items():
                out = work / f"out-{name}-{r}"
                began = time.perf_counter()
                way(sc, files, out)
                if r > 0:
                    ms[name].append(1000 * (time.perf_counter() - began) / args.intervals)
                if r == 1:
                    same[name] = lines_by_interval(out) == lines_by_interval(
                        work / "out-per_interval-1"
                    )
    finally:
        sc.stop()
    base = statistics.median(ms["per_interval"])
    result = {
        "intervals": args.intervals,
        "records_per_interval": args.records_per_interval,
        "ms_per_interval_median": {k: round(statistics.median(v), 1) for k, v in ms.items()},
        "ms_per_interval_rounds": {k: [round(x, 1) for x in v] for k, v in ms.items()},
        "ratio_to_per_interval": {k: round(statistics.median(v) / base, 3) for k, v in ms.items()},
        "same_lines_as_per_interval": same,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
