"""A Spark standalone cluster on this machine whose workers are *different hosts* to Spark.

``local-cluster`` runs every executor on one host, and Spark never starts a speculative copy
of a task on a host where that task already has an attempt (TaskSetManager's
``hasAttemptOnHost``), so speculation cannot be shown there. Here the Master and Workers
are JVMs started from the pinned pyspark wheel's jars, each Worker bound to its own loopback
address (127.0.0.2, 127.0.0.3, ...; Linux routes all of 127.0.0.0/8 to lo), so its executors
report distinct hosts.

    with StandaloneCluster(workers=3) as cluster:
        sc = SparkContext(conf=recommended_conf(cluster.master_url, "app"))

``python -m testbed.standalone --workers 3`` runs one until SIGTERM/SIGINT.
This module must not import pyspark's context: tests start the cluster before Spark.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from testbed.jvm import java_executable

__all__ = ["StandaloneCluster", "StandaloneError"]


class StandaloneError(RuntimeError):
    """The cluster did not start or a worker did not register."""


def _spark_home() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise StandaloneError("pyspark is not installed: run `make setup`")
    home = Path(spec.origin).parent
    if not (home / "jars").is_dir():
        raise StandaloneError(f"{home}/jars is missing: the pyspark install is incomplete")
    return home


# What the Master's log says once it listens (ports it chose itself: a port picked here and
# released before the JVM binds it can be taken meanwhile, and Spark then silently binds the
# next one; two clusters started at once by two test processes met that way).
_MASTER_PORT = re.compile(r"Successfully started service 'sparkMaster' on port (\d+)")
_WEBUI_PORT = re.compile(r"Successfully started service 'MasterUI' on port (\d+)")


class StandaloneCluster:
    def __init__(
        self,
        workers: int = 3,
        cores: int = 1,
        memory_mb: int = 1024,
        base_dir: str | None = None,
        start_timeout_s: float = 90.0,
    ) -> None:
        if not 1 <= workers <= 200:
            raise ValueError(f"workers={workers} must be between 1 and 200")
        self.workers = workers
        self.cores = cores
        self.memory_mb = memory_mb
        self.start_timeout_s = start_timeout_s
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="dstream-standalone-"))
        self.master_port = 0
        self.webui_port = 0
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def worker_host(self, i: int) -> str:
        return f"127.0.0.{i + 2}"

    def _launch(self, name: str, main: str, args: list[str], host: str) -> None:
        home = _spark_home()
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_SCALA_VERSION": "2.13",
            "SPARK_LOCAL_IP": host,
            "SPARK_LOG_DIR": str(self.base_dir),
        }
        log = open(self.base_dir / f"{name}.log", "wb")  # noqa: SIM115 (kept open for the child)
        cmd = [java_executable(), "-Xmx256m", "-cp", f"{home}/jars/*", main, *args]
        self._procs.append(
            subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.base_dir)
        )

    def state(self) -> dict[str, Any]:
        """The Master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json", timeout=5) as r:
            result: dict[str, Any] = json.loads(r.read())
        return result

    def alive_workers(self) -> list[str]:
        try:
            workers = self.state().get("workers", [])
        except OSError:
            return []
        return sorted(w["host"] for w in workers if w.get("state") == "ALIVE")

    def _master_ports(self, deadline: float) -> tuple[int, int]:
        """The RPC and web UI ports the Master bound, read from its log."""
        log = self.base_dir / "master.log"
        pause = threading.Event()
        while True:
            text = log.read_text(errors="replace") if log.exists() else ""
            rpc, web = _MASTER_PORT.search(text), _WEBUI_PORT.search(text)
            if rpc and web:
                return int(rpc.group(1)), int(web.group(1))
            if self._procs[0].poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise StandaloneError(f"the standalone Master did not start; see {log}")
            pause.wait(0.1)

    def start(self) -> StandaloneCluster:
        deadline = time.monotonic() + self.start_timeout_s
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            [*("--host", "127.0.0.1", "--port", "0", "--webui-port", "0")],
            "127.0.0.1",
        )
        self.master_port, self.webui_port = self._master_ports(deadline)
        for i in range(self.workers):
            host = self.worker_host(i)
            work = self.base_dir / f"work-{i}"
            work.mkdir(exist_ok=True)
            self._launch(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                [
                    *("--host", host, "--port", "0", "--webui-port", "0"),
                    *("--cores", str(self.cores), "--memory", f"{self.memory_mb}M"),
                    *("--work-dir", str(work), self.master_url),
                ],
                host,
            )
        pause = threading.Event()
        want = sorted(self.worker_host(i) for i in range(self.workers))
        while self.alive_workers() != want:
            dead = [p.args for p in self._procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                raise StandaloneError(
                    f"standalone cluster did not come up (workers alive: {self.alive_workers()}, "
                    f"exited: {len(dead)}); logs in {self.base_dir}"
                )
            pause.wait(0.2)
        return self

    def stop(self) -> None:
        for proc in reversed(self._procs):  # workers first: they kill their executors
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--memory-mb", type=int, default=1024)
    args = p.parse_args(argv)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with StandaloneCluster(args.workers, args.cores, args.memory_mb) as cluster:
        print(f"master: {cluster.master_url}  (web UI http://127.0.0.1:{cluster.webui_port})")
        print(f"workers: {', '.join(cluster.alive_workers())}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            done.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
