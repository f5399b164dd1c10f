"""A real HDFS for tests and demos: Hadoop's MiniDFSCluster in a child JVM.

The JVM side is ``jvm-shim/minicluster`` (build it with ``make minicluster`` or
``bash jvm-shim/minicluster/build.sh``). It speaks one JSON object per line: a ``ready`` event
on startup, then one answer per command written to its stdin. Its logging goes to
``<base_dir>/minicluster.log`` (level WARN; set ``DSTREAM_HDFS_LOG_LEVEL=INFO`` for more).

    with MiniHdfsCluster() as hdfs:
        hdfs.client().write("/x.txt", data=b"hello")
        sc.textFile(hdfs.uri + "/x.txt").collect()

``python -m testbed.hdfs`` runs one until SIGTERM/SIGINT.

This module must not import pyspark: tests start the cluster before Spark.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

import hdfs as hdfs_pkg

from testbed.jvm import java_executable

REPO_ROOT = Path(__file__).resolve().parents[1]
SHIM_DIR = REPO_ROOT / "jvm-shim" / "minicluster"
MAIN_CLASS = "io.dstream.minicluster.MiniHdfs"
BUILD_HINT = "build it with `make minicluster` or `bash jvm-shim/minicluster/build.sh`"
LOG_NAME = "minicluster.log"

# Every answer but restart-datanode is immediate; a restart waits for the NameNode to list the
# DataNode as live again (the JVM gives up after 60 s).
COMMAND_TIMEOUT_S = 90.0
SHUTDOWN_TIMEOUT_S = 60.0

_EOF = object()  # queued by the reader thread when the JVM's stdout closes


class MiniHdfsError(RuntimeError):
    """The mini cluster is not built, did not start, died, or rejected a command."""


def _classpath() -> str:
    classes = SHIM_DIR / "target" / "classes"
    lib = SHIM_DIR / "target" / "lib"
    main_class = classes / (MAIN_CLASS.replace(".", "/") + ".class")
    if not main_class.is_file() or not any(lib.glob("*.jar")):
        raise MiniHdfsError(
            f"the HDFS mini cluster is not built ({main_class} or {lib}/*.jar missing): "
            + BUILD_HINT
        )
    return f"{classes}{os.pathsep}{lib / '*'}"


def _read_lines(stdout: IO[str], lines: queue.Queue[object]) -> None:
    """Reader thread: the JVM's stdout, line by line, then _EOF."""
    try:
        for line in stdout:
            lines.put(line)
    except (OSError, ValueError):
        pass  # the pipe was closed under us by _cleanup()
    lines.put(_EOF)


class MiniHdfsCluster:
    """One NameNode and ``datanodes`` DataNodes on 127.0.0.1, with WebHDFS, in a child JVM.

    Thread-safe: each command holds a lock until its one-line answer has arrived.
    """

    def __init__(
        self,
        *,
        datanodes: int = 2,
        replication: int = 2,
        base_dir: str | None = None,
        startup_timeout_s: float = 120.0,
    ) -> None:
        self.datanodes = datanodes
        self.replication = replication
        self.startup_timeout_s = startup_timeout_s
        # Without a base_dir, start() makes a temp dir and stop() deletes it; a given one is kept
        # (and the next cluster started on it finds its files again).
        self._own_base_dir = base_dir is None
        self._base_dir = "" if base_dir is None else os.path.abspath(base_dir)
        self._proc: subprocess.Popen[str] | None = None
        self._log: IO[bytes] | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._lock = threading.Lock()
        self._ready: dict[str, Any] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> MiniHdfsCluster:
        """Launches the JVM and returns once the cluster is up (or raises MiniHdfsError)."""
        with self._lock:
            if self._proc is not None:
                raise MiniHdfsError("already started")
            java, classpath = java_executable(), _classpath()  # fail before making any directory
            if self._own_base_dir:
                self._base_dir = tempfile.mkdtemp(prefix="dstream-hdfs-")
            os.makedirs(self._base_dir, exist_ok=True)
            cmd = [
                java,
                "-Xmx1g",
                "-Djava.net.preferIPv4Stack=true",
                # Hadoop's log level (its log4j.properties says WARN); INFO or DEBUG to dig in.
                "-Ddstream.hdfs.log.level=" + os.environ.get("DSTREAM_HDFS_LOG_LEVEL", "WARN"),
                "-cp",
                classpath,
                MAIN_CLASS,
                "--base-dir",
                self._base_dir,
                "--datanodes",
                str(self.datanodes),
                "--replication",
                str(self.replication),
            ]
            if self._own_base_dir:  # the JVM deletes it at exit, even if we get killed
                cmd.append("--delete-base-dir")
            # Open until stop(), readable: the tail stays at hand even once the JVM has deleted
            # a temp base dir on its way out.
            self._log = open(self.log_path, "a+b")  # noqa: SIM115
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
                encoding="utf-8",
                bufsize=1,  # line-buffered stdin: each command reaches the JVM at once
                # Own process group: a Ctrl-C in the terminal reaches only us, and we then
                # shut the cluster down in order.
                start_new_session=True,
            )
            # A fresh queue per start: an old reader thread's EOF must not end this run.
            self._lines = queue.Queue()
            threading.Thread(
                target=_read_lines, args=(self._proc.stdout, self._lines), daemon=True
            ).start()
            try:
                ready = self._next_event(self.startup_timeout_s, "startup")
                if ready.get("event") != "ready":
                    raise MiniHdfsError(self._failure(f"unexpected first event {ready}"))
            except MiniHdfsError:
                self._cleanup()
                raise
            self._ready = ready
            return self

    def stop(self) -> None:
        """Shuts the cluster down (idempotent); kills the JVM if it does not exit in time."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                try:
                    self._send("shutdown")
                    self._next_event(SHUTDOWN_TIMEOUT_S, "shutdown")
                    proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
                except (MiniHdfsError, OSError, subprocess.TimeoutExpired):
                    pass  # _cleanup() ends it whatever state it is in
            self._cleanup()

    def __enter__(self) -> MiniHdfsCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- properties ------------------------------------------------------------------------

    @property
    def uri(self) -> str:
        """``hdfs://127.0.0.1:PORT``, the NameNode's RPC address."""
        return str(self._started()["hdfs"])

    @property
    def webhdfs_uri(self) -> str:
        """``http://127.0.0.1:PORT``, the NameNode's HTTP address (WebHDFS under /webhdfs/v1)."""
        return str(self._started()["webhdfs"])

    @property
    def base_dir(self) -> str:
        """Where the NameNode and DataNodes keep their files, and the JVM its log."""
        if not self._base_dir:
            raise MiniHdfsError("the mini cluster is not started (its temp dir is made then)")
        return self._base_dir

    @property
    def log_path(self) -> str:
        """The JVM's stderr: Hadoop's own logging (WARN and up)."""
        return os.path.join(self._base_dir, LOG_NAME)

    @property
    def alive(self) -> bool:
        """Whether the JVM is running."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def startup_ms(self) -> int:
        """How long MiniDFSCluster took to come up, as the JVM measured it."""
        return int(self._started()["startup_ms"])

    # -- commands --------------------------------------------------------------------------

    def stop_datanode(self, i: int) -> dict[str, Any]:
        """Stops DataNode ``i`` abruptly. The NameNode notices only when heartbeats time out."""
        return self._command(f"stop-datanode {int(i)}")

    def restart_datanode(self, i: int) -> dict[str, Any]:
        """Restarts DataNode ``i``; returns once the NameNode lists it as live."""
        return self._command(f"restart-datanode {int(i)}")

    def status(self) -> dict[str, Any]:
        """``live_datanodes``, ``dead_datanodes``, ``under_replicated_blocks``, ``datanodes``..."""
        return self._command("status")

    def command(self, line: str) -> dict[str, Any]:
        """Sends a raw command line; errors come back as ``{"event": "error", ...}``."""
        return self._command(line, raise_on_error=False)

    def client(self, user: str | None = None) -> Any:
        """An ``hdfs.InsecureClient`` for WebHDFS (permissions are off, any user may write)."""
        return hdfs_pkg.InsecureClient(self.webhdfs_uri, user=user or getpass.getuser())

    # -- internals -------------------------------------------------------------------------

    def _started(self) -> dict[str, Any]:
        if not self._ready:
            raise MiniHdfsError("the mini cluster is not started")
        return self._ready

    def _command(self, line: str, raise_on_error: bool = True) -> dict[str, Any]:
        with self._lock:
            if not self.alive:
                raise MiniHdfsError(self._failure("the mini cluster is not running"))
            self._send(line)
            try:
                answer = self._next_event(COMMAND_TIMEOUT_S, line)
            except MiniHdfsError:
                # A late answer would be taken for the next command's: the protocol has lost
                # its footing, so end the JVM rather than go on out of step.
                self._cleanup()
                raise
        if raise_on_error and answer.get("event") == "error":
            raise MiniHdfsError(f"{line!r}: {answer.get('message')}")
        return answer

    def _send(self, line: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()

    def _next_event(self, timeout_s: float, what: str) -> dict[str, Any]:
        """The next JSON line from the JVM; raises if it dies or is silent for ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                item = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise MiniHdfsError(
                    self._failure(f"no answer to {what!r} within {timeout_s:.0f} s")
                ) from None
            if item is _EOF:
                self._lines.put(_EOF)  # later calls see the EOF too
                if self._proc is not None:  # reap it, so that the message has its exit code
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self._proc.wait(timeout=5)
                raise MiniHdfsError(self._failure(f"the JVM exited during {what!r}"))
            try:
                event = json.loads(str(item))
            except ValueError:
                continue  # stdout is JSON only; skip anything else rather than choke on it
            if isinstance(event, dict):
                return event

    def _failure(self, what: str) -> str:
        code = self._proc.poll() if self._proc is not None else None
        status = "" if code is None else f" (exit code {code})"
        return (
            f"HDFS mini cluster: {what}{status}.\n"
            f"--- last lines of {self.log_path} ---\n{self._log_tail()}\n---\n"
            f"If it is not built or out of date, {BUILD_HINT}."
        )

    def _log_tail(self, lines: int = 40, max_bytes: int = 64 * 1024) -> str:
        try:
            if self._log is not None:
                # pread: no file offset moves (the JVM appends through O_APPEND anyway).
                fd = self._log.fileno()
                size = os.fstat(fd).st_size
                data = os.pread(fd, max_bytes, max(0, size - max_bytes))
            else:
                with open(self.log_path, "rb") as f:
                    data = f.read()[-max_bytes:]
        except OSError as e:
            return f"(no log: {e})"
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def _cleanup(self) -> None:
        """Ends the JVM however it is doing (SIGTERM, its clean path, then SIGKILL), closes
        the pipes and the log, and deletes the base dir if we made it."""
        proc, self._proc = self._proc, None
        self._ready = {}
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_base_dir and self._base_dir:
            shutil.rmtree(self._base_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m testbed.hdfs",
        description="Run an HDFS mini cluster (NameNode + DataNodes + WebHDFS) until "
        "SIGTERM or Ctrl-C.",
    )
    parser.add_argument("--datanodes", type=int, default=2)
    parser.add_argument("--replication", type=int, default=2)
    parser.add_argument(
        "--base-dir", default=None, help="keep the cluster's data here (default: a temp dir)"
    )
    args = parser.parse_args(argv)

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    cluster = MiniHdfsCluster(
        datanodes=args.datanodes, replication=args.replication, base_dir=args.base_dir
    )
    try:
        cluster.start()
    except MiniHdfsError as e:
        print(e, file=sys.stderr)
        return 1
    try:
        print(f"HDFS mini cluster up in {cluster.startup_ms / 1000:.1f} s", flush=True)
        print(f"  hdfs:     {cluster.uri}", flush=True)
        print(f"  webhdfs:  {cluster.webhdfs_uri}/webhdfs/v1/", flush=True)
        print(f"  datanodes {args.datanodes}, replication {args.replication}", flush=True)
        print(f"  base dir: {cluster.base_dir}", flush=True)
        print(f"  log:      {cluster.log_path}", flush=True)
        print("SIGTERM or Ctrl-C stops it.", flush=True)
        # Wake up now and then to notice a JVM that died on its own.
        while not stop.wait(1.0):
            if not cluster.alive:
                print(cluster._failure("the JVM exited on its own"), file=sys.stderr)
                return 1
    finally:
        cluster.stop()
    print("HDFS mini cluster stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
