package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import okhttp3.mockwebserver.MockWebServer
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path

/**
 * The drain of N queued events (bench.events, 1000 by default) through
 * SyncClient.sync(), against MockWebServer holding the stream in memory
 * ([FakeEvents]), each request answered bench.latencyMs (50 by default)
 * late, as a round trip would be; then the pull that lists them. As
 * records (record.put), so that the merge is in the time
 * (-Dbench.records=false: plain events). No Go needed.
 * Not run by `mvn verify` (no *Test name): `mvn -q test -Dtest=DrainMockBench`.
 */
class DrainMockBench {
    @TempDir
    lateinit var dir: Path

    @Test
    fun drain() = runBlocking {
        val n = System.getProperty("bench.events", "1000").toInt()
        val latency = System.getProperty("bench.latencyMs", "50").toLong()
        val records = System.getProperty("bench.records", "true").toBoolean()
        val times = ArrayList<Long>()
        repeat(3) { run ->
            val server = MockWebServer().also { it.dispatcher = FakeEvents(latency); it.start() }
            val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
            try {
                val storage = SqliteQueueStorage(dir.resolve("b$run.db").toString(), "alice")
                val url = server.url("/").toString()
                // Queued first, as records.put does, through a queue that wakes no sync.
                val q = SyncQueue(storage, url, { LocalServer.token("alice") })
                repeat(n) {
                    if (records) {
                        q.write(RECORD_PUT, buildJsonObject { put("collection", "todo"); put("id", "t$it"); put("fields", buildJsonObject { put("n", it) }) })
                    } else {
                        q.write("note.created", buildJsonObject { put("n", it) })
                    }
                }
                val c = SyncClient(storage, SyncClientConfig(url, { LocalServer.token("alice") }), scope)
                val todos = c.records("todo")
                val start = System.nanoTime()
                val r = c.sync()
                val ms = (System.nanoTime() - start) / 1_000_000
                times += ms
                assertEquals(if (records) n else 0, todos.list().size)
                assertEquals(SyncStatus.Synced, c.status.value)
                println("sync of $n ${if (records) "records" else "events"} at $latency ms a round trip: ${r.requests} POSTs + ${server.requestCount - r.requests} GETs, $ms ms (drained ${r.sent + r.replayed})")
            } finally {
                scope.cancel()
                server.shutdown()
            }
        }
        println("median: ${times.sorted()[1]} ms")
    }
}
