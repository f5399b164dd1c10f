# Sourced by scripts/test-pythons.sh and scripts/fast-tier.sh: find_python X.Y prints the path
# of a CPython X.Y that runs: pythonX.Y on PATH, else pyenv's (~/.pyenv/versions/X.Y.*), which
# this machine's image carries; neither Debian's packages (3.11 only on bookworm) nor PyPI
# serve other CPython builds. A missing interpreter is an error, not a skip.
find_python() {
  local v="$1" found
  # A pythonX.Y on PATH may be a pyenv shim for a version that is not selected: it must run.
  if found="$(command -v "python$v")" && "$found" -c pass 2>/dev/null; then
    echo "$found"; return
  fi
  for found in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v"; do
    [[ -x "$found" ]] && { echo "$found"; return; }
  done
  echo "no Python $v (python$v on PATH or ${PYENV_ROOT:-$HOME/.pyenv}/versions/$v.*)" >&2
  return 1
}
