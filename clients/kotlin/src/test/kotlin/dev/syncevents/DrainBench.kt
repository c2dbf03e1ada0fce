package dev.syncevents

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonArray
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
 * make run's server started for it with its rate limits off, each request
 * delayed by bench.latencyMs (50 by default) before it is sent, as a round
 * trip would: the set-up of clients/typescript's `npm run bench` (its
 * batches of 98; its proxy delays each request the same way before
 * forwarding it), the same events (`note.created`, `{i, title, items}`),
 * the drain alone timed. The queue is in SQLite, or with
 * -Dbench.storage=memory in memory as the TypeScript bench's
 * (MemoryStorage); -Dbench.noDelay=true opens its sockets with TCP_NODELAY,
 * as Node.js does (OkHttp by default does not: each POST then waits for
 * the server's delayed ACK, about 40 ms on Linux). Not run by `mvn verify` (no *Test name):
 * `mvn -q test -Dtest=DrainBench`.
 */
class DrainBench {
    @TempDir
    lateinit var dir: Path

    @Test
    fun drain() = runBlocking {
        val n = System.getProperty("bench.events", "1000").toInt()
        val latency = System.getProperty("bench.latencyMs", "50").toLong()
        val memory = System.getProperty("bench.storage", "sqlite") == "memory"
        val noDelay = System.getProperty("bench.noDelay", "false").toBoolean()
        val server = LocalServer.start(mapOf("CHANGES_PER_SECOND" to "0", "READS_PER_SECOND" to "0"))
        val url = server.url
        val times = ArrayList<Long>()
        try {
            repeat(3) { run ->
                val user = "bench-" + UUID.randomUUID()
                val s = if (memory) MemoryQueueStorage(user) else SqliteQueueStorage(dir.resolve("b$run.db").toString(), user)
                val http = OkHttpClient.Builder().addInterceptor { chain ->
                    Thread.sleep(latency)
                    chain.proceed(chain.request())
                }.apply { if (noDelay) socketFactory(NoDelaySockets) }.build()
                val q = SyncQueue(s, url, { LocalServer.token(user) }, http)
                repeat(n) {
                    q.write("note.created", JsonObject(mapOf("i" to JsonPrimitive(it), "title" to JsonPrimitive("note $it"), "items" to JsonArray(listOf(JsonPrimitive("milk"), JsonPrimitive("eggs"))))))
                }
                val start = System.nanoTime()
                val r = q.drain()
                val ms = (System.nanoTime() - start) / 1_000_000
                times += ms
                assertEquals(n, r.sent)
                println("drain of $n events at $latency ms a round trip (${if (memory) "memory" else "SQLite"}${if (noDelay) ", TCP_NODELAY" else ""}): ${r.requests} requests, $ms ms")
            }
        } finally {
            server.close()
        }
        println("median: ${times.sorted()[1]} ms")
    }
}

/** A queue in memory, as the TypeScript bench's MemoryStorage: for comparing the drain without SQLite. */
internal class MemoryQueueStorage(override val user: String) : QueueStorage {
    private val entries = LinkedHashMap<String, QueueEntry>()
    private val values = HashMap<String, String>()

    @Synchronized override fun add(entries: List<QueueEntry>) = entries.forEach { this.entries[it.key] = it }

    @Synchronized override fun list(): List<QueueEntry> = entries.values.toList()

    @Synchronized override fun updateAll(entries: List<QueueEntry>) = entries.forEach { if (it.key in this.entries) this.entries[it.key] = it }

    @Synchronized override fun removeAll(keys: Collection<String>) = keys.forEach { entries.remove(it) }

    @Synchronized override fun getValue(name: String): String? = values[name]

    @Synchronized override fun setValue(name: String, value: String?) {
        if (value == null) values.remove(name) else values[name] = value
    }

    @Synchronized override fun clear() {
        entries.clear()
        values.clear()
    }
}

/** Sockets with TCP_NODELAY (Nagle off), as Node.js's http opens them. */
internal object NoDelaySockets : javax.net.SocketFactory() {
    private val d: javax.net.SocketFactory = javax.net.SocketFactory.getDefault()

    override fun createSocket(): java.net.Socket = d.createSocket().also { it.tcpNoDelay = true }

    override fun createSocket(host: String?, port: Int): java.net.Socket = d.createSocket(host, port).also { it.tcpNoDelay = true }

    override fun createSocket(host: String?, port: Int, localHost: java.net.InetAddress?, localPort: Int): java.net.Socket =
        d.createSocket(host, port, localHost, localPort).also { it.tcpNoDelay = true }

    override fun createSocket(host: java.net.InetAddress?, port: Int): java.net.Socket = d.createSocket(host, port).also { it.tcpNoDelay = true }

    override fun createSocket(address: java.net.InetAddress?, port: Int, localAddress: java.net.InetAddress?, localPort: Int): java.net.Socket =
        d.createSocket(address, port, localAddress, localPort).also { it.tcpNoDelay = true }
}
