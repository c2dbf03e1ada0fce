package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import okhttp3.mockwebserver.Dispatcher
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.RecordedRequest
import okhttp3.mockwebserver.MockWebServer
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.time.Instant

/** Pending and kept writes come back typed: PendingWrite.Event and PendingWrite.Delete, not JSON text. */
class PendingWriteTest {
    @TempDir
    lateinit var dir: Path

    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    @AfterEach
    fun stop() = scope.cancel()

    private fun client(url: String, file: String) = SyncClient(
        SqliteQueueStorage(dir.resolve(file).toString(), "alice"),
        SyncClientConfig(url, { LocalServer.token("alice") }, retry = RetryPolicy(1, 5, maxElapsedMs = 100)),
        scope,
    )

    @Test
    fun `pending writes and deletions come back typed, across a restart`() = runBlocking {
        val before = Instant.now().minusMillis(1)
        val c = client("http://127.0.0.1:9/", "p.db") // nothing answers: they stay queued
        val payload = buildJsonObject { put("title", "Errands"); put("n", 2) }
        val w = c.write("note.created", payload)
        val d = c.delete("e-old")
        c.close()
        assertEquals("note.created", w.type)
        assertEquals(payload, w.payload)
        assertTrue(!w.occurredAt.isBefore(before) && !w.occurredAt.isAfter(Instant.now()), "${w.occurredAt}")
        assertEquals(EntryStatus.PENDING, w.status)
        assertEquals("e-old", d.id)

        val again = client("http://127.0.0.1:9/", "p.db")
        assertEquals(listOf(w, d), again.pending())
        // The very event that is sent: its id, type, occurredAt and payload.
        val stored = SqliteQueueStorage(dir.resolve("p.db").toString(), "alice").list().first()
        val sent = Json.parseToJsonElement(stored.event)
        assertEquals(
            Json.parseToJsonElement(
                """{"id":"${w.id}","type":"note.created","occurredAt":"${w.occurredAt}","payload":{"title":"Errands","n":2}}""",
            ),
            sent,
        )
        assertEquals(w, stored.toPendingWrite())
        assertEquals(w.key, stored.key)
    }

    @Test
    fun `a refused write is kept typed with the server's answer`() = runBlocking {
        val server = MockWebServer()
        server.dispatcher = object : Dispatcher() {
            override fun dispatch(request: RecordedRequest) = if (request.method == "GET") {
                MockResponse().setBody("""{"events":[],"cursor":"p0000000000000000","hasMore":false}""")
            } else {
                MockResponse().setResponseCode(400).setBody("""{"error":"VALIDATION_FAILED","message":"m"}""")
            }
        }
        server.start()
        try {
            val c = client(server.url("/").toString(), "k.db")
            val w = c.write("note.created", buildJsonObject { put("title", "x") })
            c.sync()
            val kept = c.kept().single() as PendingWrite.Event
            assertEquals(w.copy(status = EntryStatus.REJECTED, errorStatus = 400, errorBody = """{"error":"VALIDATION_FAILED","message":"m"}"""), kept)
            assertTrue(c.pending().isEmpty())
        } finally {
            server.shutdown()
        }
    }
}
