"""PyFlink's Table API / SQL on the peers harness's input (bench/peers, #62): the whole
pipeline in Flink's JVM operators, no Python function on the records, as PyFlink's docs
recommend for relational work. The ``filesystem`` connector monitors the watched directory
(one ``csv`` column per line), Grep is a 1 s tumbling window TVF over processing time grouped
by event second (one count per window and second), the running total a ``GROUP BY key``
(an updating result, one update per key per mini-batch: mini-batch aggregation on, latency
one interval, as Flink's tuning guide recommends), WordCount a ``HOP`` window TVF
(``--window-ms`` sliding by the interval) on ``PROCTIME()`` over the words (``SPLIT`` and
``CROSS JOIN UNNEST``) grouped by word, TopK the same counts through Flink's Window Top-N
(``ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY cnt DESC)``). Results
through the ``print`` connector (``+I[...]``/``+U[...]`` lines). Runs in build/peers-venv
(apache-flink), local mini cluster."""

from __future__ import annotations

import argparse
import sys

PATTERN = "kato"  # bench/peers/records.py's


PREFIX = 24  # bench/peers/records.py's: a record's words start here
TOP = 10


def windowed(t_env, args: argparse.Namespace) -> str:  # type: ignore[no-untyped-def]
    """WordCount's (every word's count per window) or TopK's (the window's top words) query."""
    t_env.execute_sql(
        f"""
        CREATE TEMPORARY VIEW words AS
        SELECT w AS word, CAST(SUBSTRING(line, 1, 13) AS BIGINT) AS ts, pt
        FROM src CROSS JOIN UNNEST(SPLIT(SUBSTRING(line, {PREFIX + 1}), ' ')) AS T(w)
        WHERE w <> ''"""
    )
    counts = f"""
        SELECT window_start, window_end, word, COUNT(*) AS cnt, MAX(ts) AS ts
        FROM TABLE(HOP(TABLE words, DESCRIPTOR(pt), INTERVAL '{args.interval_ms / 1000:g}' SECOND,
                       INTERVAL '{args.window_ms / 1000:g}' SECOND))
        GROUP BY window_start, window_end, word"""
    # The window's label: its end, without the space of a TIMESTAMP's text.
    label = "REPLACE(CAST(window_end AS STRING), ' ', 'T')"
    if args.workload == "wordcount":
        return f"""
            INSERT INTO results
            SELECT CONCAT('w ', {label}, ' ', word, ' ', CAST(cnt AS STRING), ' ',
                          CAST(ts AS STRING))
            FROM ({counts})"""
    return f"""
        INSERT INTO results
        SELECT CONCAT('k ', {label}, ' ', word, ' ', CAST(cnt AS STRING), ' ', CAST(ts AS STRING))
        FROM (
            SELECT *, ROW_NUMBER() OVER (
                PARTITION BY window_start, window_end ORDER BY cnt DESC) AS rownum
            FROM ({counts})
        )
        WHERE rownum <= {TOP}"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", choices=("grep", "total", "wordcount", "topk"), required=True)
    p.add_argument("--window-ms", type=int, default=30_000, help="WordCount's and TopK's")
    p.add_argument("--input", required=True)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--checkpoint-ms", type=int, default=10_000, help="0: checkpoints off")
    p.add_argument("--monitor-ms", type=int, default=100, help="directory listing period")
    p.add_argument("--restore", help="a retained checkpoint (chk-N) to start from")
    p.add_argument("--via", choices=("files", "kafka"), default="files")
    p.add_argument("--bootstrap", help="--via kafka: the broker, host:port")
    p.add_argument("--topic-prefix", default="peers", help="--via kafka: <prefix>-in, -out")
    args = p.parse_args()

    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    conf = Configuration()
    conf.set_string("python.executable", sys.executable)
    conf.set_string("python.client.executable", sys.executable)
    conf.set_string("parallelism.default", str(args.parallelism))
    conf.set_string("taskmanager.numberOfTaskSlots", str(args.parallelism))
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", "1000")
    conf.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    conf.set_string("table.exec.mini-batch.enabled", "true")
    conf.set_string("table.exec.mini-batch.allow-latency", f"{args.interval_ms} ms")
    conf.set_string("table.exec.mini-batch.size", "100000")
    if args.checkpoint_ms:
        conf.set_string("execution.checkpointing.interval", f"{args.checkpoint_ms} ms")
        conf.set_string("execution.checkpointing.dir", f"file://{args.checkpoint_dir}")
        conf.set_string(
            "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION"
        )
    if args.restore:
        conf.set_string("execution.state-recovery.path", f"file://{args.restore}")
    if args.via == "kafka":
        from pathlib import Path

        lib = Path(__file__).resolve().parents[3] / "jvm-shim" / "kafka" / "flink" / "target"
        jars = sorted(f"file://{jar}" for jar in (lib / "lib").glob("*.jar"))
        conf.set_string("pipeline.jars", ";".join(jars))
    settings = (
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(conf).build()
    )
    t_env = TableEnvironment.create(settings)
    if args.via == "kafka":
        # The Kafka connector, ``raw`` format: each record's value is one line.
        source = f"""
            'connector' = 'kafka',
            'topic' = '{args.topic_prefix}-in',
            'properties.bootstrap.servers' = '{args.bootstrap}',
            'properties.group.id' = 'peers-flink-sql',
            'scan.startup.mode' = 'earliest-offset',
            'format' = 'raw'"""
        sink = f"""
            'connector' = 'kafka',
            'topic' = '{args.topic_prefix}-out',
            'properties.bootstrap.servers' = '{args.bootstrap}',
            'format' = 'raw'"""
    else:
        source = f"""
            'connector' = 'filesystem',
            'path' = 'file://{args.input}',
            'format' = 'csv',
            'csv.field-delimiter' = U&'\\0001',
            'csv.disable-quote-character' = 'true',
            'source.monitor-interval' = '{args.monitor_ms} ms'"""
        sink = "'connector' = 'print'"
    t_env.execute_sql(f"CREATE TABLE src (line STRING, pt AS PROCTIME()) WITH ({source})")
    t_env.execute_sql(f"CREATE TABLE results (line STRING) WITH ({sink})")
    window = f"INTERVAL '{args.interval_ms / 1000:g}' SECOND"
    if args.workload == "grep":
        query = f"""
            INSERT INTO results
            SELECT CONCAT('g ', CAST(sec AS STRING), ' ', CAST(COUNT(*) AS STRING), ' ',
                          CAST(MAX(ts) AS STRING))
            FROM (
                SELECT window_start, window_end,
                       CAST(SUBSTRING(line, 1, 13) AS BIGINT) / 1000 AS sec,
                       CAST(SUBSTRING(line, 1, 13) AS BIGINT) AS ts
                FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(pt), {window}))
                WHERE POSITION('{PATTERN}' IN line) > 0
            )
            GROUP BY window_start, window_end, sec"""
    elif args.workload in ("wordcount", "topk"):
        query = windowed(t_env, args)
    else:
        query = """
            INSERT INTO results
            SELECT CONCAT('t ', k, ' ', CAST(SUM(v) AS STRING), ' ', CAST(MAX(ts) AS STRING))
            FROM (
                SELECT SUBSTRING(line, 15, 7) AS k,
                       CAST(SUBSTRING(line, 23, 1) AS BIGINT) AS v,
                       CAST(SUBSTRING(line, 1, 13) AS BIGINT) AS ts
                FROM src
            )
            GROUP BY k"""
    result = t_env.execute_sql(query)
    client = result.get_job_client()
    print("# started", client.get_job_id() if client else "?", file=sys.stderr, flush=True)
    result.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
