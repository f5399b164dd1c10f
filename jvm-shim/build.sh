#!/usr/bin/env bash
# Builds jvm-shim/shim/target/dstream-shim.jar (the io.dstream.shim SparkListener) and
# puts a copy in dstream/jars/, where the package finds it (an editable install reads it there;
# a wheel ships it as package data: setup.py runs this script when the wheel is built).
#
# Compiled with plain javac against the jars shipped inside the installed pyspark wheel, so the
# shim always matches the exact Spark/Scala versions the Python driver runs (Maven Central may
# not serve the matching spark-core).
#
#   PY=path/to/python bash jvm-shim/build.sh     # default PY: <repo>/.venv/bin/python
#   FORCE=1 bash jvm-shim/build.sh               # rebuild even if the jar is up to date
#
# Works from any cwd; a no-op when the jar is newer than every source file and than this script.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
module="$here/shim"
src="$module/src/main/java"
target="$module/target"
jar_out="$target/dstream-shim.jar"
package_jar="$repo/dstream/jars/dstream-shim.jar"

publish() {
  mkdir -p "$(dirname "$package_jar")"
  cp -f "$jar_out" "$package_jar.tmp" && mv -f "$package_jar.tmp" "$package_jar"
}

die() {
  echo "jvm-shim/build.sh: error: $*" >&2
  exit 1
}

py="${PY:-$repo/.venv/bin/python}"
case "$py" in
  /*) ;;
  */*) py="$(pwd)/$py" ;; # a relative path given by the caller is relative to their cwd
esac

[ -d "$src" ] || die "source directory not found: $src"
mapfile -t sources < <(find "$src" -name '*.java' -type f | LC_ALL=C sort)
[ "${#sources[@]}" -gt 0 ] || die "no .java sources under $src"

if [ -z "${FORCE:-}" ] && [ -f "$jar_out" ]; then
  newer="$(find "$src" "${BASH_SOURCE[0]}" -newer "$jar_out" -print -quit)"
  if [ -z "$newer" ]; then
    publish
    echo "jvm-shim: up to date: $jar_out"
    exit 0
  fi
fi

command -v javac >/dev/null 2>&1 || die "javac not found on PATH (install a JDK 17+, e.g. openjdk-17-jdk-headless)"
command -v jar >/dev/null 2>&1 || die "jar not found on PATH (install a JDK 17+, e.g. openjdk-17-jdk-headless)"
[ -x "$py" ] || command -v "$py" >/dev/null 2>&1 \
  || die "python not found: $py (run 'make setup' or set PY=/path/to/python)"

jars="$("$py" - <<'EOF'
import os
import sys

try:
    import pyspark
except ImportError:
    sys.exit(3)
print(os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars"))
EOF
)" || die "pyspark is not importable with $py (run 'make setup' or set PY=/path/to/python)"
ls "$jars"/spark-core_*.jar >/dev/null 2>&1 || die "no spark-core jar in $jars (a pyspark install without jars?)"

# -path: some wheel jars carry manifest Class-Path entries to jars that are not shipped.
classes="$target/classes"
rm -rf "$classes" "$jar_out.tmp"
mkdir -p "$classes"
javac --release 17 -encoding UTF-8 -Xlint:all,-serial,-processing,-path -Werror \
  -cp "$jars/*" -d "$classes" "${sources[@]}"
jar --create --file "$jar_out.tmp" -C "$classes" .
mv -f "$jar_out.tmp" "$jar_out"
publish
echo "jvm-shim: built $jar_out (against $(basename "$(ls "$jars"/spark-core_*.jar)"))"
