package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.nio.file.Path
import java.util.UUID
import java.util.concurrent.TimeUnit

class SyncClientTest {
    @TempDir
    lateinit var dir: Path

    private fun payload(i: Int) = JsonObject(mapOf("n" to JsonPrimitive(i)))

    @Test
    @Tag("server")
    fun `a second device receives the events and the deletion, as such`() = runBlocking {
        val url = LocalServer.shared.url
        val user = "kt-" + UUID.randomUUID()
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        try {
            val a = SyncClient(SqliteQueueStorage(dir.resolve("a.db").toString(), user), SyncClientConfig(url, { LocalServer.token(user) }), scope)
            val ids = (0 until 5).map { a.write("note.created", payload(it)).id }
            a.sync()
            a.delete(ids[1])
            a.sync()
            // write() and delete() also wake the client's own sync: wait for it to settle.
            withTimeout(10_000) { a.status.first { it == SyncStatus.Synced } }
            assertTrue(a.pending().isEmpty())

            // onEvents is called with each page before its cursor is kept: once sync() returns, every
            // page is in got (a collector of events, buffered, may still be catching up).
            val got = java.util.Collections.synchronizedList(ArrayList<SyncEvent>())
            val b = SyncClient(
                SqliteQueueStorage(dir.resolve("b.db").toString(), user),
                SyncClientConfig(url, { LocalServer.token(user) }),
                scope,
                onEvents = { got += it },
            )
            b.sync()
            assertEquals(SyncStatus.Synced, b.status.value)
            val events = got.toList()
            // The deleted event comes as a tombstone in its place, never as the event.
            assertEquals(ids - ids[1], events.filterIsInstance<SyncEvent.Event>().filter { it.type == "note.created" }.map { it.id })
            assertTrue(events.any { it is SyncEvent.Deleted && it.id == ids[1] }, "the deletion is delivered as such: $events")
            // The cursor is kept: a second sync delivers nothing again.
            b.sync()
            assertEquals(events.size, got.size, "nothing re-delivered from the kept cursor")
        } finally {
            scope.cancel()
        }
    }

    @Test
    fun `410 CURSOR_EXPIRED starts over from the beginning`() = runBlocking {
        val server = MockWebServer().also { it.start() }
        val s = SqliteQueueStorage(dir.resolve("c.db").toString(), "alice")
        s.setValue("cursor", "p0000000000000001")
        var startedOver = 0
        server.enqueue(MockResponse().setResponseCode(410).setBody("""{"error":"CURSOR_EXPIRED","message":"m"}"""))
        server.enqueue(
            MockResponse().setResponseCode(200).setBody(
                """{"events":[{"id":"e1","type":"t","occurredAt":"2026-01-01T00:00:00Z","receivedAt":"2026-01-01T00:00:00Z","payload":{}}],"cursor":"p0000000000000009","hasMore":false}""",
            ),
        )
        val got = ArrayList<SyncEvent>()
        pull(okhttp3.OkHttpClient(), server.url("/").toString(), null, s, { LocalServer.token("alice") }, RetryPolicy(1, 10), { startedOver++ }) {
            got += it
        }
        assertEquals(1, startedOver)
        assertEquals(listOf("e1"), got.map { it.id })
        assertEquals("p0000000000000009", s.getValue("cursor"))
        assertTrue(server.takeRequest().path!!.contains("cursor=p0000000000000001"))
        assertTrue(!server.takeRequest().path!!.contains("cursor="))
        server.shutdown()
    }

    @Test
    fun `a page onEvents failed to apply keeps the cursor before it and comes again`() = runBlocking {
        val server = MockWebServer().also { it.start() }
        val page = """{"events":[{"id":"e1","type":"t","occurredAt":"2026-01-01T00:00:00Z","receivedAt":"2026-01-01T00:00:00Z","payload":{}}],"cursor":"p0000000000000009","hasMore":false}"""
        repeat(2) { server.enqueue(MockResponse().setResponseCode(200).setBody(page)) }
        val s = SqliteQueueStorage(dir.resolve("o.db").toString(), "alice")
        s.setValue("cursor", "p0000000000000001")
        val applied = ArrayList<String>()
        var fail = true
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        try {
            val c = SyncClient(
                s,
                SyncClientConfig(server.url("/").toString(), { LocalServer.token("alice") }),
                scope,
                onEvents = { events ->
                    if (fail) {
                        fail = false
                        throw IllegalStateException("the app's database is locked")
                    }
                    applied += events.map { it.id }
                },
            )
            val thrown = runCatching { c.sync() }.exceptionOrNull()
            assertEquals("the app's database is locked", thrown?.message)
            assertEquals(SyncStatus.Failed("the app's database is locked"), c.status.value)
            assertEquals("p0000000000000001", s.getValue("cursor"), "the cursor stays before the page not applied")
            c.sync()
            assertEquals(listOf("e1"), applied)
            assertEquals("p0000000000000009", s.getValue("cursor"))
            repeat(2) { assertTrue(server.takeRequest(5, TimeUnit.SECONDS)!!.path!!.contains("cursor=p0000000000000001")) }
        } finally {
            scope.cancel()
            server.shutdown()
        }
    }

    @Test
    @Tag("server")
    fun `a process killed mid-drain, a new one finishes with the same keys, each event listed once`() = runBlocking {
        val url = LocalServer.shared.url
        val user = "kt-" + UUID.randomUUID()
        val path = dir.resolve("k.db").toString()
        val s = SqliteQueueStorage(path, user)
        val q = SyncQueue(s, url, { LocalServer.token(user) })
        val written = (0 until 400).map { q.write("note.created", payload(it)) }
        val keys = written.associate { it.eventId to it.key }

        val java = File(System.getProperty("java.home"), "bin/java").path
        val child = ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), DrainChild::class.java.name, path, user, url, "5")
            .redirectErrorStream(true).start()
        // Kill it once the server has some of the events but not all.
        val deadline = System.currentTimeMillis() + 30_000
        while (RealServerTest.listed(url, LocalServer.token(user)).size < 40) {
            check(child.isAlive) { "the child exited early: " + child.inputStream.bufferedReader().readText() }
            check(System.currentTimeMillis() < deadline) { "the child sent too little" }
            Thread.sleep(20)
        }
        child.destroyForcibly()
        child.waitFor(5, TimeUnit.SECONDS)
        val left = s.list()
        assertTrue(left.isNotEmpty() && left.size < 400, "killed mid-drain: ${left.size} left")
        assertTrue(left.all { keys[it.eventId] == it.key }, "every entry kept its key")

        val fresh = SyncQueue(SqliteQueueStorage(path, user), url, { LocalServer.token(user) }, maxBatchEvents = 5)
        val report = fresh.drain()
        assertEquals(null, report.stopped, report.error)
        assertTrue(s.list().isEmpty())
        assertEquals(written.map { it.eventId }, RealServerTest.listed(url, LocalServer.token(user)))
    }
}
