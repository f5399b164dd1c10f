"""PyFlink's DataStream API with Python functions on the peers harness's input (bench/peers,
#62), as PyFlink's docs write such programs: a ``FileSource`` of text lines monitoring the
watched directory, ``filter``/``map`` in Python, ``key_by`` and, for Grep, a 1 s tumbling
processing-time window per event second reduced in Python; for the running total a
``KeyedProcessFunction`` with a ``ValueState`` (one updated total per record); WordCount
as ``key_by(word)`` over sliding processing-time windows (``--window-ms`` sliding by the
interval) reduced in Python, each count with its window's end (a ``ProcessWindowFunction``
beside the reduce, as Flink's docs combine them); TopK the same counts keyed by window end
into a ``KeyedProcessFunction`` that collects a window's counts in ``MapState`` and, on a
processing-time timer a quarter interval after the first, prints its top words. Results
through ``print()``. Runs in build/peers-venv (apache-flink), on the local mini cluster in
one JVM."""

from __future__ import annotations

import argparse
import sys
import sysconfig

PATTERN = "kato"  # bench/peers/records.py's


PREFIX = 24  # bench/peers/records.py's: a record's words start here
TOP = 10


def windowed(lines, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """WordCount's ``w`` lines or TopK's ``k`` lines, over sliding processing-time windows."""
    from pyflink.common import Time, Types
    from pyflink.datastream import KeyedProcessFunction, RuntimeContext
    from pyflink.datastream.functions import ProcessWindowFunction
    from pyflink.datastream.state import MapStateDescriptor
    from pyflink.datastream.window import SlidingProcessingTimeWindows

    class WithEnd(ProcessWindowFunction):
        """The reduced ``(word, count, newest)`` of a window, with the window's end."""

        def process(self, key, context, elements):  # type: ignore[no-untyped-def]
            for word, count, ts in elements:
                yield context.window().end, word, count, ts

    word = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
    counted = Types.TUPLE([Types.LONG(), Types.STRING(), Types.LONG(), Types.LONG()])
    counts = (
        lines.flat_map(
            lambda line: [(w, 1, int(line[:13])) for w in line[PREFIX:].split()],
            output_type=word,
        )
        .key_by(lambda r: r[0], key_type=Types.STRING())
        .window(
            SlidingProcessingTimeWindows.of(
                Time.milliseconds(args.window_ms), Time.milliseconds(args.interval_ms)
            )
        )
        .reduce(
            lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])),
            window_function=WithEnd(),
            output_type=counted,
        )
        .uid("count")
    )
    if args.workload == "wordcount":
        return counts.map(lambda r: f"w {r[0]} {r[1]} {r[2]} {r[3]}", output_type=Types.STRING())
    wait = max(1, args.interval_ms // 4)

    class TopOfWindow(KeyedProcessFunction):
        """A window's counts (keyed by its end) collected until a timer ``wait`` ms after the
        first; then its ``TOP`` words, count descending then word ascending."""

        def open(self, runtime_context: RuntimeContext) -> None:
            self.words = runtime_context.get_map_state(
                MapStateDescriptor(
                    "words", Types.STRING(), Types.TUPLE([Types.LONG(), Types.LONG()])
                )
            )

        def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
            if self.words.is_empty():
                timers = ctx.timer_service()
                timers.register_processing_time_timer(timers.current_processing_time() + wait)
            self.words.put(value[1], (value[2], value[3]))
            return iter(())

        def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
            best = sorted(self.words.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP]
            self.words.clear()
            end = ctx.get_current_key()
            for w, (c, ts) in best:
                yield f"k {end} {w} {c} {ts}"

    return (
        counts.key_by(lambda r: r[0], key_type=Types.LONG())
        .process(TopOfWindow(), output_type=Types.STRING())
        .uid("top")
    )


def kafka_io(env, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Flink's Kafka connector (jvm-shim/kafka/build.sh flink), as its docs build it: a
    ``KafkaSource`` of the topic ``<prefix>-in``'s values and a ``KafkaSink`` into
    ``<prefix>-out``."""
    from pathlib import Path

    from pyflink.common import SimpleStringSchema
    from pyflink.datastream.connectors.kafka import (
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )

    lib = Path(__file__).resolve().parents[3] / "jvm-shim" / "kafka" / "flink" / "target" / "lib"
    env.add_jars(*(f"file://{jar}" for jar in sorted(lib.glob("*.jar"))))
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(args.bootstrap)
        .set_topics(f"{args.topic_prefix}-in")
        .set_group_id("peers-flink")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(args.bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(f"{args.topic_prefix}-out")
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .build()
    )
    return source, sink


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", choices=("grep", "total", "wordcount", "topk"), required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--checkpoint-ms", type=int, default=10_000, help="0: checkpoints off")
    p.add_argument("--window-ms", type=int, default=30_000, help="WordCount's and TopK's")
    p.add_argument("--execution-mode", choices=("process", "thread"), default="process")
    p.add_argument("--monitor-ms", type=int, default=100, help="directory listing period")
    p.add_argument("--restore", help="a retained checkpoint (chk-N) to start from")
    p.add_argument("--via", choices=("files", "kafka"), default="files")
    p.add_argument("--bootstrap", help="--via kafka: the broker, host:port")
    p.add_argument("--topic-prefix", default="peers", help="--via kafka: <prefix>-in, -out")
    args = p.parse_args()

    from pyflink.common import Configuration, Duration, Time, Types, WatermarkStrategy
    from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat
    from pyflink.datastream.window import TumblingProcessingTimeWindows

    conf = Configuration()
    conf.set_string("python.execution-mode", args.execution_mode)
    conf.set_string("python.executable", sys.executable)
    conf.set_string("python.client.executable", sys.executable)
    # Thread mode runs Python inside the JVM (pemja), which does not find the venv's packages
    # ("No module named 'pemja'") unless they are on its path.
    conf.set_string("python.pythonpath", sysconfig.get_paths()["purelib"])
    conf.set_string("taskmanager.numberOfTaskSlots", str(args.parallelism))
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", "1000")
    conf.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    if args.checkpoint_ms:
        conf.set_string("execution.checkpointing.dir", f"file://{args.checkpoint_dir}")
        # Kept when the job ends (or its process is killed): a restart starts from one.
        conf.set_string(
            "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION"
        )
    if args.restore:
        conf.set_string("execution.state-recovery.path", f"file://{args.restore}")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(args.parallelism)
    if args.checkpoint_ms:
        env.enable_checkpointing(args.checkpoint_ms, CheckpointingMode.EXACTLY_ONCE)

    if args.via == "kafka":
        source = kafka_io(env, args)[0]
    else:
        source = (
            FileSource.for_record_stream_format(StreamFormat.text_line_format(), args.input)
            .monitor_continuously(Duration.of_millis(args.monitor_ms))
            .build()
        )
    # Every stateful operator with a uid, as Flink's docs ask of jobs restored from a
    # checkpoint or savepoint (figure 3 restarts this program from its newest checkpoint).
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "watched directory").uid(
        "source"
    )
    triple = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()])
    if args.workload == "grep":
        out = (
            lines.filter(lambda line: PATTERN in line)
            .map(lambda line: (int(line[:13]) // 1000, 1, int(line[:13])), output_type=triple)
            .key_by(lambda r: r[0], key_type=Types.LONG())
            .window(TumblingProcessingTimeWindows.of(Time.milliseconds(args.interval_ms)))
            .reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2])), output_type=triple)
            .uid("count")
            .map(lambda r: f"g {r[0]} {r[1]} {r[2]}", output_type=Types.STRING())
        )
    elif args.workload in ("wordcount", "topk"):
        out = windowed(lines, args)
    else:
        from pyflink.datastream import KeyedProcessFunction, RuntimeContext
        from pyflink.datastream.state import ValueStateDescriptor

        pair = Types.TUPLE([Types.LONG(), Types.LONG()])

        class Total(KeyedProcessFunction):
            """The running total in keyed ``ValueState`` named "total", as PyFlink's docs write
            keyed state. Not ``KeyedStream.reduce``: PyFlink 2.3.0 names its state
            ``"_reduce_state" + uuid4()`` in ``open()``, a new name whenever the job starts,
            so a job restored from a checkpoint starts every key from zero (the restored
            state sits in the backend under the old name; bench/results/peers/NOTES.md)."""

            def open(self, runtime_context: RuntimeContext) -> None:
                self.state = runtime_context.get_state(ValueStateDescriptor("total", pair))

            def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
                old = self.state.value()
                total = (old[0] if old else 0) + value[1]
                ts = max(old[1] if old else 0, value[2])
                self.state.update((total, ts))
                yield f"t {value[0]} {total} {ts}"

        row = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
        out = (
            lines.map(lambda line: (line[14:21], int(line[22]), int(line[:13])), output_type=row)
            .key_by(lambda r: r[0], key_type=Types.STRING())
            .process(Total(), output_type=Types.STRING())
            .uid("total")
        )
    if args.via == "kafka":
        out.sink_to(kafka_io(env, args)[1]).uid("sink")
    else:
        out.print()
    client = env.execute_async(f"peers-{args.workload}")
    print("# started", client.get_job_id(), file=sys.stderr, flush=True)
    client.get_job_execution_result().result()
    return 0


if __name__ == "__main__":
    sys.exit(main())
