# What the neo4j image's entrypoint does, for the server on the mounted classpath: neo4j.conf
# from the pod's settings (the NEO4J_server_* variables of the StatefulSet), the initial password
# from NEO4J_AUTH (user/password) on the first start, then the server in the foreground.
set -eu
JAVA=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
HOME_DIR=/var/lib/neo4j
CONF=$HOME_DIR/conf
mkdir -p /tmp/neo4j/plugins /tmp/neo4j/import /tmp/neo4j/licenses
cat > "$CONF/neo4j.conf" <<CONF
server.directories.data=/data
server.directories.logs=/logs
server.directories.run=$HOME_DIR/run
server.directories.lib=/opt/neo4j/lib
server.directories.plugins=/tmp/neo4j/plugins
server.directories.import=/tmp/neo4j/import
server.directories.licenses=/tmp/neo4j/licenses
server.directories.transaction.logs.root=/data/transactions
server.default_listen_address=0.0.0.0
server.bolt.enabled=true
server.bolt.listen_address=0.0.0.0:7687
server.http.enabled=${NEO4J_server_http_enabled:-false}
server.https.enabled=false
dbms.usage_report.enabled=false
server.memory.heap.max_size=$NEO4J_server_memory_heap_max__size
server.memory.pagecache.size=$NEO4J_server_memory_pagecache_size
CONF
FLAGS="-XX:-OmitStackTraceInFastThrow -XX:+UnlockExperimentalVMOptions -XX:+TrustFinalNonStaticFields
 -XX:+DisableExplicitGC -Djdk.nio.maxCachedBufferSize=1024 -Dio.netty.tryReflectionSetAccessible=true
 --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
 --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
 --add-opens=java.base/jdk.internal.misc=ALL-UNNAMED --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED
 --add-opens=java.base/jdk.internal.util=ALL-UNNAMED -Dfile.encoding=UTF-8 -Djava.awt.headless=true"
export NEO4J_HOME=$HOME_DIR NEO4J_CONF=$CONF
if [ ! -e /data/dbms/auth.ini ]; then
  "$JAVA" -Xmx128m $FLAGS -cp '/opt/neo4j/lib/*' org.neo4j.cli.AdminTool \
    dbms set-initial-password -- "${NEO4J_AUTH#*/}"  # --: a password may start with "-"
fi
exec "$JAVA" -Xms"$NEO4J_server_memory_heap_max__size" -Xmx"$NEO4J_server_memory_heap_max__size" \
  -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError $FLAGS -cp '/opt/neo4j/lib/*' \
  org.neo4j.server.CommunityEntryPoint --home-dir="$HOME_DIR" --config-dir="$CONF" --console-mode
