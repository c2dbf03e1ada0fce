package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import okhttp3.OkHttpClient
import okhttp3.Request
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.UUID

/**
 * Against make run's server through [FaultProxy]: connections reset after
 * the server committed, 503s after it committed and before it was reached,
 * 429s, both with Retry-After. Each event queued must be listed once, and
 * nothing else.
 */
@Tag("server")
class FaultServerTest {
    @TempDir
    lateinit var dir: Path

    private val server = LocalServer.shared
    private val seed = System.getProperty("fault.seed", "20260601").toInt()
    private val proxy = FaultProxy(
        server.url, seed,
        rates = mapOf(
            Fault.RESET_AFTER_FORWARDING to 0.15,
            Fault.ANSWER_503_AFTER_FORWARDING to 0.1,
            Fault.ANSWER_503 to 0.08,
            Fault.ANSWER_429 to 0.08,
        ),
        // The first batch's and the first create's answers are lost after the commit.
        first = mapOf(
            "POST /api/v1/sync/events/batch" to listOf(Fault.RESET_AFTER_FORWARDING),
            "POST /api/v1/spaces" to listOf(Fault.RESET_AFTER_FORWARDING),
        ),
    )

    // Retry-After: 1 is honoured up to the cap: 300 ms.
    private val retry = RetryPolicy(baseDelayMs = 5, maxDelayMs = 300)

    @AfterEach
    fun stop() = proxy.close()

    private fun payload(i: Int) = JsonObject(mapOf("n" to JsonPrimitive(i), "text" to JsonPrimitive("note $i: \"quoted\", émoji 🚀")))

    @Test
    fun `through resets after the commit, 503s and 429s, every queued event is listed once and every listed one was queued once`() = runBlocking {
        val user = "kt-" + UUID.randomUUID()
        val token = LocalServer.token(user)
        val q = SyncQueue(SqliteQueueStorage(dir.resolve("w.db").toString(), user), proxy.url, { token }, retry = retry, maxBatchEvents = 6)
        val written = (0 until 90).map { q.write("note.created", payload(it)).eventId }
        val deleted = written.filterIndexed { i, _ -> i % 15 == 7 }
        deleted.forEach { q.delete(it) }
        val report = q.drain()
        assertNull(report.stopped, report.error)
        assertEquals(written.size + deleted.size, report.sent + report.replayed, "$report")
        assertTrue(report.replayed > 0 && report.retries > 0, "answers lost after commits were replayed: $report")

        // As the server lists them, read directly: each written event once, in order, the deleted as
        // tombstones in their place, and one deletion notice for each deleted one.
        val listed = listed(server.url, token)
        val (notices, events) = listed.partition { it.type == "event.deleted" }
        assertEquals(written, events.map { it.id })
        assertEquals(deleted.toSet(), events.filter { it.deleted }.map { it.id }.toSet())
        assertEquals(deleted, notices.map { it.deletedId })

        // Another device pulls through the same faults: each event once, and each deletion.
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        try {
            val got = java.util.Collections.synchronizedList(ArrayList<SyncEvent>())
            val reader = SyncClient(
                SqliteQueueStorage(dir.resolve("r.db").toString(), user),
                SyncClientConfig(proxy.url, { token }, retry = retry),
                scope,
                onEvents = { got += it },
            )
            reader.sync()
            assertEquals(SyncStatus.Synced, reader.status.value)
            assertEquals(written - deleted.toSet(), got.filterIsInstance<SyncEvent.Event>().map { it.id })
            assertEquals(deleted.toSet(), got.filterIsInstance<SyncEvent.Deleted>().map { it.id }.toSet())
            reader.close()
        } finally {
            scope.cancel()
        }
        assertTrue(proxy.injected.values.all { it.get() > 0 }, "every fault was met: ${proxy.injected}")
        // Each mutation went under one key whatever befell it, so each retry after a commit was
        // answered as a replay: none needed the event ids' own check (409 EVENT_ALREADY_EXISTS).
        assertTrue(proxy.keysByRequest.values.all { it.size == 1 }, "one key per mutation")
        assertTrue(proxy.replayed.get() > 0, "replays: ${proxy.replayed}")
        assertEquals(null, proxy.answered[409], "answers: ${proxy.answered}")
    }

    @Test
    fun `a space created and written to through the faults, once each`() = runBlocking {
        val user = "kt-" + UUID.randomUUID()
        val token = LocalServer.token(user)
        val spaces = Spaces(SqliteQueueStorage(dir.resolve("s.db").toString(), user), proxy.url, { token }, retry = retry)
        val space = spaces.create("Faulty")
        assertEquals(listOf(space), spaces.list())
        assertTrue(proxy.injected.getValue(Fault.RESET_AFTER_FORWARDING).get() >= 1, "the create's first answer was lost")
        val q = SyncQueue(
            SqliteQueueStorage(dir.resolve("s.db").toString(), user, stream = space.id), proxy.url, { token },
            retry = retry, space = space.id, maxBatchEvents = 4,
        )
        val written = (0 until 30).map { q.write("note.created", payload(it)).eventId }
        assertNull(q.drain().stopped)
        val listed = listed(server.url, token, space = space.id)
        assertEquals(listOf("space.created"), listed.filter { it.type.startsWith("space.") }.map { it.type }, "created once")
        assertEquals(written, listed.filter { it.type == "note.created" }.map { it.id })
    }

    /** An event as the server lists it. */
    private data class Listed(val id: String, val type: String, val deleted: Boolean, val deletedId: String?)

    /** Every event of the stream, read directly from the server. */
    private fun listed(url: String, token: String, space: String? = null): List<Listed> {
        val path = if (space == null) "sync/events" else "spaces/$space/events"
        val out = ArrayList<Listed>()
        var cursor: String? = null
        while (true) {
            val u = "$url/api/v1/$path?limit=1000" + (cursor?.let { "&cursor=$it" } ?: "")
            val body = OkHttpClient().newCall(Request.Builder().url(u).header("Authorization", "Bearer $token").build()).execute()
                .use { check(it.code == 200) { "GET events: ${it.code}" }; it.body.string() }
            val page = Json.parseToJsonElement(body).jsonObject
            out += page["events"]!!.jsonArray.map { e ->
                val o = e.jsonObject
                Listed(
                    id = o["id"]!!.jsonPrimitive.content,
                    type = o["type"]?.jsonPrimitive?.content ?: "",
                    deleted = o["deleted"]?.jsonPrimitive?.content == "true",
                    deletedId = (o["payload"] as? JsonObject)?.get("id")?.jsonPrimitive?.content,
                )
            }
            cursor = page["cursor"]?.jsonPrimitive?.content
            if (page["hasMore"]?.jsonPrimitive?.content != "true") return out
        }
    }
}
