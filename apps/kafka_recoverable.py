"""A Kafka word count that survives the loss of its driver.

Reads ``(key, value)`` records of a Kafka topic and writes, for every interval, exactly once:

* ``values-<ms>``: the values the interval read (every record of the topic appears in
  exactly one interval's output, however often the driver died),
* ``totals-<ms>``: the running count of records per key since the start
  (updateStateByKey, checkpointed asynchronously).

Each interval's offset ranges are in the metadata journal under ``--checkpoint``. Run it
again after a crash (even ``kill -9``) with the same arguments: ``getOrCreate`` resumes, the
interrupted intervals re-read exactly their recorded ranges, and the intervals after them
start where those ended.

    python apps/kafka_recoverable.py --bootstrap host:9092 --topic events \\
        --output /data/out --checkpoint /data/ckpt

It stops on SIGTERM or SIGINT (finishing the interval in progress), or after --seconds.
Each completed interval is reported on stdout as one JSON line.
"""

from __future__ import annotations

import sys
from typing import Any

from _cli import parser, run_resumable

from dstream import StreamingContext
from dstream.kafka import createDirectStream


def build(sc: Any, args: Any) -> StreamingContext:
    ssc = StreamingContext(sc, args.batch)
    ssc.checkpoint(args.checkpoint)
    kafka = {
        "bootstrap.servers": args.bootstrap,
        "auto.offset.reset": args.start,
        "group.id": args.group,
    }
    events = createDirectStream(ssc, [args.topic], kafka).setName("events")
    events.map(lambda kv: kv[1]).saveAsTextFiles(f"{args.output}/values")
    totals = events.updateStateByKey(lambda new, old: (old or 0) + len(new))
    totals.setName("totals").checkpoint(args.checkpoint_every)
    totals.saveAsTextFiles(f"{args.output}/totals")
    return ssc


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--bootstrap", required=True, help="Kafka bootstrap.servers")
    p.add_argument("--topic", required=True)
    p.add_argument("--group", default="dstream-kafka-recoverable", help="consumer group")
    p.add_argument("--start", choices=["earliest", "latest"], default="earliest")
    p.add_argument("--output", required=True)
    p.add_argument("--checkpoint-every", default="2s", help="state checkpoint interval")
    p.set_defaults(batch="500ms", seconds=3600.0)
    args = p.parse_args(argv)
    if not args.checkpoint:
        p.error("--checkpoint DIRECTORY is required: it is what a restarted driver resumes from")
    return run_resumable(args, "dstream-kafka-recoverable", build)


if __name__ == "__main__":
    sys.exit(main())
