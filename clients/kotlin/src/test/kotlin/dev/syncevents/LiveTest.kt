package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import okhttp3.mockwebserver.Dispatcher
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import okhttp3.mockwebserver.RecordedRequest
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.Base64
import java.util.concurrent.LinkedBlockingQueue
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlin.random.Random

/**
 * The live channel against an AppSync Events stand-in on MockWebServer,
 * speaking the protocol as the Event API does; the client's pulls answered
 * by the same server.
 */
class LiveTest {
    @TempDir
    lateinit var dir: Path

    private lateinit var server: MockWebServer
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    /** The requests, in order: "ws" for each upgrade asked for, "pull" for each GET of events. */
    private val requests = LinkedBlockingQueue<String>()

    /** Messages the client sent on its sockets, as JSON. */
    private val sent = LinkedBlockingQueue<JsonObject>()

    /** Server sides of the sockets, newest last. */
    private val sockets = LinkedBlockingQueue<WebSocket>()
    private val closedByClient = AtomicInteger()

    @Volatile
    private var upgrade = true

    @Volatile
    private var refuse = false

    @Volatile
    private var ackTimeoutMs = 300_000L

    private var lastUpgrade: RecordedRequest? = null

    /** An upgrade with one of these tokens is answered 401, as AppSync refuses an unauthorized connection. */
    @Volatile
    private var unauthorizedUpgrade: Set<String> = emptySet()

    /** A subscribe with one of these tokens is answered subscribe_error UnauthorizedException. */
    @Volatile
    private var unauthorizedSubscribe: Set<String> = emptySet()

    /** The token of each upgrade asked for, in order. */
    private val upgradeTokens = LinkedBlockingQueue<String>()

    @BeforeEach
    fun start() {
        server = MockWebServer()
        server.dispatcher = object : Dispatcher() {
            override fun dispatch(request: RecordedRequest): MockResponse = when {
                request.path == "/event/realtime" -> {
                    requests += "ws"
                    lastUpgrade = request
                    upgradeToken(request)?.let { upgradeTokens += it }
                    when {
                        !upgrade -> MockResponse().setResponseCode(503)
                        upgradeToken(request) in unauthorizedUpgrade ->
                            MockResponse().setResponseCode(401).setBody("""{"errors":[{"errorType":"UnauthorizedException"}]}""")
                        else -> MockResponse().withWebSocketUpgrade(EventApi())
                    }
                }
                request.path!!.startsWith("/api/v1/sync/events") -> {
                    requests += "pull"
                    MockResponse().setResponseCode(200).setBody("""{"events":[],"cursor":"p00000000000000ff","hasMore":false}""")
                }
                else -> MockResponse().setResponseCode(404)
            }
        }
        server.start()
    }

    @AfterEach
    fun stop() {
        scope.cancel()
        server.shutdown()
    }

    /** The Event API's side of one connection. */
    private inner class EventApi : WebSocketListener() {
        override fun onOpen(webSocket: WebSocket, response: Response) {
            sockets += webSocket
        }

        override fun onMessage(webSocket: WebSocket, text: String) {
            val m = Json.parseToJsonElement(text).jsonObject
            sent += m
            when (m["type"]?.jsonPrimitive?.content) {
                "connection_init" -> webSocket.send("""{"type":"connection_ack","connectionTimeoutMs":$ackTimeoutMs}""")
                "subscribe" -> {
                    val id = m["id"]!!.jsonPrimitive.content
                    webSocket.send(
                        if (refuse || m["authorization"]?.jsonObject?.get("Authorization")?.jsonPrimitive?.content in unauthorizedSubscribe) {
                            """{"type":"subscribe_error","id":"$id","errors":[{"errorType":"UnauthorizedException","message":"no"}]}"""
                        } else {
                            """{"type":"subscribe_success","id":"$id"}"""
                        },
                    )
                }
            }
        }

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            closedByClient.incrementAndGet()
            webSocket.close(1000, null)
        }
    }

    /** The token in an upgrade's subprotocol header. */
    private fun upgradeToken(r: RecordedRequest): String? {
        val protocols = r.getHeader("Sec-WebSocket-Protocol")?.split(",")?.map { it.trim() } ?: return null
        val header = protocols.firstOrNull { it.startsWith("header-") } ?: return null
        return Json.parseToJsonElement(String(Base64.getUrlDecoder().decode(header.removePrefix("header-")))).jsonObject["Authorization"]?.jsonPrimitive?.content
    }

    private fun next(): String = (requests.poll(10, TimeUnit.SECONDS) ?: error("no request within 10 s"))

    /** Waits for the next pull, past the upgrades asked for before it. */
    private fun nextPull() {
        while (next() != "pull") continue
    }

    private fun nextSent(type: String): JsonObject {
        while (true) {
            val m = sent.poll(10, TimeUnit.SECONDS) ?: error("no $type within 10 s")
            if (m["type"]?.jsonPrimitive?.content == type) return m
        }
    }

    private fun client(
        pollMs: Long = 60_000,
        reconnect: RetryPolicy = RetryPolicy(baseDelayMs = 10, maxDelayMs = 100),
        refresh: TokenRefresh? = null,
    ): SyncClient {
        val token = LocalServer.token("alice")
        val url = server.url("/").toString()
        val channel = LiveChannel(
            realtimeUrl = url.replace("http://", "ws://") + "event/realtime",
            httpHost = "api.example.test",
            token = { token },
            scope = scope,
            reconnect = reconnect,
        )
        val storage = SqliteQueueStorage(dir.resolve("l.db").toString(), "alice")
        return SyncClient(storage, SyncClientConfig(url, { token }, refreshToken = refresh, retry = RetryPolicy(1, 10), channel = channel, pollIntervalMs = pollMs), scope)
    }

    private suspend fun SyncClient.await(state: LiveState) = withTimeout(10_000) { live.first { it == state } }

    @Test
    fun `it connects by the protocol, a poke pulls, and a close reconnects and subscribes again`() = runBlocking {
        val c = client()
        c.start()
        c.await(LiveState.Live)
        assertEquals("ws", next())
        // The authorization in the subprotocol, beside the protocol's own, and again in the subscribe.
        val protocols = lastUpgrade!!.getHeader("Sec-WebSocket-Protocol")!!.split(",").map { it.trim() }
        assertEquals("aws-appsync-event-ws", protocols[0])
        val header = Json.parseToJsonElement(String(Base64.getUrlDecoder().decode(protocols[1].removePrefix("header-")))).jsonObject
        assertEquals("api.example.test", header["host"]!!.jsonPrimitive.content)
        assertEquals(LocalServer.token("alice"), header["Authorization"]!!.jsonPrimitive.content)
        nextSent("connection_init")
        val subscribe = nextSent("subscribe")
        assertEquals("/users/alice", subscribe["channel"]!!.jsonPrimitive.content)
        assertEquals(header, subscribe["authorization"])

        assertEquals("pull", next(), "live: a pull for what no poke could tell")
        val ws = sockets.poll(10, TimeUnit.SECONDS)!!
        val id = subscribe["id"]!!.jsonPrimitive.content
        ws.send("""{"type":"data","id":"$id","event":"{\"cursor\":\"p0000000000000100\"}"}""")
        assertEquals("pull", next(), "a poke pulls")
        ws.send("""{"type":"data","id":"$id","event":["{\"cursor\":\"p0000000000000200\"}"]}""")
        assertEquals("pull", next(), "an event as an array of JSON strings too")

        // The channel closes, and the next upgrades are refused: polling, with a pull at once.
        upgrade = false
        ws.close(1001, "going away")
        c.await(LiveState.Polling(PollReason.CHANNEL_UNAVAILABLE))
        nextPull()
        upgrade = true
        c.await(LiveState.Live)
        assertEquals("/users/alice", nextSent("subscribe")["channel"]!!.jsonPrimitive.content)
        nextPull() // live again: a pull for what no poke could tell meanwhile (the poll interval is a minute)
        c.close()
    }

    @Test
    fun `while the channel cannot connect it polls every interval, retrying with backoff, and goes live when it returns`() = runBlocking {
        upgrade = false
        val c = client(pollMs = 100)
        c.start()
        c.await(LiveState.Polling(PollReason.CHANNEL_UNAVAILABLE))
        var pulls = 0
        var tries = 0
        while (pulls < 4 || tries < 3) {
            if (next() == "pull") pulls++ else tries++
        }
        assertEquals(LiveState.Polling(PollReason.CHANNEL_UNAVAILABLE), c.live.value, "polled while down")
        upgrade = true
        c.await(LiveState.Live)
        c.close()
        assertEquals(LiveState.Stopped, c.live.value)
    }

    @Test
    fun `nothing heard within the keep-alive timeout, it reconnects`() = runBlocking {
        ackTimeoutMs = 300
        val c = client()
        c.start()
        c.await(LiveState.Live)
        assertNotNull(sockets.poll(10, TimeUnit.SECONDS))
        // No ka comes: the client takes the connection for dead, closes it and opens another.
        assertNotNull(sockets.poll(10, TimeUnit.SECONDS), "a second connection")
        assertTrue(closedByClient.get() >= 1, "the silent one closed by the client")
        c.close()
    }

    @Test
    fun `a refused subscription polls`() = runBlocking {
        refuse = true
        val c = client(pollMs = 100)
        c.start()
        c.await(LiveState.Polling(PollReason.SUBSCRIBE_REFUSED))
        var pulls = 0
        while (pulls < 3) if (next() == "pull") pulls++
        c.close()
    }

    /** alice's token, refreshed: another string with the same sub. */
    private val fresh = "y" + LocalServer.token("alice").drop(1)

    private fun JsonObject.token(): String = this["authorization"]!!.jsonObject["Authorization"]!!.jsonPrimitive.content

    /** The messages of [type] sent within 300 ms of each other. */
    private fun sentOf(type: String): List<JsonObject> =
        generateSequence { sent.poll(300, TimeUnit.MILLISECONDS) }.filter { it["type"]?.jsonPrimitive?.content == type }.toList()

    @Test
    fun `a connection refused as unauthorized asks the refresh hook once and connects with its token`() = runBlocking {
        unauthorizedUpgrade = setOf(LocalServer.token("alice"))
        val asked = LinkedBlockingQueue<String>()
        val c = client(refresh = { rejected -> asked += rejected; fresh })
        c.start()
        c.await(LiveState.Live)
        assertEquals(listOf(LocalServer.token("alice")), asked.toList(), "asked once, with the refused token")
        assertEquals(listOf(LocalServer.token("alice"), fresh), upgradeTokens.toList(), "connected again at once with the hook's token")
        assertEquals(fresh, nextSent("subscribe").token())
        c.close()
    }

    @Test
    fun `a connection refused again after the refresh is not asked again, and polls`() = runBlocking {
        unauthorizedUpgrade = setOf(LocalServer.token("alice"), fresh)
        val asked = AtomicInteger()
        val c = client(pollMs = 100, reconnect = RetryPolicy(baseDelayMs = 200, maxDelayMs = 200), refresh = { asked.incrementAndGet(); fresh })
        c.start()
        c.await(LiveState.Polling(PollReason.CHANNEL_UNAVAILABLE))
        var pulls = 0
        while (pulls < 5) if (next() == "pull") pulls++
        c.close()
        val tokens = upgradeTokens.toList()
        // Each connection (token asked afresh) refused: the hook asked once for it; the hook's refused: not asked again.
        assertTrue(tokens.isNotEmpty())
        assertEquals(tokens.count { it == LocalServer.token("alice") }, asked.get(), "$tokens")
        assertEquals(tokens.count { it == fresh }, asked.get(), "$tokens")
        assertTrue(sockets.isEmpty(), "no socket opened")
        assertTrue(c.status.value !is SyncStatus.Stopped, "the HTTP path unaffected: ${c.status.value}")
    }

    @Test
    fun `a subscription refused as unauthorized asks the hook once and subscribes again with its token`() = runBlocking {
        unauthorizedSubscribe = setOf(LocalServer.token("alice"))
        val asked = LinkedBlockingQueue<String>()
        val c = client(refresh = { rejected -> asked += rejected; fresh })
        c.start()
        c.await(LiveState.Live)
        assertEquals(listOf(LocalServer.token("alice"), fresh), sentOf("subscribe").map { it.token() })
        assertEquals(listOf(LocalServer.token("alice")), asked.toList())
        c.close()
    }

    @Test
    fun `a subscription refused after the refresh too polls, asking no more`() = runBlocking {
        unauthorizedSubscribe = setOf(LocalServer.token("alice"), fresh)
        val asked = AtomicInteger()
        val c = client(pollMs = 100, refresh = { asked.incrementAndGet(); fresh })
        c.start()
        c.await(LiveState.Polling(PollReason.SUBSCRIBE_REFUSED))
        assertEquals(listOf(LocalServer.token("alice"), fresh), sentOf("subscribe").map { it.token() })
        assertEquals(1, asked.get())
        c.close()
    }

    @Test
    fun `the hook's token for another user stops the client and is sent nowhere`() = runBlocking {
        unauthorizedSubscribe = setOf(LocalServer.token("alice"))
        val c = client(refresh = { LocalServer.token("bob") })
        c.start()
        withTimeout(10_000) { c.status.first { it is SyncStatus.Stopped } }
        assertEquals(StopReason.WRONG_USER, (c.status.value as SyncStatus.Stopped).reason)
        withTimeout(10_000) { c.live.first { it == LiveState.Stopped } }
        assertEquals(listOf(LocalServer.token("alice")), sentOf("subscribe").map { it.token() })
        c.close()

        // A connection's 401 alike: no upgrade with bob's token.
        unauthorizedSubscribe = emptySet()
        unauthorizedUpgrade = setOf(LocalServer.token("alice"))
        upgradeTokens.clear()
        val d = client(refresh = { LocalServer.token("bob") })
        d.start()
        withTimeout(10_000) { d.status.first { it is SyncStatus.Stopped } }
        assertEquals(StopReason.WRONG_USER, (d.status.value as SyncStatus.Stopped).reason)
        Thread.sleep(300)
        assertEquals(listOf(LocalServer.token("alice")), upgradeTokens.toList())
        d.close()
    }

    @Test
    fun `the reconnection backoff is full jitter under a doubling cap`() {
        val p = RetryPolicy(baseDelayMs = 500, maxDelayMs = 30_000)
        val random = Random(7)
        for (attempt in 1..40) {
            val cap = minOf(30_000L, 500L shl minOf(attempt - 1, 30))
            val waits = (1..50).map { p.delayMs(attempt, null, random) }
            assertTrue(waits.all { it in 0..cap }, "attempt $attempt: $waits within $cap")
            if (attempt > 3) assertTrue(waits.toSet().size > 10, "jittered")
        }
    }

    @Test
    fun `a poke brings news only past the cursor reached`() {
        val cases = listOf(
            Triple("p0000000000000002", "p0000000000000001", true),
            Triple("p0000000000000001", "p0000000000000001", false),
            Triple("p0000000000000001", "p00000000000000ff", false),
            Triple("p0000000000000001", null, true),
            Triple(null, "p0000000000000001", true),
            Triple("AAAopaque", "p0000000000000001", true),
        )
        for ((poked, reached, news) in cases) assertEquals(news, isAfter(poked, reached), "$poked after $reached")
    }
}
