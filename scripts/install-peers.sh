#!/usr/bin/env bash
# The peer engines of bench/peers (issue #62) in a venv of their own, build/peers-venv:
# PyFlink (apache-flink, with its Java mini cluster) and Bytewax, at the exact versions of
# bench/peers/requirements-peers.lock. Their dependency ranges conflict with this project's
# lock (apache-flink 2.3.0: py4j==0.10.9.7, pandas<2.3, pyarrow<21; its apache-beam:
# cloudpickle~=2.2.1, numpy<2.2), so they do not go into .venv. Python 3.11, the project's
# (both support it; bytewax's x86_64 wheels need glibc >= 2.31).
#   bash scripts/install-peers.sh           install (a no-op when the venv matches the lock)
#   bash scripts/install-peers.sh --lock    compile the lock again from requirements-peers.in
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
uv="$root/.venv/bin/uv"
venv="${PEERS_VENV:-$root/build/peers-venv}"
lock="$root/bench/peers/requirements-peers.lock"
in="$root/bench/peers/requirements-peers.in"
python="${PEERS_PYTHON:-python3.11}"

[[ -x "$uv" ]] || { echo "install-peers.sh: run 'make setup' first (it installs uv into .venv)" >&2; exit 1; }

if [[ "${1:-}" == "--lock" ]]; then
  "$uv" pip compile --quiet --python-version 3.11 --python-platform x86_64-manylinux_2_31 \
    --no-header "$in" -o "$lock"
  echo "wrote $lock" >&2
  exit 0
fi

stamp="$venv/.installed"
if [[ -f "$stamp" ]] && [[ "$stamp" -nt "$lock" ]]; then
  exit 0
fi
command -v "$python" >/dev/null || { echo "install-peers.sh: $python is not on PATH (set PEERS_PYTHON)" >&2; exit 1; }
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
"$uv" pip install --quiet --python "$venv/bin/python" -r "$lock"
touch "$stamp"
"$venv/bin/python" -c 'import pyflink.version, bytewax, importlib.metadata as m; print("peers:", "apache-flink", pyflink.version.__version__, "bytewax", m.version("bytewax"))'
