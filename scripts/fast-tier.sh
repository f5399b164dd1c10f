#!/usr/bin/env bash
# The fast tier (tests/unit: pure logic, no Spark) on another supported Python than the
# lock's 3.11, in a fresh virtual environment where uv resolves the package's declared
# ranges for that Python (numpy, pyarrow, pandas, cloudpickle as a user would get them),
# as of RESOLVED_AS_OF so that a release made since cannot turn CI red (move it forward to
# try newer ones), with pyspark held at the lock's version: its wheel, built from the
# 400 MB sdist by `make setup`, is in uv's cache and installed from there offline.
#
#   bash scripts/fast-tier.sh 3.13
#
# `make test` runs it on 3.13, the newest Python the package supports, as
# tests/integration/test_pythons.py (the oldest, 3.11, is the lock's: every tier). The
# clean-install smoke on other Pythons too, every dependency resolved fresh by pip: `make
# test-pythons` (scripts/test-pythons.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/find-python.sh
v="$1"
RESOLVED_AS_OF="${RESOLVED_AS_OF:-2026-12-01}"
python="$(find_python "$v")"
root="build/pythons"
env="$root/fast-$v"
# The wheel (pure Python, the shim jar inside), as the clean-install smoke builds it.
rm -rf "$root/fast-dist" "$env"
.venv/bin/uv build --offline --quiet --wheel --out-dir "$root/fast-dist" .
wheel="$(ls "$root"/fast-dist/pyspark_dstream-*.whl)"
.venv/bin/uv venv --quiet --python "$python" "$env"
# pyspark first and --offline, from the wheel `make setup` built: uv revalidates the sdist's
# HTTP revision when online, and a new revision is a new 400 MB build (90 s, 2.7 GB of cache
# each run: a CI run ran out of disk building it). The second install finds it installed.
.venv/bin/uv pip install --offline --quiet --python "$env/bin/python" "$(grep '^pyspark==' requirements.lock)"
.venv/bin/uv pip install --quiet --python "$env/bin/python" --exclude-newer "$RESOLVED_AS_OF" \
  "$(grep '^pyspark==' requirements.lock)" "$wheel[kafka,hdfs]" pandas pyarrow \
  "pytest>=8,<10" "hypothesis>=6.100,<7"
echo "fast tier on Python $("$env/bin/python" -c 'import platform; print(platform.python_version())')," \
  "resolved as of $RESOLVED_AS_OF:" \
  "$(.venv/bin/uv pip freeze --python "$env/bin/python" | grep -iE '^(pyspark|numpy|pyarrow|pandas|cloudpickle)==' | tr '\n' ' ')"
"$env/bin/python" -m pytest -q -p no:cacheprovider tests/unit
