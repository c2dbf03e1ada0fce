package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.net.ServerSocket
import java.nio.file.Path

/** No server on the port: sync() ends, and says Failed; a fresh client says Idle. */
class OfflineTest {
    @TempDir
    lateinit var dir: Path

    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    /** A loopback port nothing listens on: each connection is refused at once. */
    private val closed = "http://127.0.0.1:" + ServerSocket(0).use { it.localPort }

    @AfterEach
    fun stop() {
        scope.cancel()
    }

    private fun storage() = SqliteQueueStorage(dir.resolve("o.db").toString(), "carol")

    @Test
    fun `a fresh client is Idle, and with the default RetryPolicy and no server sync() ends Failed`() = runBlocking {
        val c = SyncClient(storage(), SyncClientConfig(closed, { LocalServer.token("carol") }), scope)
        assertEquals(SyncStatus.Idle, c.status.value, "nothing done yet")
        val t0 = System.nanoTime()
        withTimeout(40_000) { c.sync() }
        val ms = (System.nanoTime() - t0) / 1_000_000
        val status = c.status.value
        assertTrue(status is SyncStatus.Failed, "$status")
        assertTrue(ms in 1_000..25_000, "given up within the default 20 s budget (and not at once): $ms ms")
        c.close()
    }

    @Test
    fun `a write queued with no server, the drain gives up within the budget, the write kept under its key`() = runBlocking {
        val s = storage()
        val c = SyncClient(s, SyncClientConfig(closed, { LocalServer.token("carol") }, retry = RetryPolicy(maxElapsedMs = 1_000)), scope)
        val e = c.write("note.created", JsonObject(emptyMap()))
        val report = withTimeout(10_000) { c.sync() }
        assertEquals(StopReason.RETRIES_EXHAUSTED, report.stopped)
        assertTrue(c.status.value is SyncStatus.Failed, "${c.status.value}")
        assertEquals(listOf(e), c.pending())
        c.close()
    }

    @Test
    fun `the time budget gives up a wait that would end past it`() {
        val p = RetryPolicy(maxElapsedMs = 1_000)
        val t0 = 0L
        assertEquals(false, p.givesUp(t0, 400, nowNs = 500_000_000))
        assertEquals(true, p.givesUp(t0, 600, nowNs = 500_000_000))
        assertEquals(false, RetryPolicy(maxElapsedMs = Long.MAX_VALUE).givesUp(t0, Long.MAX_VALUE / 2, nowNs = Long.MAX_VALUE / 2))
    }
}
