"""A word count that survives the loss of its driver.

Reads the new text files of a directory, and for every interval writes, exactly once:

* ``lines-<ms>``: the lines the interval read (so every input line appears in exactly one
  interval's output, however often the driver died),
* ``totals-<ms>``: the running count of every word since the start (updateStateByKey),
* ``window-<ms>``: word counts over the last 10 s (reduceByKeyAndWindow with an inverse;
  ``--window-strategy replay`` rebuilds it from the input files instead of checkpointing it),
* ``sessions-<ms>``: each word seen in the last 6 s and its count since its session began
  (``track`` with a 6 s timeout),
* ``sink/<ms>.txt``: the interval's word counts, through ``save(sink)``: the sink writes each
  interval atomically under its time (and marks every call in ``sink/calls/``),
* with ``--table also`` (or ``only``: the lines and the table alone), ``table/``: the lines
  again, appended to a Parquet table through ``saveToTable`` (``batch_ms=<ms>`` each),

checkpointing its state asynchronously and writing its metadata journal under
``--checkpoint``. Run it again after a crash (even ``kill -9``) with the same arguments:
``StreamingContext.getOrCreate`` resumes from the journal, recomputes what was lost from the
input files and catches up with the intervals missed while it was down.

    python apps/recoverable.py --input /data/in --output /data/out --checkpoint /data/ckpt

It stops on SIGTERM or SIGINT (finishing the interval in progress), or after --seconds.
Each completed interval is reported on stdout as one JSON line.
"""

from __future__ import annotations

import operator
import sys
from typing import Any

from _cli import parser, run_resumable

from dstream import StreamingContext


def build(sc: Any, args: Any) -> StreamingContext:
    ssc = StreamingContext(sc, args.batch)
    ssc.checkpoint(args.checkpoint)
    lines = ssc.textFileStream(args.input)
    lines.saveAsTextFiles(f"{args.output}/lines")
    if args.table != "off":
        lines.saveToTable(f"{args.output}/table", "line string")
    if args.table == "only":
        return ssc
    words = lines.flatMap(lambda line: line.split()[1:]).map(lambda w: (w, 1))
    totals = words.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    totals.setName("totals").checkpoint(args.checkpoint_every)
    totals.saveAsTextFiles(f"{args.output}/totals")
    window = words.reduceByKeyAndWindow(operator.add, operator.sub, 10)
    window.setName("window").checkpoint(args.checkpoint_every)
    window.recoveryStrategy(args.window_strategy)
    window.saveAsTextFiles(f"{args.output}/window")
    sessions = words.track(lambda w, n: n, lambda w, total, n: total + n, 6)
    sessions.setName("sessions").checkpoint(args.checkpoint_every)
    sessions.saveAsTextFiles(f"{args.output}/sessions")
    words.reduceByKey(operator.add).save(keyed_file_sink(f"{args.output}/sink"), name="sink")
    return ssc


def keyed_file_sink(directory: str) -> Any:
    """A sink that is atomic and idempotent per interval (what save() asks of a sink): the
    interval's records go to ``<ms>.txt`` through a temporary file renamed into place, so
    writing an interval again leaves the same file. Each call also leaves a marker
    ``calls/<time ms>-<epoch>-<unique>``, to count repeats. It writes through dstream's
    file system, so the directory may be local or on HDFS like the other outputs."""

    def sink(time: Any, rdd: Any, interval: Any) -> None:
        import uuid

        from dstream.storage.filesystem import filesystem_for, publish

        fs = filesystem_for(directory, rdd.context)
        fs.mkdirs(f"{directory}/calls")
        fs.write_bytes(f"{directory}/calls/{time.ms}-{interval.epoch}-{uuid.uuid4().hex}", b"")
        data = "".join(f"{record!r}\n" for record in sorted(rdd.collect())).encode()
        publish(fs, f"{directory}/{time.ms}.txt", lambda tmp: fs.write_bytes(tmp, data))

    return sink


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--checkpoint-every", default="2s", help="state checkpoint interval")
    p.add_argument(
        "--window-strategy",
        default="checkpoint",
        choices=["checkpoint", "replay", "replicate", "auto"],
        help="how the window's state is recovered (recoveryStrategy)",
    )
    p.add_argument(
        "--table",
        default="off",
        choices=["off", "also", "only"],
        help="also append the lines to a Parquet table (saveToTable); only: lines and table",
    )
    p.set_defaults(batch="500ms", seconds=3600.0)
    args = p.parse_args(argv)
    if not args.checkpoint:
        p.error("--checkpoint DIRECTORY is required: it is what a restarted driver resumes from")
    return run_resumable(args, "dstream-recoverable", build)


if __name__ == "__main__":
    sys.exit(main())
