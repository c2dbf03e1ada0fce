#!/bin/sh
# Installs the library into the local Maven repository as the README says
# (mvn install, of a copy of this project, its tests skipped: they run in
# verify), then builds a scratch Maven project that depends on
# dev.syncevents:sync-events-client:0.1.0 from that repository alone and
# runs a use of the record model. Offline (-o): every artifact must be in
# the repository already (a verify of this project, and one online run of
# this script for maven-install-plugin and maven-dependency-plugin, put
# them there).
#
#   scripts/scratch-install.sh [work dir]
#
# The repository: $MAVEN_REPO_LOCAL, else ${XDG_CACHE_HOME:-~/.cache}/sync-events/m2.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
repo=${MAVEN_REPO_LOCAL:-${XDG_CACHE_HOME:-$HOME/.cache}/sync-events/m2}
work=${1:-$(mktemp -d)}
mvn="mvn -q -B -o -Dmaven.repo.local=$repo"

mkdir -p "$work/lib" "$work/app/src/main/kotlin"
cp -r "$here/pom.xml" "$here/src" "$work/lib/"
$mvn -f "$work/lib/pom.xml" install -DskipTests

kotlin=$(sed -n 's:.*<kotlin.version>\(.*\)</kotlin.version>.*:\1:p' "$here/pom.xml")
cat > "$work/app/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>scratch</groupId>
  <artifactId>scratch-app</artifactId>
  <version>1</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <kotlin.compiler.daemon>false</kotlin.compiler.daemon>
  </properties>
  <dependencies>
    <dependency>
      <groupId>dev.syncevents</groupId>
      <artifactId>sync-events-client</artifactId>
      <version>0.1.0</version>
    </dependency>
  </dependencies>
  <build>
    <sourceDirectory>src/main/kotlin</sourceDirectory>
    <plugins>
      <plugin>
        <groupId>org.jetbrains.kotlin</groupId>
        <artifactId>kotlin-maven-plugin</artifactId>
        <version>$kotlin</version>
        <configuration><jvmTarget>17</jvmTarget><args><arg>-Werror</arg></args></configuration>
        <executions><execution><id>compile</id><goals><goal>compile</goal></goals></execution></executions>
      </plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
    </plugins>
  </build>
</project>
POM
cat > "$work/app/src/main/kotlin/Main.kt" <<'KT'
import dev.syncevents.Record
import dev.syncevents.RetryPolicy
import dev.syncevents.SqliteQueueStorage
import dev.syncevents.SyncClient
import dev.syncevents.SyncClientConfig
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import java.util.Base64

/** A todo list on the record model, offline (nothing listens on the API's port): the changes are queued and shown on top. */
fun main(args: Array<String>) = runBlocking {
    val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    val token = "x." + Base64.getUrlEncoder().withoutPadding().encodeToString("""{"sub":"alice"}""".toByteArray()) + ".x"
    val storage = SqliteQueueStorage(args[0], user = "alice")
    val sync = SyncClient(storage, SyncClientConfig("http://127.0.0.1:9/", { token }, retry = RetryPolicy(maxElapsedMs = 100)), scope)
    val todos = sync.records("todo")
    todos.put("t1", buildJsonObject { put("title", "Milk"); put("done", false) })
    todos.put("t2", buildJsonObject { put("title", "Bread") })
    todos.patch("t1", buildJsonObject { put("done", true) })
    todos.delete("t2")
    val list: List<Record> = todos.all.first()
    check(list.map { it.id } == listOf("t1") && list.single().fields["done"].toString() == "true" && list.single().pending) { "$list" }
    println("records: $list; queued: ${sync.pending().size}")
    sync.close()
    storage.close()
    scope.cancel()
}
KT
$mvn -f "$work/app/pom.xml" compile
$mvn -f "$work/app/pom.xml" dependency:build-classpath -Dmdep.outputFile="$work/app/cp.txt"
java -cp "$work/app/target/classes:$(cat "$work/app/cp.txt")" MainKt "$work/app/todo.db"
