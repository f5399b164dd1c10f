#!/usr/bin/env bash
# Makes sure a headless-capable Chromium is installed (Debian's `chromium` package), for the
# tests that open the Spark UI's Streaming tab in a real browser (tests/browser).
#
#   bash scripts/ensure-chromium.sh      # quiet and instant when chromium is already there
#
# Installs with apt-get (as root, or through sudo when it is available); prints the path of
# the browser it found or installed on the last line only when it had to install it.
set -euo pipefail

find_chromium() {
  for name in chromium chromium-browser; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

if find_chromium >/dev/null; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "scripts/ensure-chromium.sh: chromium is not installed and this user cannot run" \
    "apt-get; install it as root: apt-get install -y chromium" >&2
  exit 1
fi

command -v apt-get >/dev/null 2>&1 || {
  echo "scripts/ensure-chromium.sh: chromium is not installed and there is no apt-get;" \
    "install Chromium with this system's package manager" >&2
  exit 1
}

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >/dev/null
"${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
path="$(find_chromium)" || {
  echo "scripts/ensure-chromium.sh: apt-get installed chromium but it is not on PATH" >&2
  exit 1
}
echo "chromium installed: $path"
