#!/usr/bin/env bash
# Resolves Apache Kafka's jars from Maven Central into target/lib (nothing is compiled):
#   bash jvm-shim/kafka/build.sh             the broker (KRaft), for tests and demos:
#                                            testbed/kafka.py runs kafka.Kafka from target/lib
#   bash jvm-shim/kafka/build.sh connector   Spark's Structured Streaming Kafka source, for
#                                            bench/inputs/kafka.py only (connector/target/lib)
#   bash jvm-shim/kafka/build.sh flink       Flink's Kafka connector, for bench/peers's PyFlink
#                                            programs (flink/target/lib)
# Idempotent: a no-op when target/lib is newer than the pom and this script.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${1:-broker}" in
  broker) module="$here" ;;
  connector) module="$here/connector" ;;
  flink) module="$here/flink" ;;
  *) echo "build.sh: unknown part '$1' (broker, connector or flink)" >&2; exit 2 ;;
esac
target="$module/target"
stamp="$target/.built"

if [[ -f "$stamp" ]] && [[ -z "$(find "$module/pom.xml" "$here/build.sh" -newer "$stamp" -print -quit)" ]]; then
  exit 0
fi

command -v mvn >/dev/null || { echo "build.sh: mvn (Maven 3) is not on PATH" >&2; exit 1; }

# Fresh lib/: a jar left from an older pom must not stay on the classpath.
rm -rf "$target/lib" "$stamp"
mvn -B -q -f "$module/pom.xml" package
touch "$stamp"
echo "resolved $(ls "$target/lib" | wc -l) jars into $target/lib" >&2
