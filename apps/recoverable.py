"""A word count that survives the loss of its driver.

Reads the new text files of a directory, and for every interval writes, exactly once:

* ``lines-<ms>``: the lines the interval read (so every input line appears in exactly one
  interval's output, however often the driver died),
* ``totals-<ms>``: the running count of every word since the start (updateStateByKey),
* ``window-<ms>``: word counts over the last 10 s (reduceByKeyAndWindow with an inverse),
* ``sessions-<ms>``: each word seen in the last 6 s and its count since its session began
  (``track`` with a 6 s timeout),
* ``sink/<ms>.txt``: the interval's word counts, through ``save(sink)``: the sink writes each
  interval atomically under its key (and logs every call in ``sink/calls.log``),

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
    words = lines.flatMap(lambda line: line.split()[1:]).map(lambda w: (w, 1))
    totals = words.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    totals.setName("totals").checkpoint(args.checkpoint_every)
    totals.saveAsTextFiles(f"{args.output}/totals")
    window = words.reduceByKeyAndWindow(operator.add, operator.sub, 10)
    window.setName("window").checkpoint(args.checkpoint_every)
    window.saveAsTextFiles(f"{args.output}/window")
    sessions = words.track(lambda w, n: n, lambda w, total, n: total + n, 6)
    sessions.setName("sessions").checkpoint(args.checkpoint_every)
    sessions.saveAsTextFiles(f"{args.output}/sessions")
    words.reduceByKey(operator.add).save(keyed_file_sink(f"{args.output}/sink"), name="sink")
    return ssc


def keyed_file_sink(directory: str) -> Any:
    """A sink that is atomic and idempotent per interval (what save() asks of a sink): the
    interval's records go to ``<ms>.txt`` through a temporary file and a rename, so writing an
    interval again leaves the same file. Each call is also logged, to count repeats."""

    def sink(time: Any, rdd: Any, interval: Any) -> None:
        import os

        os.makedirs(directory, exist_ok=True)
        with open(f"{directory}/calls.log", "a") as log:
            log.write(f"{interval.key} {interval.epoch}\n")
        final = f"{directory}/{time.ms}.txt"
        tmp = f"{final}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            f.writelines(f"{record!r}\n" for record in sorted(rdd.collect()))
        os.replace(tmp, final)

    return sink


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--checkpoint-every", default="2s", help="state checkpoint interval")
    p.set_defaults(batch="500ms", seconds=3600.0)
    args = p.parse_args(argv)
    if not args.checkpoint:
        p.error("--checkpoint DIRECTORY is required: it is what a restarted driver resumes from")
    return run_resumable(args, "dstream-recoverable", build)


if __name__ == "__main__":
    sys.exit(main())
