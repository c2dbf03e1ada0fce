package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
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
import java.util.Collections
import java.util.concurrent.TimeUnit

/**
 * Carol's storage, alice's token: every path (a pull with nothing queued,
 * a drain of queued writes, the live channel, a followed space, a storage
 * reopened) stops with WRONG_USER before anything is sent or stored. The
 * server answers any GET with alice's events and accepts any subscription,
 * so a request that got through would show in carol's storage.
 */
class CrossUserTest {
    @TempDir
    lateinit var dir: Path

    private lateinit var server: MockWebServer
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    /** Every request the server saw, as "METHOD path", the socket's messages as "ws <message>". */
    private val seen: MutableList<String> = Collections.synchronizedList(ArrayList())

    private val alice = LocalServer.token("alice")
    private val carol = LocalServer.token("carol")
    private val wrongUser = SyncStatus.Stopped(StopReason.WRONG_USER, "the token is another user's than the storage's")

    private val alicesPage =
        """{"events":[""" + (1..3).joinToString(",") {
            """{"id":"alice-$it","type":"note.created","occurredAt":"2026-01-01T00:00:00Z","receivedAt":"2026-01-01T00:00:00Z","payload":{"n":$it}}"""
        } + """],"cursor":"p00000000000000a1","hasMore":false}"""

    @BeforeEach
    fun start() {
        server = MockWebServer()
        server.dispatcher = object : Dispatcher() {
            override fun dispatch(request: RecordedRequest): MockResponse {
                seen += "${request.method} ${request.path}"
                return when {
                    request.path == "/event/realtime" -> MockResponse().withWebSocketUpgrade(EventApi())
                    request.method == "GET" -> MockResponse().setResponseCode(200).setBody(alicesPage)
                    else -> MockResponse().setResponseCode(201).setBody("{}")
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

    /** An Event API that accepts every subscription and pokes it at once. */
    private inner class EventApi : WebSocketListener() {
        override fun onMessage(webSocket: WebSocket, text: String) {
            seen += "ws $text"
            when {
                text.contains("\"connection_init\"") -> webSocket.send("""{"type":"connection_ack","connectionTimeoutMs":300000}""")
                text.contains("\"subscribe\"") -> {
                    val id = Regex("\"id\":\"([^\"]+)\"").find(text)!!.groupValues[1]
                    webSocket.send("""{"type":"subscribe_success","id":"$id"}""")
                    webSocket.send("""{"type":"data","id":"$id","event":"{\"cursor\":\"p00000000000000a1\"}"}""")
                }
            }
        }

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            webSocket.close(1000, null)
        }
    }

    private val url get() = server.url("/").toString()

    private fun carolsStorage(name: String = "x.db", stream: String = "") = SqliteQueueStorage(dir.resolve(name).toString(), "carol", stream)

    private fun client(
        storage: QueueStorage,
        token: String = alice,
        delivered: MutableList<SyncEvent> = ArrayList(),
        channel: LiveChannel? = null,
    ) = SyncClient(
        storage,
        SyncClientConfig(url, { token }, retry = RetryPolicy(1, 10), channel = channel, pollIntervalMs = 50, liveCheckMs = 50),
        scope,
        onEvents = { delivered += it },
    )

    /** What a collector of [SyncClient.events] got. */
    private fun collected(c: SyncClient): MutableList<SyncEvent> =
        Collections.synchronizedList(ArrayList<SyncEvent>()).also { got -> scope.launch { c.events.collect { got += it } } }

    @Test
    fun `nothing queued, another user's token pulls nothing, stores nothing, and stops`() = runBlocking {
        val s = carolsStorage()
        val delivered = ArrayList<SyncEvent>()
        val c = client(s, delivered = delivered)
        val viewed = collected(c)
        c.sync()
        assertEquals(wrongUser, c.status.value)
        assertEquals(emptyList<String>(), seen.toList(), "nothing sent")
        assertEquals(null, s.getValue("cursor"), "no cursor moved")
        assertEquals(emptyList<SyncEvent>(), delivered, "nothing delivered to onEvents")
        assertEquals(emptyList<SyncEvent>(), viewed.toList(), "nothing on events")
        c.close()
    }

    @Test
    fun `writes queued, another user's token sends none of them and keeps them queued`() = runBlocking {
        val s = carolsStorage()
        val c = client(s)
        val e = c.write("note.created", JsonObject(mapOf("title" to JsonPrimitive("carol's"))))
        val report = c.sync()
        assertEquals(StopReason.WRONG_USER, report.stopped)
        Thread.sleep(300) // the write's own sync, woken in the scope, may run after this one: let it end too
        assertEquals(wrongUser, c.status.value)
        assertEquals(emptyList<String>(), seen.toList(), "nothing sent")
        assertEquals(listOf(e), c.pending(), "the write kept, with its key")
        assertEquals(null, s.getValue("cursor"))
        c.close()
    }

    @Test
    fun `started on a live channel with another user's token, it subscribes to nothing and pulls nothing`() = runBlocking {
        val s = carolsStorage()
        val channel = LiveChannel(url.replace("http://", "ws://") + "event/realtime", "api.example.test", { alice }, scope)
        val c = client(s, channel = channel)
        val viewed = collected(c)
        c.start()
        // A followed space's client, started with its user's: no subscription to the space's channel either.
        val household = c.follow("household", carolsStorage(stream = "household"))
        household.start() // started by follow() unless c was stopped already; started either way
        withTimeout(10_000) { c.status.first { it == wrongUser } }
        withTimeout(10_000) { household.status.first { it == wrongUser } }
        Thread.sleep(500) // a poke, a poll or a live check would have come by now (they are 50 ms)
        assertEquals(emptyList<String>(), seen.toList(), "no socket, no subscription, no pull")
        assertEquals(null, s.getValue("cursor"))
        assertEquals(emptyList<SyncEvent>(), viewed.toList())
        assertEquals(LiveState.Stopped, c.live.value)
        c.close()
        household.close()
        channel.close()
    }

    @Test
    fun `a followed space under another user's token pulls nothing`() = runBlocking {
        val c = client(carolsStorage())
        val space = carolsStorage(stream = "household")
        val delivered = ArrayList<SyncEvent>()
        val household = c.follow("household", space, onEvents = { delivered += it })
        household.sync()
        assertEquals(wrongUser, household.status.value)
        household.write("chore.added", JsonObject(emptyMap()))
        household.sync()
        Thread.sleep(300) // the write's own sync, woken in the scope, may run after this one: let it end too
        assertEquals(wrongUser, household.status.value)
        assertEquals(emptyList<String>(), seen.toList(), "nothing sent to the space")
        assertEquals(null, space.getValue("cursor"))
        assertEquals(emptyList<SyncEvent>(), delivered)
        c.close()
        household.close()
    }

    @Test
    fun `a storage reopened under another user's token keeps its user's cursor, and its user's token pulls from it`() = runBlocking {
        carolsStorage("r.db").use { it.setValue("cursor", "p0000000000000007") }

        val reopened = carolsStorage("r.db")
        val c = client(reopened)
        c.sync()
        assertEquals(wrongUser, c.status.value)
        c.close()
        reopened.close()
        assertEquals(emptyList<String>(), seen.toList(), "nothing sent")

        val again = carolsStorage("r.db")
        assertEquals("p0000000000000007", again.getValue("cursor"), "carol's cursor where she left it")
        val mine = client(again, token = carol)
        mine.sync()
        assertEquals(SyncStatus.Synced, mine.status.value)
        assertTrue(seen.single().contains("cursor=p0000000000000007"), "carol's pull from her own cursor: $seen")
        mine.close()
        again.close()
    }

    @Test
    fun `a token with no readable sub is refused before any pull`() = runBlocking {
        val s = carolsStorage()
        val c = client(s, token = "opaque-token")
        c.sync()
        assertEquals(StopReason.UNREADABLE_TOKEN, (c.status.value as SyncStatus.Stopped).reason)
        assertEquals(emptyList<String>(), seen.toList())
        c.close()
    }

    @Test
    fun `the server is reached at all (the fixture works)`() = runBlocking {
        val c = client(carolsStorage(), token = carol)
        c.sync()
        assertEquals(SyncStatus.Synced, c.status.value)
        assertEquals(1, seen.size)
        assertTrue(server.takeRequest(1, TimeUnit.SECONDS) != null)
        c.close()
    }
}
