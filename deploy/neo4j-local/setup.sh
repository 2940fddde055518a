#!/usr/bin/env bash
# Copies Neo4j 5.26 Community and its dependencies from Maven Central into a cache directory
# (once; ~/.m2 caches the downloads too) and prints that lib directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=$(sed -n 's:.*<neo4j.version>\(.*\)</neo4j.version>.*:\1:p' "$here/pom.xml")
lib="${NEO4J_LOCAL_HOME:-$HOME/.cache/stack-advisor/neo4j-$version}/lib"
if [ ! -f "$lib/.complete" ]; then
  command -v java >/dev/null || { echo "java is required (OpenJDK 17+)" >&2; exit 1; }
  command -v mvn >/dev/null || { echo "mvn is required to assemble Neo4j from Maven Central" >&2; exit 1; }
  rm -rf "$lib"; mkdir -p "$lib"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$lib" -DincludeScope=runtime >&2
  touch "$lib/.complete"
fi
echo "$lib"
