package dev.syncevents

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import okhttp3.OkHttpClient
import okhttp3.Request
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.UUID

/** Against the real handler, as `make run` serves it. */
@Tag("server")
class RealServerTest {
    @TempDir
    lateinit var dir: Path

    @Test
    fun `a queue of 250 drains in batches and the server lists each event once`() = runBlocking {
        val server = LocalServer.shared
        val user = "kt-" + UUID.randomUUID()
        val token = LocalServer.token(user)
        val s = SqliteQueueStorage(dir.resolve("q.db").toString(), user)
        val q = SyncQueue(s, server.url, { token })
        val ids = (0 until 250).map { q.write("note.created", JsonObject(mapOf("n" to JsonPrimitive(it)))).eventId }
        val report = q.drain()
        assertNull(report.stopped, report.error)
        assertEquals(250, report.sent)
        assertEquals(3, report.requests)
        assertEquals(ids, listed(server.url, token))
    }

    @Test
    fun `answers lost after the commit and 503s, each event stored once`() = runBlocking {
        val server = LocalServer.shared
        val user = "kt-" + UUID.randomUUID()
        val token = LocalServer.token(user)
        var calls = 0
        // Between client and server: every third call reaches the server and its answer is lost;
        // every fifth is refused with a 503 before it reaches it.
        val faulty = OkHttpClient.Builder().addInterceptor { chain ->
            calls++
            when {
                calls % 5 == 0 -> okhttp3.Response.Builder().request(chain.request()).protocol(okhttp3.Protocol.HTTP_1_1)
                    .code(503).message("fault").header("Retry-After", "0").body(okhttp3.ResponseBody.EMPTY).build()
                calls % 3 == 0 -> {
                    chain.proceed(chain.request()).close()
                    throw java.io.IOException("answer lost after the commit")
                }
                else -> chain.proceed(chain.request())
            }
        }.build()
        val s = SqliteQueueStorage(dir.resolve("f.db").toString(), user)
        val q = SyncQueue(s, server.url, { token }, faulty, RetryPolicy(baseDelayMs = 1, maxDelayMs = 20), maxBatchEvents = 7)
        val ids = (0 until 60).map { q.write("note.created", JsonObject(mapOf("n" to JsonPrimitive(it)))).eventId }
        val report = q.drain()
        assertNull(report.stopped, report.error)
        assertEquals(60, report.sent + report.replayed)
        assertTrue(report.replayed > 0 && report.retries > 0, "faults were met: $report")
        assertEquals(ids, listed(server.url, token))
    }

    companion object {
        /** Every event id the server lists for the token's user, in order. */
        fun listed(url: String, token: String): List<String> {
            val http = OkHttpClient()
            val out = ArrayList<String>()
            var cursor: String? = null
            while (true) {
                val u = "$url/api/v1/sync/events?limit=1000" + (cursor?.let { "&cursor=$it" } ?: "")
                val body = http.newCall(Request.Builder().url(u).header("Authorization", "Bearer $token").build()).execute()
                    .use { check(it.code == 200) { "GET events: ${it.code}" }; it.body.string() }
                val page = Json.parseToJsonElement(body).jsonObject
                out += page["events"]!!.jsonArray.map { it.jsonObject["id"]!!.jsonPrimitive.content }
                cursor = page["cursor"]?.jsonPrimitive?.content
                if (page["hasMore"]?.jsonPrimitive?.content != "true") return out
            }
        }
    }
}
