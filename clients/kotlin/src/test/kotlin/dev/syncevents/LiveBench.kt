package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.OkHttpClient
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.UUID
import java.util.concurrent.atomic.AtomicInteger

/**
 * The live benchmark: over bench.events (200) events written one after
 * another by one device (a SyncQueue, drained after each write), the time
 * to the other device's SyncClient emitting it, which only a poke on its
 * LiveChannel can make it pull (no polling, no live check within the run):
 * from the write's 201 (the moment the writer's OkHttp has the answer, as
 * clients/typescript's bench:live times from its fetch's answer; not
 * drain()'s return, which comes after the queue's bookkeeping in SQLite,
 * often after the arrival) and from the write() call. Against make run's binary started for it with
 * its rate limits off. Not run by `mvn verify` (no *Test name):
 * `mvn -q test -Dtest=LiveBench`.
 */
class LiveBench {
    @TempDir
    lateinit var dir: Path

    @Test
    fun live() = runBlocking {
        val n = System.getProperty("bench.events", "200").toInt()
        val server = LocalServer.start(mapOf("CHANGES_PER_SECOND" to "0", "READS_PER_SECOND" to "0"))
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        try {
            val user = "bench-" + UUID.randomUUID()
            val token = LocalServer.token(user)
            val pulls = AtomicInteger()
            val counting = OkHttpClient.Builder().addInterceptor { chain ->
                if (chain.request().method == "GET") pulls.incrementAndGet()
                chain.proceed(chain.request())
            }.build()
            val reader = SyncClient(
                SqliteQueueStorage(dir.resolve("r.db").toString(), user),
                SyncClientConfig(server.url, { token }, http = counting, channel = LiveChannel(server.realtimeUrl, server.httpHost, { token }, scope), pollIntervalMs = 3_600_000, liveCheckMs = 3_600_000),
                scope,
            )
            val arrivals = Channel<Pair<String, Long>>(Channel.UNLIMITED)
            scope.launch(start = CoroutineStart.UNDISPATCHED) { reader.events.collect { arrivals.send(it.id to System.nanoTime()) } }
            reader.start()
            withTimeout(10_000) { reader.live.first { it == LiveState.Live } }
            withTimeout(10_000) { reader.status.first { it == SyncStatus.Synced } }
            pulls.set(0)

            // When the writer's last POST was answered (its response's headers read).
            val lastAnswer = java.util.concurrent.atomic.AtomicLong()
            val answering = OkHttpClient.Builder().addInterceptor { chain ->
                chain.proceed(chain.request()).also { if (chain.request().method == "POST") lastAnswer.set(System.nanoTime()) }
            }.build()
            val writer = SyncQueue(SqliteQueueStorage(dir.resolve("w.db").toString(), user), server.url, { token }, answering)
            val fromAnswer = ArrayList<Double>()
            val fromWrite = ArrayList<Double>()
            repeat(n) { i ->
                val written = System.nanoTime()
                val id = writer.write("note.created", JsonObject(mapOf("i" to JsonPrimitive(i)))).eventId
                val report = writer.drain()
                val answered = lastAnswer.get()
                assertNull(report.stopped, report.error)
                val (got, at) = withTimeout(5_000) { arrivals.receive() }
                assertEquals(id, got, "event $i arrived once, in order")
                fromAnswer += (at - answered) / 1e6
                fromWrite += (at - written) / 1e6
            }
            assertEquals(null, arrivals.tryReceive().getOrNull(), "nothing arrived twice")
            fun at(xs: List<Double>, q: Double) = xs.sorted()[minOf(xs.size - 1, (q * xs.size).toInt())]
            println(
                "live: $n events; 201 to arrival p50 %.1f ms, p99 %.1f ms, max %.1f ms; write() to arrival p50 %.1f ms, p99 %.1f ms; reader pulls %d"
                    .format(at(fromAnswer, 0.5), at(fromAnswer, 0.99), fromAnswer.max(), at(fromWrite, 0.5), at(fromWrite, 0.99), pulls.get()),
            )
            reader.close()
        } finally {
            scope.cancel()
            server.close()
        }
    }
}
