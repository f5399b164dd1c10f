"""The newest Python the package supports (3.13) in CI: the fast tier (tests/unit) in a
fresh virtual environment with the wheel and what uv resolves for 3.13 within the
package's ranges (``scripts/fast-tier.sh``; numpy, pandas, pyarrow newer than the lock's
3.11 set). The oldest supported, 3.11, is the lock's and runs every tier; Python 3.10 is
not supported (pyspark 4.3.0 requires 3.11)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_fast_tier_passes_on_the_newest_supported_python() -> None:
    done = subprocess.run(
        ["bash", "scripts/fast-tier.sh", "3.13"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    # pytest's exit status: nonzero on any failure or error, and when nothing was collected.
    assert done.returncode == 0, (done.stdout[-6000:], done.stderr[-3000:])
    assert "fast tier on Python 3.13." in done.stdout  # the venv's own interpreter ran them
