package dev.syncevents

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.OkHttpClient
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.UUID

/**
 * The drain of a queue of N events (bench.events, 1000 by default) against
 * make run's server, each request delayed by bench.latencyMs (50 by
 * default) before it is sent, as a round trip would. Not run by `mvn
 * verify` (no *Test name): `mvn -q test -Dtest=DrainBench`.
 */
class DrainBench {
    @TempDir
    lateinit var dir: Path

    @Test
    fun drain() = runBlocking {
        val n = System.getProperty("bench.events", "1000").toInt()
        val latency = System.getProperty("bench.latencyMs", "50").toLong()
        val url = LocalServer.shared.url
        val times = ArrayList<Long>()
        repeat(3) { run ->
            val user = "bench-" + UUID.randomUUID()
            val s = SqliteQueueStorage(dir.resolve("b$run.db").toString(), user)
            val http = OkHttpClient.Builder().addInterceptor { chain ->
                Thread.sleep(latency)
                chain.proceed(chain.request())
            }.build()
            val q = SyncQueue(s, url, { LocalServer.token(user) }, http)
            repeat(n) { q.write("note.created", JsonObject(mapOf("n" to JsonPrimitive(it)))) }
            val start = System.nanoTime()
            val r = q.drain()
            val ms = (System.nanoTime() - start) / 1_000_000
            times += ms
            assertEquals(n, r.sent)
            println("drain of $n events at $latency ms a round trip: ${r.requests} requests, $ms ms")
        }
        println("median: ${times.sorted()[1]} ms")
    }
}
