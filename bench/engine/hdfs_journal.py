"""How long one metadata record takes to reach HDFS durably: the two ways the driver can
write it, on the same mini cluster in the same run.

* FileContext: Hadoop's client in the driver JVM, called through Py4J (what dstream uses):
  create + write + hsync + close, then ``FileContext.rename(tmp, final, Rename.NONE)``.
* WebHDFS: the ``hdfs`` package over HTTP: CREATE (NameNode redirect, then DataNode),
  then RENAME. (WebHDFS's RENAME is FileSystem.rename: onto an existing directory it moves
  the source *inside* it, so "never replace" needs an extra check first.)

Each record is a realistic size (apps/recoverable.py writes about 10 KB) and each way writes
--records of them through MetadataJournal, alternating, so drift affects both alike.

    .venv/bin/python -m bench.engine.hdfs_journal --records 200
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context


class WebHdfsFileSystem:
    """The journal's FileSystem protocol over WebHDFS, for this measurement only."""

    def __init__(self, client: Any, prefix: str) -> None:
        self._c, self._prefix = client, prefix

    def _p(self, path: str) -> str:
        return path[len(self._prefix) :] if path.startswith(self._prefix) else path

    def list_names(self, directory: str) -> list[str]:
        return list(self._c.list(self._p(directory))) if self.exists(directory) else []

    def exists(self, path: str) -> bool:
        return self._c.status(self._p(path), strict=False) is not None

    def mkdirs(self, path: str) -> None:
        self._c.makedirs(self._p(path))

    def delete(self, path: str) -> None:
        self._c.delete(self._p(path), recursive=True)

    def read_bytes(self, path: str) -> bytes:
        with self._c.read(self._p(path)) as r:
            data: bytes = r.read()
        return data

    def write_bytes(self, path: str, data: bytes) -> None:
        self._c.write(self._p(path), data=data, overwrite=True)

    def rename(self, src: str, dst: str) -> None:
        if self.exists(dst):
            raise OSError(f"{dst} exists")
        self._c.rename(self._p(src), self._p(dst))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--records", type=int, default=200)
    p.add_argument("--size", type=int, default=10_362, help="bytes per record")
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "hdfs_journal.json")
    )
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from testbed.hdfs import MiniHdfsCluster

    with MiniHdfsCluster(datanodes=2, replication=2) as cluster:
        from dstream.storage.filesystem import HadoopFileSystem
        from dstream.storage.journal import MetadataJournal

        sc = spark_context("dstream-bench-hdfs-journal")
        sc._jsc.hadoopConfiguration().set("dfs.replication", "2")
        payload = os.urandom(args.size)
        ways: dict[str, MetadataJournal] = {
            "FileContext via Py4J": MetadataJournal(
                HadoopFileSystem(sc, cluster.uri), f"{cluster.uri}/bench/fc"
            ),
            "WebHDFS (hdfs package)": MetadataJournal(
                WebHdfsFileSystem(cluster.client(), cluster.uri), f"{cluster.uri}/bench/web"
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        for journal in ways.values():
            journal.check_directory(create=True)
            for _ in range(10):  # warm-up: connections, JIT
                journal.write(payload)
        for _ in range(args.records):
            for name, journal in ways.items():
                began = time.perf_counter()
                journal.write(payload)
                times[name].append((time.perf_counter() - began) * 1000)
        sc.stop()
    result = {
        name: {
            "median_ms": round(statistics.median(t), 2),
            "p90_ms": round(statistics.quantiles(t, n=10)[-1], 2),
        }
        for name, t in times.items()
    }
    base = result["FileContext via Py4J"]["median_ms"]
    print(f"one {args.size}-byte metadata record, written + renamed, {args.records} each:")
    for name, r in result.items():
        print(
            f"  {name:<24} median {r['median_ms']:6.1f} ms  p90 {r['p90_ms']:6.1f} ms"
            f"  ({r['median_ms'] / base:.2f}x)"
        )
    Path(args.out).write_text(json.dumps({"args": vars(args), "result": result}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
