"""The full chaos run: apps/recoverable.py on local-cluster[3,1,1024] under 20
random driver kills (SIGKILL of the driver's process group) and 10 executor kills (SIGKILL of
one executor JVM), with input files arriving throughout; then every interval of every output
(lines, running totals, 10 s window with an inverse, track() sessions, save() sink) is
checked against an oracle. Writes bench/results/chaos.json.

    .venv/bin/python -m bench.engine.chaos [--driver-kills 20 --executor-kills 10]

tests/recovery/test_chaos.py runs a short version (2 driver kills, 1 executor kill) in CI;
bench/README.md, "The full chaos run", reports this one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from testbed.chaos import main

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "results" / "chaos.json"
    sys.exit(main([*sys.argv[1:], "--out", str(out)]))
