#!/usr/bin/env bash
# Assembles Neo4j Community (version pinned in pom.xml) from Maven Central: copies org.neo4j:neo4j
# and its runtime dependencies into a cache directory once (a .complete marker makes reruns free;
# ~/.m2 caches the downloads too) and prints that lib directory on stdout.
#   NEO4J_LOCAL_HOME  overrides the cache root (default ~/.cache/stack-advisor/neo4j-<version>)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=$(sed -n 's:.*<neo4j.version>\(.*\)</neo4j.version>.*:\1:p' "$here/pom.xml")
root="${NEO4J_LOCAL_HOME:-$HOME/.cache/stack-advisor/neo4j-$version}"
lib="$root/lib"

command -v java >/dev/null || { echo "java is required (OpenJDK 17+)" >&2; exit 1; }
java_major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ -z "$java_major" ] || [ "$java_major" -lt 17 ]; then
  echo "Neo4j $version needs Java 17+, found: $(java -version 2>&1 | head -1)" >&2
  exit 1
fi

if [ ! -f "$lib/.complete" ]; then
  command -v mvn >/dev/null || { echo "mvn is required to assemble Neo4j from Maven Central" >&2; exit 1; }
  mkdir -p "$root"
  # Several test sessions may start at once: one assembles, the others wait for it.
  exec 9>"$root/.lock"
  flock 9
  if [ ! -f "$lib/.complete" ]; then
    tmp="$root/lib.partial"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$tmp" -DincludeScope=runtime >&2
    touch "$tmp/.complete"
    rm -rf "$lib"
    mv "$tmp" "$lib"
  fi
  flock -u 9
fi
echo "$lib"
