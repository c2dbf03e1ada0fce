package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path

/** A collector started after sync() still gets what that sync pulled; the status is a StateFlow's current value. */
class LateCollectorTest {
    @TempDir
    lateinit var dir: Path

    private lateinit var server: MockWebServer
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    @BeforeEach
    fun start() {
        server = MockWebServer().also { it.start() }
    }

    @AfterEach
    fun stop() {
        scope.cancel()
        server.shutdown()
    }

    private fun page(ids: List<String>, cursor: String) = MockResponse().setResponseCode(200).setBody(
        """{"events":[""" + ids.joinToString(",") {
            """{"id":"$it","type":"note.created","occurredAt":"2026-01-01T00:00:00Z","receivedAt":"2026-01-01T00:00:00Z","payload":{}}"""
        } + """],"cursor":"$cursor","hasMore":false}""",
    )

    @Test
    fun `a collector started after sync gets the events that sync pulled, in order, and then the next ones`() = runBlocking {
        server.enqueue(page(listOf("e1", "e2", "e3"), "p0000000000000003"))
        server.enqueue(page(listOf("e4"), "p0000000000000004"))
        val c = SyncClient(SqliteQueueStorage(dir.resolve("l.db").toString(), "alice"), SyncClientConfig(server.url("/").toString(), { LocalServer.token("alice") }), scope)
        c.sync()
        assertEquals(SyncStatus.Synced, withTimeout(1_000) { c.status.first() }, "a late collector of status gets where it stands")

        val late = withTimeout(5_000) { c.events.take(3).toList() }
        assertEquals(listOf("e1", "e2", "e3"), late.map { it.id })

        c.sync()
        val later = withTimeout(5_000) { c.events.take(4).toList() }
        assertEquals(listOf("e1", "e2", "e3", "e4"), later.map { it.id }, "a collector started again gets them again, then the new one")
        assertEquals(listOf("e1", "e2", "e3", "e4"), c.events.replayCache.map { it.id })
        c.close()
    }
}
