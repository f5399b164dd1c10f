#!/usr/bin/env bash
# Builds the HDFS mini cluster (io.dstream.minicluster.MiniHdfs) into target/:
#   target/classes   the compiled main class and log4j.properties
#   target/lib/*.jar its runtime dependencies (Hadoop 3.5.0 minicluster, client api and
#                    runtime, reload4j)
# Run it as:  java -cp 'target/classes:target/lib/*' io.dstream.minicluster.MiniHdfs
# (testbed/hdfs.py does). Idempotent: a no-op when target/ is newer than every input.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="$here/target"
stamp="$target/.built"

# Up to date when the stamp of the last successful build is newer than every input.
inputs=("$here/pom.xml" "$here/build.sh" "$here/src")
if [[ -f "$stamp" && -f "$target/classes/io/dstream/minicluster/MiniHdfs.class" ]] \
    && [[ -z "$(find "${inputs[@]}" -newer "$stamp" -print -quit)" ]]; then
  exit 0
fi

command -v mvn >/dev/null || { echo "build.sh: mvn (Maven 3) is not on PATH" >&2; exit 1; }

# Fresh lib/: a jar left from an older pom must not stay on the classpath.
rm -rf "$target/lib" "$stamp"
mvn -B -q -f "$here/pom.xml" package
touch "$stamp"
echo "built $target/classes and $(ls "$target/lib" | wc -l) jars in $target/lib" >&2
