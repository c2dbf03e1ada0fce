package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path

/** SyncClientConfig: defaults, shared with followed spaces, and the deprecated constructor mapped onto it. */
class ConfigTest {
    @TempDir
    lateinit var dir: Path

    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    @AfterEach
    fun stop() = scope.cancel()

    private val token: suspend () -> String = { LocalServer.token("alice") }

    @Test
    fun `the defaults`() {
        val c = SyncClientConfig("http://127.0.0.1:9/", token)
        assertEquals(RetryPolicy(), c.retry)
        assertEquals(null, c.refreshToken)
        assertEquals(null, c.channel)
        assertEquals(10_000L, c.pollIntervalMs)
        assertEquals(300_000L, c.liveCheckMs)
        assertThrows<IllegalArgumentException> { c.copy(pollIntervalMs = 0) }
    }

    @Test
    fun `a followed space's client gets the same config`() {
        val config = SyncClientConfig("http://127.0.0.1:9/", token, retry = RetryPolicy(1, 10))
        val mine = SyncClient(SqliteQueueStorage(dir.resolve("c.db").toString(), "alice"), config, scope)
        val space = mine.follow("s1", SqliteQueueStorage(dir.resolve("c.db").toString(), "alice", stream = "s1"))
        assertSame(config, space.config)
        space.close()
        mine.close()
    }

    @Test
    @Suppress("DEPRECATION")
    fun `the deprecated constructor puts its arguments in a config`() {
        val retry = RetryPolicy(1, 10)
        val c = SyncClient(
            SqliteQueueStorage(dir.resolve("d.db").toString(), "alice"), "http://127.0.0.1:9/", token, scope,
            retry = retry, pollIntervalMs = 5, liveCheckMs = 7,
        )
        assertEquals("http://127.0.0.1:9/", c.config.baseUrl)
        assertSame(token, c.config.token)
        assertEquals(retry, c.config.retry)
        assertEquals(5L, c.config.pollIntervalMs)
        assertEquals(7L, c.config.liveCheckMs)
        c.close()
    }
}
