"""What reading an interval's files by exact, escaped paths costs against the plain
comma-joined path list Spark's textFile takes (issue 14, item 7).

Both read the same files through ``sc.textFile`` (the JVM reads the lines and hands them to
Python as strings); the exact form only escapes glob characters in each path, so the two
should take the same time. Each way counts the lines of --mb megabytes of text in --files
files, alternating, --repeats times; the median of each is printed as JSON.

    .venv/bin/python -m bench.inputs.file_paths --mb 50 --files 10 --repeats 7
    .venv/bin/python -m bench.inputs.file_paths --smoke     # 2 MB, 2 repeats: that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common.spark import spark_context
from dstream.storage.paths import hadoop_input_groups

if TYPE_CHECKING:
    from pyspark import RDD


def write_files(directory: Path, mb: int, files: int) -> list[str]:
    line = b"the quick brown fox jumps over the lazy dog 0123456789 " * 2 + b"\n"
    per_file = mb * 1_000_000 // files // len(line)
    paths = []
    for i in range(files):
        path = directory / f"part-{i:03d}.txt"
        path.write_bytes(line * per_file)
        paths.append(f"file://{path}")
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="2 MB, 2 repeats")
    args = parser.parse_args()
    if args.smoke:
        args.mb, args.repeats = 2, 2
    sc = spark_context("bench-file-paths")
    try:
        with tempfile.TemporaryDirectory(prefix="dstream-bench-paths-") as tmp:
            paths = write_files(Path(tmp), args.mb, args.files)

            def exact() -> RDD[str]:  # as dstream.sources.file_readers.read_text
                rdds = [sc.textFile(group) for group in hadoop_input_groups(paths)]
                return rdds[0] if len(rdds) == 1 else sc.union(rdds)

            ways = {"comma_joined": lambda: sc.textFile(",".join(paths)), "exact": exact}
            counts = {name: way().count() for name, way in ways.items()}  # warm up, check
            assert len(set(counts.values())) == 1, counts
            seconds: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(args.repeats):
                for name, way in ways.items():
                    began = time.perf_counter()
                    way().count()
                    seconds[name].append(time.perf_counter() - began)
    finally:
        sc.stop()
    print(
        json.dumps(
            {
                "mb": args.mb,
                "files": args.files,
                "lines": counts["exact"],
                "cpus": os.cpu_count(),
                "median_s": {k: round(statistics.median(v), 3) for k, v in seconds.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
