package dev.syncevents

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.concurrent.TimeUnit

class SyncQueueTest {
    private lateinit var server: MockWebServer

    @TempDir
    lateinit var dir: Path

    @BeforeEach
    fun start() {
        server = MockWebServer().also { it.start() }
    }

    @AfterEach
    fun stop() {
        server.shutdown()
    }

    private fun storage(user: String = "alice") = SqliteQueueStorage(dir.resolve("q.db").toString(), user)

    private fun queue(s: QueueStorage, token: String = LocalServer.token("alice"), maxBatch: Int = MAX_BATCH_EVENTS) =
        SyncQueue(s, server.url("/").toString(), { token }, retry = RetryPolicy(baseDelayMs = 1, maxDelayMs = 50), maxBatchEvents = maxBatch)

    private fun payload(i: Int) = JsonObject(mapOf("n" to JsonPrimitive(i)))

    @Test
    fun `an entry reads back from SQLite as it was written, a pending one without an error status`() {
        val s = storage()
        val e = queue(s).write("note.created", payload(1))
        assertEquals(listOf(e), s.list())
        val rejected = e.copy(status = EntryStatus.REJECTED, errorStatus = 400, errorBody = "{}")
        s.updateAll(listOf(rejected))
        assertEquals(listOf(rejected), storage().list(), "and from the file reopened")
    }

    @Test
    fun `a batch keeps its key through 503 and 429 and is sent whole`() = runBlocking {
        val s = storage()
        repeat(3) { queue(s).write("note.created", payload(it)) }
        server.enqueue(MockResponse().setResponseCode(503))
        server.enqueue(MockResponse().setResponseCode(429).setHeader("Retry-After", "0"))
        server.enqueue(MockResponse().setResponseCode(201).setBody("{}"))
        val report = queue(s).drain()
        assertEquals(3, report.sent)
        assertEquals(2, report.retries)
        assertNull(report.stopped)
        val reqs = (1..3).map { server.takeRequest(1, TimeUnit.SECONDS)!! }
        val keys = reqs.map { it.getHeader("Idempotency-Key") }.toSet()
        assertEquals(1, keys.size, "every attempt under one key")
        assertTrue(reqs.all { it.path == "/api/v1/sync/events/batch" })
        val bodies = reqs.map { it.body.readUtf8() }.toSet()
        assertEquals(1, bodies.size, "every attempt the very same batch")
        assertEquals(3, Json.parseToJsonElement(bodies.first()).jsonObject["events"]!!.jsonArray.size)
        assertTrue(s.list().isEmpty())
    }

    @Test
    fun `Retry-After is honoured but capped`() {
        val p = RetryPolicy(baseDelayMs = 10, maxDelayMs = 200)
        assertEquals(200, p.delayMs(1, 3_600_000))
        assertEquals(150, p.delayMs(1, 150))
        assertEquals(120_000L, retryAfterMs("120"))
        assertNull(retryAfterMs("soon"))
    }

    @Test
    fun `batches hold at most 98 events, 97 in a space`() = runBlocking {
        val s = storage()
        repeat(200) { queue(s).write("t", payload(it)) }
        repeat(3) { server.enqueue(MockResponse().setResponseCode(201).setBody("{}")) }
        val report = queue(s).drain()
        assertEquals(200, report.sent)
        val sizes = (1..3).map {
            Json.parseToJsonElement(server.takeRequest().body.readUtf8()).jsonObject["events"]!!.jsonArray.size
        }
        assertEquals(listOf(98, 98, 4), sizes)

        val sp = SqliteQueueStorage(dir.resolve("q.db").toString(), "alice", "space-1")
        val spaceQueue = SyncQueue(sp, server.url("/").toString(), { LocalServer.token("alice") }, space = "space-1", maxBatchEvents = 500)
        repeat(98) { spaceQueue.write("t", payload(it)) }
        repeat(2) { server.enqueue(MockResponse().setResponseCode(201).setBody("{}")) }
        spaceQueue.drain()
        val first = server.takeRequest()
        assertEquals("/api/v1/spaces/space-1/events/batch", first.path)
        assertEquals(97, Json.parseToJsonElement(first.body.readUtf8()).jsonObject["events"]!!.jsonArray.size)
    }

    @Test
    fun `a 409 for a reused key and a 400 are kept for the app, never resent`() = runBlocking {
        val s = storage()
        val q = queue(s, maxBatch = 1)
        val a = q.write("t", payload(1))
        val b = q.write("t", payload(2))
        server.enqueue(MockResponse().setResponseCode(409).setBody("""{"error":"IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD","message":"m"}"""))
        server.enqueue(MockResponse().setResponseCode(400).setBody("""{"error":"VALIDATION_FAILED","message":"m"}"""))
        val report = q.drain()
        assertEquals(1, report.conflicts)
        assertEquals(1, report.rejected)
        assertEquals(mapOf(a.key to EntryStatus.CONFLICT, b.key to EntryStatus.REJECTED), q.kept().associate { it.key to it.status })
        assertEquals(400, q.kept().single { it.key == b.key }.errorStatus)
        val again = q.drain()
        assertEquals(0, again.requests, "kept entries are not sent again")
        assertEquals(2, server.requestCount)
    }

    @Test
    fun `a token of another user or none sends nothing`() = runBlocking {
        val s = storage("alice")
        queue(s).write("t", payload(1))
        assertEquals(StopReason.WRONG_USER, queue(s, token = LocalServer.token("bob")).drain().stopped)
        assertEquals(StopReason.UNREADABLE_TOKEN, queue(s, token = "not-a-jwt").drain().stopped)
        assertEquals(0, server.requestCount)
        assertEquals(1, s.list().size)
    }

    @Test
    fun `a 401 stops the drain and keeps the entry with its key`() = runBlocking {
        val s = storage()
        val e = queue(s).write("t", payload(1))
        server.enqueue(MockResponse().setResponseCode(401).setBody("""{"error":"UNAUTHORIZED","message":"m"}"""))
        assertEquals(StopReason.UNAUTHORIZED, queue(s).drain().stopped)
        assertEquals(listOf(e.key), s.list().map { it.key })
        server.enqueue(MockResponse().setResponseCode(201).setBody("{}"))
        assertEquals(1, queue(s).drain().sent)
        server.takeRequest()
        assertEquals(e.key, server.takeRequest().getHeader("Idempotency-Key"))
    }

    @Test
    fun `the token's sub is read without verifying it`() {
        assertEquals("alice", tokenSubject(LocalServer.token("alice")))
        assertNull(tokenSubject("a.b.c"))
        assertNull(tokenSubject("x.${java.util.Base64.getUrlEncoder().encodeToString("""{"sub":""}""".toByteArray())}.x"))
    }

    @Test
    fun `an answer not the contract's stops the drain and keeps the entries with their keys`() = runBlocking {
        val s = storage()
        val e = queue(s).write("t", payload(1))
        server.enqueue(MockResponse().setResponseCode(200).setBody("<html>captive portal</html>"))
        val report = queue(s).drain()
        assertEquals(StopReason.UNEXPECTED_ANSWER, report.stopped)
        assertEquals(listOf(e.key to EntryStatus.PENDING), s.list().map { it.key to it.status })
    }

    @Test
    fun `a failing SQLite write queues nothing, not part of a batch`() {
        val path = dir.resolve("fail.db").toString()
        val s = SqliteQueueStorage(path, "alice")
        // A real SQLite refusing the third row, as a full disk would mid-transaction.
        java.sql.DriverManager.getConnection("jdbc:sqlite:$path").use { c ->
            c.createStatement().execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON sync_queue WHEN NEW.event LIKE '%boom%' " +
                    "BEGIN SELECT RAISE(ABORT, 'disk full'); END",
            )
        }
        val entries = listOf("a", "b", "boom").map { QueueEntry(java.util.UUID.randomUUID().toString(), it, """{"id":"$it"}""") }
        val err = runCatching { s.add(entries) }.exceptionOrNull()
        assertTrue(err is java.sql.SQLException, "the add is refused: $err")
        assertTrue(s.list().isEmpty(), "nothing half-queued")
        val q = SyncQueue(s, server.url("/").toString(), { LocalServer.token("alice") })
        assertTrue(runCatching { q.write("t", JsonObject(mapOf("x" to JsonPrimitive("boom")))) }.isFailure)
        assertTrue(s.list().isEmpty())
        q.write("t", payload(1))
        assertEquals(1, s.list().size)
    }
}
