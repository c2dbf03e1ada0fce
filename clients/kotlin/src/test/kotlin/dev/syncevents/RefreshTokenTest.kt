package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.mockwebserver.Dispatcher
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import okhttp3.mockwebserver.RecordedRequest
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.Base64
import java.util.Collections
import java.util.concurrent.ConcurrentLinkedQueue

/**
 * The token refresh hook: a 401 asks it once, and the request goes again at
 * once with its token under the same Idempotency-Key; a second 401, a hook
 * giving null, or another user's token from it stops the client.
 */
class RefreshTokenTest {
    @TempDir
    lateinit var dir: Path

    private lateinit var server: MockWebServer
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    private val seen: MutableList<RecordedRequest> = Collections.synchronizedList(ArrayList())

    /** Answers to come, by method; once used up, a POST is 201 and a GET an empty page at its end. */
    private val posts = ConcurrentLinkedQueue<MockResponse>()
    private val gets = ConcurrentLinkedQueue<MockResponse>()

    /** A token of [sub], told apart from its others by [v]. */
    private fun jwt(sub: String, v: Int) =
        "x." + Base64.getUrlEncoder().withoutPadding().encodeToString("""{"sub":"$sub","v":$v}""".toByteArray()) + ".x"

    private val old = jwt("alice", 1)
    private val new = jwt("alice", 2)
    private val unauthorized get() = MockResponse().setResponseCode(401).setBody("""{"error":"UNAUTHORIZED","message":"m"}""")
    private val emptyPage = """{"events":[],"cursor":"p0000000000000001","hasMore":false}"""

    @BeforeEach
    fun start() {
        server = MockWebServer()
        server.dispatcher = object : Dispatcher() {
            override fun dispatch(request: RecordedRequest): MockResponse {
                seen += request
                return if (request.method == "GET") {
                    gets.poll() ?: MockResponse().setBody(emptyPage)
                } else {
                    posts.poll() ?: MockResponse().setResponseCode(201).setBody("{}")
                }
            }
        }
        server.start()
    }

    @AfterEach
    fun stop() {
        scope.cancel()
        server.shutdown()
    }

    private val asked: MutableList<String> = Collections.synchronizedList(ArrayList())

    private fun client(refresh: TokenRefresh?) = SyncClient(
        SqliteQueueStorage(dir.resolve("r.db").toString(), "alice"),
        SyncClientConfig(
            server.url("/").toString(), { old }, retry = RetryPolicy(1, 10),
            refreshToken = refresh?.let { r -> { rejected: String -> asked += rejected; r(rejected) } },
        ),
        scope,
    )

    private fun payload() = JsonObject(mapOf("n" to JsonPrimitive(1)))

    private suspend fun settled(c: SyncClient): SyncStatus =
        withTimeout(10_000) { c.status.first { it is SyncStatus.Synced || it is SyncStatus.Stopped || it is SyncStatus.Failed } }

    @Test
    fun `a write refused 401 is sent again with the refreshed token under the same key`() = runBlocking {
        posts += unauthorized
        val c = client { new }
        val e = c.write("note.created", payload())
        // Answered 201: waiting for a pull to list it (this server lists nothing).
        withTimeout(10_000) { c.waiting.first { e.id in it } }
        assertEquals(listOf(old), asked, "the hook asked once, with the refused token")
        val sent = seen.filter { it.method == "POST" }
        assertEquals(2, sent.size)
        assertEquals(listOf(e.key, e.key), sent.map { it.getHeader("Idempotency-Key") }, "one key for both attempts")
        assertEquals(listOf("Bearer $old", "Bearer $new"), sent.map { it.getHeader("Authorization") })
        assertTrue(c.pending().isEmpty())
    }

    @Test
    fun `a second 401 stops the client signed out, the write kept`() = runBlocking {
        posts += unauthorized
        posts += unauthorized
        val c = client { new }
        c.write("note.created", payload())
        assertEquals(SyncStatus.Stopped(StopReason.UNAUTHORIZED, "status 401"), settled(c))
        assertEquals(1, asked.size, "asked once a request")
        assertEquals(2, seen.count { it.method == "POST" })
        assertEquals(0, seen.count { it.method == "GET" }, "no pull after the drain stopped")
        assertEquals(1, c.pending().size)
    }

    @Test
    fun `a hook giving no token stops the client signed out`() = runBlocking {
        posts += unauthorized
        val c = client { null }
        c.write("note.created", payload())
        assertEquals(SyncStatus.Stopped(StopReason.UNAUTHORIZED, "status 401"), settled(c))
        assertEquals(1, asked.size)
        assertEquals(1, seen.size, "nothing sent after the hook gave none")
        assertEquals(1, c.pending().size)
    }

    @Test
    fun `without a hook a 401 stops the client as before`() = runBlocking {
        posts += unauthorized
        val c = client(null)
        c.write("note.created", payload())
        assertEquals(SyncStatus.Stopped(StopReason.UNAUTHORIZED, "status 401"), settled(c))
        assertEquals(1, seen.size)
    }

    @Test
    fun `another user's token from the hook stops the client WRONG_USER, nothing sent with it`() = runBlocking {
        posts += unauthorized
        val c = client { jwt("bob", 1) }
        c.write("note.created", payload())
        val s = settled(c)
        assertEquals(StopReason.WRONG_USER, (s as SyncStatus.Stopped).reason)
        assertEquals(1, seen.size, "only the refused request was sent")
        assertEquals("Bearer $old", seen.single().getHeader("Authorization"))
        assertEquals(1, c.pending().size)
    }

    @Test
    fun `a pull refused 401 is asked again with the refreshed token`() = runBlocking {
        gets += unauthorized
        gets += MockResponse().setBody(
            """{"events":[{"id":"e1","type":"t","occurredAt":"2026-01-01T00:00:00Z","receivedAt":"2026-01-01T00:00:00Z","payload":{}}],"cursor":"p0000000000000009","hasMore":false}""",
        )
        val got = Collections.synchronizedList(ArrayList<SyncEvent>())
        val storage = SqliteQueueStorage(dir.resolve("p.db").toString(), "alice")
        val c = SyncClient(
            storage,
            SyncClientConfig(server.url("/").toString(), { old }, retry = RetryPolicy(1, 10), refreshToken = { asked += it; new }),
            scope,
            onEvents = { got += it },
        )
        c.sync()
        assertEquals(SyncStatus.Synced, c.status.value)
        assertEquals(listOf("e1"), got.map { it.id })
        assertEquals(listOf("Bearer $old", "Bearer $new"), seen.map { it.getHeader("Authorization") })
        assertEquals("p0000000000000009", storage.getValue("cursor"))
    }

    @Test
    fun `a pull refused 401 twice stops signed out with the cursor unmoved`() = runBlocking {
        gets += unauthorized
        gets += unauthorized
        val storage = SqliteQueueStorage(dir.resolve("q.db").toString(), "alice")
        val c = SyncClient(
            storage,
            SyncClientConfig(server.url("/").toString(), { old }, retry = RetryPolicy(1, 10), refreshToken = { asked += it; new }),
            scope,
        )
        c.sync()
        assertEquals(StopReason.UNAUTHORIZED, (c.status.value as SyncStatus.Stopped).reason)
        assertEquals(1, asked.size)
        assertEquals(2, seen.size)
        assertEquals(null, storage.getValue("cursor"))
    }

    @Test
    fun `a pull given another user's token by the hook stops WRONG_USER`() = runBlocking {
        gets += unauthorized
        val storage = SqliteQueueStorage(dir.resolve("w.db").toString(), "alice")
        val c = SyncClient(
            storage,
            SyncClientConfig(server.url("/").toString(), { old }, retry = RetryPolicy(1, 10), refreshToken = { jwt("bob", 1) }),
            scope,
        )
        c.sync()
        assertEquals(StopReason.WRONG_USER, (c.status.value as SyncStatus.Stopped).reason)
        assertEquals(1, seen.size)
        assertEquals(null, storage.getValue("cursor"))
    }
}
