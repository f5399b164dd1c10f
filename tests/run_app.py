"""Running an application the way its user does: its script, in its own process, with the
Python workers on this interpreter. The run must succeed; the caller checks its output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_app(
    script: Path, args: list[str], timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python script args...`` to completion; fails the test (with its stderr's end) unless
    it exits with 0."""
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done
