"""PyFlink's Table API / SQL on the peers harness's input (bench/peers, #62): the whole
pipeline in Flink's JVM operators, no Python function on the records, as PyFlink's docs
recommend for relational work. The ``filesystem`` connector monitors the watched directory
(one ``csv`` column per line), Grep is a 1 s tumbling window TVF over processing time grouped
by event second (one count per window and second), the running total a ``GROUP BY key``
(an updating result, one update per key per mini-batch: mini-batch aggregation on, latency
one interval, as Flink's tuning guide recommends). Results through the ``print`` connector
(``+I[...]``/``+U[...]`` lines). Runs in build/peers-venv (apache-flink), local mini cluster."""

from __future__ import annotations

import argparse
import sys

PATTERN = "kato"  # bench/peers/records.py's


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", choices=("grep", "total"), required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--checkpoint-ms", type=int, default=10_000, help="0: checkpoints off")
    p.add_argument("--monitor-ms", type=int, default=100, help="directory listing period")
    p.add_argument("--restore", help="a retained checkpoint (chk-N) to start from")
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
    settings = (
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(conf).build()
    )
    t_env = TableEnvironment.create(settings)
    t_env.execute_sql(
        f"""
        CREATE TABLE src (
            line STRING,
            pt AS PROCTIME()
        ) WITH (
            'connector' = 'filesystem',
            'path' = 'file://{args.input}',
            'format' = 'csv',
            'csv.field-delimiter' = U&'\\0001',
            'csv.disable-quote-character' = 'true',
            'source.monitor-interval' = '{args.monitor_ms} ms'
        )"""
    )
    t_env.execute_sql("CREATE TABLE results (line STRING) WITH ('connector' = 'print')")
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
