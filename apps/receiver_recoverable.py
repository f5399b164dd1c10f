"""Records from ReceiverClients, output exactly once per interval across driver crashes.

Listens on ``--host:--port`` (a fixed port: clients reconnect to it after a crash) with the
shared secret in the environment variable named by ``--secret-env`` (the secret stays off
the command line), and writes every interval's records to ``values-<ms>`` under
``--output``. Run it again after a crash (even ``kill -9``) with the same arguments:
``getOrCreate`` resumes from ``--checkpoint``; the interval the crash interrupted is
recomputed without the blocks that died with the old driver, and the clients, which never
heard that it completed, send those blocks again into a later interval
(see docs/receiver.md).

    DSTREAM_RECEIVER_SECRET=... python apps/receiver_recoverable.py --port 9999 \\
        --output /data/out --checkpoint /data/ckpt

It stops on SIGTERM or SIGINT (finishing the interval in progress), or after --seconds.
It prints one JSON line when it has started and one per completed interval.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from _cli import parser, run_resumable

from dstream import StreamingContext
from dstream.receiver import createStream


def build(sc: Any, args: Any, secret: bytes) -> StreamingContext:
    ssc = StreamingContext(sc, args.batch)
    ssc.checkpoint(args.checkpoint)
    lines = createStream(ssc, secret, args.port, host=args.host, placement=args.placement)
    lines.setName("lines")
    lines.saveAsTextFiles(f"{args.output}/values")
    return ssc


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "", rate=False)
    p.add_argument("--host", default="127.0.0.1", help="the interface to listen on")
    p.add_argument("--port", type=int, required=True, help="a fixed port (clients reconnect)")
    p.add_argument(
        "--placement",
        choices=["driver", "executors"],
        default="driver",
        help="where the receiver runs: in the driver, or as a task on an executor",
    )
    p.add_argument("--secret-env", default="DSTREAM_RECEIVER_SECRET", help="its variable")
    p.add_argument("--output", required=True)
    p.set_defaults(batch="500ms", seconds=3600.0)
    args = p.parse_args(argv)
    if not args.checkpoint:
        p.error("--checkpoint DIRECTORY is required: it is what a restarted driver resumes from")
    secret = os.environ.get(args.secret_env, "")
    if not secret:
        p.error(f"set the shared secret in the environment variable {args.secret_env}")
    return run_resumable(
        args, "dstream-receiver-recoverable", lambda sc, a: build(sc, a, secret.encode())
    )


if __name__ == "__main__":
    sys.exit(main())
