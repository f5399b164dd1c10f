"""A real Apache Kafka broker for tests, demos and benchmarks: KRaft mode (broker and
controller in one JVM, no ZooKeeper), on 127.0.0.1, on free ports.

The jars are Kafka's own, from Maven Central (``make kafka`` or
``bash jvm-shim/kafka/build.sh`` resolves them into ``jvm-shim/kafka/target/lib``); nothing
is compiled. :meth:`KafkaBroker.start` formats the storage directory once
(``kafka.tools.StorageTool format``) and runs ``kafka.Kafka`` with a generated
``server.properties``; it returns once the broker answers a metadata request::

    with KafkaBroker() as broker:
        broker.create_topic("events", partitions=3)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
        ...
        broker.restart()            # the same data directory and port: a broker restart

``python -m testbed.kafka`` runs one until SIGTERM or Ctrl-C and prints its address. The
broker's log (WARN and up) goes to ``<data dir>/broker.log``. Topic administration uses
confluent-kafka (the ``kafka`` extra), the client dstream reads Kafka with.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[1]
JARS = REPO_ROOT / "jvm-shim" / "kafka" / "target" / "lib"
LOG4J_CONFIG = REPO_ROOT / "jvm-shim" / "kafka" / "log4j2.properties"
BUILD_HINT = "resolve its jars with `make kafka` or `bash jvm-shim/kafka/build.sh`"
LOG_NAME = "broker.log"
NODE_ID = 1

__all__ = ["KafkaBroker", "KafkaBrokerError", "free_port"]


def cluster_id() -> str:
    """A random KRaft cluster id (a UUID in URL-safe base64) that does not start with "-",
    as Kafka's own ``Uuid.randomUuid`` makes them: one in 64 does, and the storage tool's
    argument parser took it for an option ("--cluster-id/-t: expected one argument"), which
    failed every Kafka test of one fresh-clone run (2026-12-04)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


class KafkaBrokerError(RuntimeError):
    """The broker is not built, did not start, or died."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The JVM runs under a small shell that ends it (SIGTERM: a controlled shutdown) when its
# stdin — a pipe from this process — closes: on stop(), and when this process dies however
# it dies (even SIGKILL), so a crashed test run leaves no broker behind. The shell exits
# with the JVM. ("$@" is the java command line.)
_WATCHER = 'exec 3<&0; "$@" & pid=$!; (read -r _ <&3; kill -TERM "$pid" 2>/dev/null) & wait "$pid"'


def _classpath() -> str:
    if not any(JARS.glob("kafka_2.13-*.jar")):
        raise KafkaBrokerError(f"the Kafka broker's jars are not in {JARS}: {BUILD_HINT}")
    return str(JARS / "*")


def server_properties(data_dir: Path, port: int, controller_port: int) -> dict[str, str]:
    """The settings of a single-node KRaft cluster on loopback (pure)."""
    return {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir / "logs"),
        # One node: every internal topic has one replica.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Topics are created by the tests, never by a consumer asking for metadata.
        "auto.create.topics.enable": "false",
        "delete.topic.enable": "true",
        # Small segments so that retention tests can delete old records quickly.
        "log.segment.bytes": str(16 * 1024 * 1024),
        "log.retention.check.interval.ms": "1000",
        "log.initial.task.delay.ms": "1000",
        "num.partitions": "1",
    }


class KafkaBroker:
    """One Kafka broker+controller (KRaft) on 127.0.0.1 in a child JVM.

    ``port`` and ``controller_port`` are chosen free at the first start and kept, and so is
    ``data_dir`` (a temporary directory unless given): :meth:`restart` brings the same broker
    back. :meth:`close` (or leaving the ``with`` block) stops it and deletes a temporary
    data directory.
    """

    def __init__(
        self,
        *,
        data_dir: str | None = None,
        port: int | None = None,
        controller_port: int | None = None,
        heap_mb: int = 512,
        startup_timeout_s: float = 120.0,
        overrides: dict[str, str] | None = None,
    ) -> None:
        self._own_dir = data_dir is None
        self._data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self.port = port
        self.controller_port = controller_port
        self.heap_mb = heap_mb
        self.startup_timeout_s = startup_timeout_s
        self.overrides = dict(overrides or {})
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._lock = threading.RLock()
        self.startup_s: float | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> KafkaBroker:
        """Format the storage (first start only), launch the JVM, wait until it serves."""
        from testbed.jvm import java_executable

        with self._lock:
            if self.alive:
                raise KafkaBrokerError(f"the broker at {self.bootstrap} is already running")
            java, classpath = java_executable(), _classpath()
            if self._data_dir is None:
                self._data_dir = Path(tempfile.mkdtemp(prefix="dstream-kafka-"))
            self._data_dir.mkdir(parents=True, exist_ok=True)
            self.port = self.port or free_port()
            self.controller_port = self.controller_port or free_port()
            props = server_properties(self._data_dir, self.port, self.controller_port)
            props.update(self.overrides)
            config = self._data_dir / "server.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            self._log = open(self.log_path, "ab")  # noqa: SIM115 (open until stop())
            jvm = [
                java,
                f"-Xmx{self.heap_mb}m",
                "-Djava.net.preferIPv4Stack=true",
                "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                "-Ddstream.kafka.log.level=" + os.environ.get("DSTREAM_KAFKA_LOG_LEVEL", "WARN"),
                "-cp",
                classpath,
            ]
            began = time.monotonic()
            if not (self._data_dir / "logs" / "meta.properties").exists():
                self._format(jvm, config)
            self._proc = subprocess.Popen(
                ["sh", "-c", _WATCHER, "kafka-broker", *jvm, "kafka.Kafka", str(config)],
                stdin=subprocess.PIPE,
                stdout=self._log,
                stderr=self._log,
                # Its own process group: a Ctrl-C reaches only us (we stop it in order), and
                # kill() ends the shell, the JVM and the watcher at once.
                start_new_session=True,
            )
            try:
                self._wait_until_serving(began + self.startup_timeout_s)
            except KafkaBrokerError:
                self._end_process(kill=True)
                raise
            self.startup_s = time.monotonic() - began
            return self

    def _format(self, jvm: list[str], config: Path) -> None:
        storage_tool = [*jvm, "kafka.tools.StorageTool", "format"]
        done = subprocess.run(
            [*storage_tool, f"--cluster-id={cluster_id()}", "-c", str(config)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            raise KafkaBrokerError(
                f"formatting the broker's storage in {self._data_dir} failed "
                f"(exit code {done.returncode}):\n{done.stderr.decode(errors='replace')[-3000:]}"
            )

    def _wait_until_serving(self, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        pause = threading.Event()
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                raise KafkaBrokerError(self._failure("the broker's JVM exited during startup"))
            with contextlib.suppress(Exception):
                if admin.list_topics(timeout=2).brokers:
                    return
            if time.monotonic() > deadline:
                raise KafkaBrokerError(self._failure("no answer to a metadata request"))
            pause.wait(0.2)

    def stop(self) -> None:
        """Shut the broker down cleanly (SIGTERM: a controlled shutdown), keeping its data
        directory and ports for a later :meth:`start`. Idempotent."""
        with self._lock:
            self._end_process(kill=False)

    def kill(self) -> None:
        """End the broker abruptly (SIGKILL), as a crash would; its data stays."""
        with self._lock:
            self._end_process(kill=True)

    def restart(self) -> None:
        """Stop and start again on the same data directory and port."""
        with self._lock:
            self.stop()
            self.start()

    def close(self) -> None:
        """Stop, and delete the data directory if it is a temporary one."""
        with self._lock:
            self.stop()
            if self._own_dir and self._data_dir is not None:
                shutil.rmtree(self._data_dir, ignore_errors=True)
                self._data_dir = None

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _end_process(self, kill: bool) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()  # the watcher sends the JVM SIGTERM
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- properties --------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:PORT``: what ``bootstrap.servers`` names."""
        if self.port is None:
            raise KafkaBrokerError("the broker has no port before its first start()")
        return f"127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise KafkaBrokerError("the broker has no data directory before start()")
        return self._data_dir

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    # -- topics --------------------------------------------------------------------------------
    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(
        self, name: str, partitions: int = 1, config: dict[str, str] | None = None
    ) -> None:
        """Create ``name`` (one replica) and wait until every partition has a leader."""
        from confluent_kafka.admin import NewTopic

        admin = self.admin()
        future = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name]
        future.result(30)
        self._wait_for(lambda: self._leaders(admin, name) == partitions, f"topic {name} ready")

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` and wait until the broker no longer lists it."""
        admin = self.admin()
        admin.delete_topics([name])[name].result(30)
        self._wait_for(lambda: self._leaders(admin, name) == 0, f"topic {name} deleted")

    def add_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions."""
        from confluent_kafka.admin import NewPartitions

        admin = self.admin()
        admin.create_partitions([NewPartitions(name, total)])[name].result(30)
        self._wait_for(lambda: self._leaders(admin, name) == total, f"topic {name} grown")

    def end_offsets(self, name: str) -> dict[int, int]:
        """Partition -> the offset the next record will get (the log end)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        admin = self.admin()
        count = self._leaders(admin, name)
        request = {TopicPartition(name, p): OffsetSpec.latest() for p in range(count)}
        answers = admin.list_offsets(request, request_timeout=30)
        return {tp.partition: int(f.result(30).offset) for tp, f in answers.items()}

    def producer_config(self, **overrides: Any) -> dict[str, Any]:
        """An idempotent producer's settings for this broker (acks=all, no duplicates on
        retry, order kept per partition)."""
        return {
            "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            **overrides,
        }

    @staticmethod
    def _leaders(admin: Any, name: str) -> int:
        topic = admin.list_topics(topic=name, timeout=10).topics.get(name)
        if topic is None or topic.error is not None:
            return 0
        return sum(1 for p in topic.partitions.values() if p.leader >= 0)

    @staticmethod
    def _wait_for(condition: Any, what: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        pause = threading.Event()
        while True:
            with contextlib.suppress(Exception):
                if condition():
                    return
            if time.monotonic() > deadline:
                raise KafkaBrokerError(f"timed out after {timeout_s} s waiting for {what}")
            pause.wait(0.1)

    # -- diagnostics ---------------------------------------------------------------------------
    def _failure(self, what: str) -> str:
        code = self._proc.poll() if self._proc is not None else None
        status = "" if code is None else f" (exit code {code})"
        return (
            f"Kafka broker at {self.bootstrap}: {what}{status}.\n"
            f"--- last lines of {self.log_path} ---\n{self.log_tail()}\n---\n"
            f"If its jars are missing or stale, {BUILD_HINT}."
        )

    def log_tail(self, lines: int = 40) -> str:
        try:
            data = self.log_path.read_bytes()[-64 * 1024 :]
        except OSError as e:
            return f"(no log: {e})"
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m testbed.kafka",
        description="Run a single-node Kafka broker (KRaft, loopback) until SIGTERM or Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--data-dir", default=None, help="keep the data here (default: temp)")
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="create this topic once the broker is up (repeatable)",
    )
    args = parser.parse_args(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    broker = KafkaBroker(data_dir=args.data_dir, port=args.port)
    try:
        broker.start()
    except KafkaBrokerError as e:
        print(e, file=sys.stderr)
        broker.close()
        return 1
    try:
        for spec in args.topic:
            name, _, parts = spec.partition(":")
            broker.create_topic(name, int(parts or 1))
        print(f"Kafka broker (KRaft) up in {broker.startup_s:.1f} s", flush=True)
        print(f"  bootstrap.servers: {broker.bootstrap}", flush=True)
        print(f"  data dir:          {broker.data_dir}", flush=True)
        print(f"  log:               {broker.log_path}", flush=True)
        for spec in args.topic:
            print(f"  topic:             {spec}", flush=True)
        print("SIGTERM or Ctrl-C stops it.", flush=True)
        while not stop.wait(1.0):
            if not broker.alive:
                print(broker._failure("the JVM exited on its own"), file=sys.stderr)
                return 1
    finally:
        broker.close()
    print("Kafka broker stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
