package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.put
import okhttp3.mockwebserver.Dispatcher
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import okhttp3.mockwebserver.RecordedRequest
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.Collections
import java.util.UUID
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicLong

/**
 * A write to a busy space, as the server is to answer it: accepted (201,
 * stored exactly once) but listed by pulls only once the sequencer places
 * it, a moment later. The client holds it in [SyncClient.waiting], and its
 * status is not Synced, until a pull lists it: for the user's own stream
 * and a followed space's, across a restart and a 410 start-over, and not
 * for ever if it is deleted or never listed.
 */
class ListedLaterTest {
    @TempDir
    lateinit var dir: Path

    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    private val servers = ArrayList<AcceptingServer>()

    @AfterEach
    fun tearDown() {
        scope.cancel()
        servers.forEach { it.close() }
    }

    /** A stream (the user's own, or [space]'s) whose writes are accepted, and listed only at [sequence]. */
    private class AcceptingServer(space: String?) : Dispatcher() {
        private val path = if (space == null) "/api/v1/sync/events" else "/api/v1/spaces/$space/events"
        private val server = MockWebServer().also { it.dispatcher = this; it.start() }
        private val accepted = Collections.synchronizedList(ArrayList<JsonObject>())
        private val listed = Collections.synchronizedList(ArrayList<JsonObject>())
        val url: String = server.url("/").toString()

        /** GETs answered since the last write was accepted. */
        val pullsSinceWrite = AtomicInteger()

        /** Whether the next pull from a cursor is answered 410 CURSOR_EXPIRED. */
        @Volatile
        var expireCursor = false

        override fun dispatch(request: RecordedRequest): MockResponse {
            val u = request.requestUrl!!
            check(u.encodedPath == path) { "not the stream's path: ${request.method} $u" }
            return if (request.method == "POST") accept(request.body.readUtf8()) else page(u.queryParameter("cursor"))
        }

        private fun accept(body: String): MockResponse {
            val e = Json.parseToJsonElement(body).jsonObject
            val stored = JsonObject(e - "payload" + ("receivedAt" to JsonPrimitive("2026-01-01T00:00:01Z")))
            accepted += JsonObject(stored + ("payload" to e["payload"]!!))
            pullsSinceWrite.set(0)
            return MockResponse().setResponseCode(201).setBody(stored.toString())
        }

        private fun page(cursor: String?): MockResponse {
            if (cursor != null && expireCursor) {
                expireCursor = false
                return MockResponse().setResponseCode(410).setBody("""{"error":"CURSOR_EXPIRED","message":"m"}""")
            }
            val events = synchronized(listed) { listed.drop(cursor?.removePrefix("p")?.toInt() ?: 0) }
            val next = "p%016d".format(listed.size)
            pullsSinceWrite.incrementAndGet()
            return MockResponse().setResponseCode(200)
                .setBody("""{"events":$events,"cursor":"$next","hasMore":false,"nextCursor":null}""")
        }

        /** The sequencer's pass: every accepted event listed, in the order accepted. */
        fun sequence() = synchronized(accepted) {
            listed += accepted
            accepted.clear()
        }

        /** Another device deletes an accepted event: it turns into a tombstone in place, and a notice follows. */
        fun deleteAccepted(id: String) = synchronized(accepted) {
            val i = accepted.indexOfFirst { it["id"]!!.jsonPrimitive.content == id }
            val e = accepted[i]
            accepted[i] = JsonObject(e + ("payload" to JsonObject(emptyMap())) + ("deleted" to JsonPrimitive(true)))
            val notice = buildJsonObject { put("id", UUID.randomUUID().toString()); put("type", "event.deleted") }
            accepted += JsonObject(e + notice + ("payload" to buildJsonObject { put("id", id) }))
        }

        fun close() = server.shutdown()
    }

    private fun server(space: String? = null) = AcceptingServer(space).also { servers += it }

    private fun storage(name: String, stream: String = "") = SqliteQueueStorage(dir.resolve("$name.db").toString(), "alice", stream)

    private fun client(server: AcceptingServer, storage: QueueStorage, got: MutableList<SyncEvent> = ArrayList(), startOver: suspend () -> Unit = {}) =
        SyncClient(storage, SyncClientConfig(server.url, { LocalServer.token("alice") }), scope, onEvents = { got += it }, startOver = startOver)

    /**
     * Writes on [c] and waits for the write's own sync to pull after the
     * 201, which does not list it; then [SyncClient.sync] (after that one:
     * one sync at a time) pulls once more. Nothing else syncs [c] after.
     */
    private suspend fun writeAnsweredUnlisted(c: SyncClient, server: AcceptingServer): String {
        val id = c.write("note.created", buildJsonObject { put("text", "oat milk") }).id
        withTimeout(5_000) { while (server.pullsSinceWrite.get() == 0) delay(5) }
        c.sync()
        assertEquals(SyncStatus.Syncing, c.status.value, "answered, not listed: not synced")
        assertEquals(setOf(id), c.waiting.value)
        assertTrue(c.pending().isEmpty(), "answered: not waiting to be sent")
        return id
    }

    /** The write waits through one more pull not listing it, then the pull that lists it delivers it once and clears it. */
    private suspend fun waitsUntilListed(c: SyncClient, server: AcceptingServer, got: List<SyncEvent>) {
        val id = writeAnsweredUnlisted(c, server)
        c.sync()
        assertEquals(SyncStatus.Syncing, c.status.value, "a second pull without it: still not synced")
        assertEquals(setOf(id), c.waiting.value)
        server.sequence()
        c.sync()
        assertEquals(SyncStatus.Synced, c.status.value)
        assertEquals(emptySet<String>(), c.waiting.value)
        assertEquals(listOf(id), got.map { it.id }, "delivered once, when listed")
    }

    @Test
    fun `the user's own stream says Synced only once a pull lists the answered write`() = runBlocking {
        val server = server()
        val got = Collections.synchronizedList(ArrayList<SyncEvent>())
        waitsUntilListed(client(server, storage("me"), got), server, got)
    }

    @Test
    fun `a followed space says Synced only once a pull lists the answered write`() = runBlocking {
        val space = UUID.randomUUID().toString()
        val server = server(space)
        val got = Collections.synchronizedList(ArrayList<SyncEvent>())
        val household = client(server, storage("me")).follow(space, storage("space", stream = space), onEvents = { got += it })
        waitsUntilListed(household, server, got)
    }

    @Test
    fun `a restart still waits for the answered write, kept beside the queue`() = runBlocking {
        val server = server()
        val first = client(server, storage("me"))
        val id = writeAnsweredUnlisted(first, server)
        first.close()

        val again = client(server, storage("me"))
        assertEquals(setOf(id), again.waiting.value, "kept across the restart")
        again.sync()
        assertEquals(SyncStatus.Syncing, again.status.value, "still unlisted: not synced")
        server.sequence()
        again.sync()
        assertEquals(SyncStatus.Synced, again.status.value)
        assertEquals(emptySet<String>(), client(server, storage("me")).waiting.value, "nothing left kept")
    }

    @Test
    fun `a 410 start-over keeps waiting until the pull from the start lists it`() = runBlocking {
        val server = server()
        val startedOver = AtomicInteger()
        val c = client(server, storage("me"), startOver = { startedOver.incrementAndGet() })
        val id = writeAnsweredUnlisted(c, server)
        server.expireCursor = true
        c.sync()
        assertEquals(1, startedOver.get())
        assertEquals(SyncStatus.Syncing, c.status.value, "starting over lists nothing of it: still not synced")
        assertEquals(setOf(id), c.waiting.value)
        server.sequence()
        server.expireCursor = true
        c.sync()
        assertEquals(2, startedOver.get())
        assertEquals(SyncStatus.Synced, c.status.value)
        assertEquals(emptySet<String>(), c.waiting.value)
    }

    @Test
    fun `deleted by another device before it is listed, its tombstone clears the wait`() = runBlocking {
        val server = server()
        val got = Collections.synchronizedList(ArrayList<SyncEvent>())
        val c = client(server, storage("me"), got)
        val id = writeAnsweredUnlisted(c, server)
        server.deleteAccepted(id)
        server.sequence()
        c.sync()
        assertEquals(SyncStatus.Synced, c.status.value)
        assertEquals(emptySet<String>(), c.waiting.value)
        assertEquals(listOf(SyncEvent.Deleted(id), SyncEvent.Deleted(id)), got.toList(), "the tombstone, then the notice")
    }

    @Test
    fun `never listed, the write is let go 10 minutes after its answer`() = runBlocking {
        val server = server()
        val now = AtomicLong(1_780_000_000_000)
        val c = client(server, storage("me")).also { it.clock = now::get }
        val id = writeAnsweredUnlisted(c, server)
        now.addAndGet(SENT_WAIT_MS - 1)
        c.sync()
        assertEquals(setOf(id), c.waiting.value, "just under 10 minutes: still waited for")
        assertEquals(SyncStatus.Syncing, c.status.value)
        now.addAndGet(1)
        c.sync()
        assertEquals(emptySet<String>(), c.waiting.value, "10 minutes: let go")
        assertEquals(SyncStatus.Synced, c.status.value)
    }
}
