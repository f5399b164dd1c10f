#!/usr/bin/env bash
# The fast tier (tests/unit) and the clean-install smoke on the Pythons the package supports
# beside 3.11 (pyspark 4.3.0 itself requires 3.11), each in a fresh virtual environment where
# pip resolves the package's declared ranges for that Python (not requirements.lock, which
# is the 3.11 set), beside a pandas and pyarrow of the "user's" choosing (the newest the
# ranges allow there).
#
#   bash scripts/test-pythons.sh 3.12 3.13
#
# Interpreters: scripts/find-python.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/find-python.sh
root="build/pythons"
mkdir -p "$root"

# One wheel for all of them (pure Python; the shim jar inside).
rm -rf "$root/dist"
.venv/bin/python -m pip wheel --quiet --no-deps -w "$root/dist" .
wheel="$(ls "$root"/dist/pyspark_dstream-*.whl)"

# pyspark is an sdist only (456 MB): pip downloaded and built it again for every Python (its
# wheel cache is per interpreter; 2:00 of each Python's 3:30 on 2026-12-02). Its wheel is pure
# Python: built once for the range the package declares, kept in build/ between runs, and
# found there by every Python's pip (a newer pyspark within the range is built once again).
wheelhouse="$root/wheelhouse"
pyspark_range="$(.venv/bin/python -c 'import tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(next(d for d in deps if d.startswith("pyspark")))')"
export PIP_FIND_LINKS="$wheelhouse${PIP_FIND_LINKS:+ $PIP_FIND_LINKS}"
.venv/bin/python -m pip wheel --quiet --no-deps -w "$wheelhouse" "$pyspark_range"

for v in "$@"; do
  python="$(find_python "$v")"
  env="$root/py$v"
  rm -rf "$env"
  "$python" -m venv "$env"
  "$env/bin/python" -m pip install --quiet --upgrade pip==23.2.1
  # The package, its dependencies and the test tools by their ranges.
  # (The lock's hypothesis needs 3.11+: the test tools by ranges too.)
  "$env/bin/python" -m pip install --quiet "$wheel[kafka,hdfs]" pandas pyarrow \
    "pytest>=8,<10" "hypothesis>=6.100,<7"
  echo "== Python $("$env/bin/python" -c 'import platform; print(platform.python_version())'):" \
    "$("$env/bin/pip" freeze | grep -iE '^(pyspark|numpy|pyarrow|pandas|cloudpickle)==' | tr '\n' ' ')"
  # The installed wheel runs a program that touches every feature, from outside the tree;
  # then the tree's unit tests run on this Python with the dependencies it resolved.
  (cd "$root" && PYSPARK_PYTHON="$(pwd)/py$v/bin/python" "py$v/bin/python" \
    "$OLDPWD/tests/smoke/clean_install.py")
  "$env/bin/python" -m pytest -q -p no:cacheprovider tests/unit
done
