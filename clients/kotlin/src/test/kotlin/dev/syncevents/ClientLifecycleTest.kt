package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.cancel
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.JsonObject
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.concurrent.Executors

/** write and delete suspend and store off the caller's thread; close() (and use) leaves the storage to the app. */
class ClientLifecycleTest {
    @TempDir
    lateinit var dir: Path

    private lateinit var server: MockWebServer
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    @BeforeEach
    fun start() {
        server = MockWebServer().also { it.start() }
        repeat(4) { server.enqueue(MockResponse().setResponseCode(503)) }
    }

    @AfterEach
    fun stop() {
        scope.cancel()
        server.shutdown()
    }

    /** A storage that records the threads its rows are added on. */
    private class Recording(val inner: SqliteQueueStorage) : QueueStorage by inner {
        val addedOn = ArrayList<Thread>()

        override fun add(entries: List<QueueEntry>) {
            addedOn += Thread.currentThread()
            inner.add(entries)
        }
    }

    private fun client(storage: QueueStorage) = SyncClient(
        storage,
        SyncClientConfig(server.url("/").toString(), { LocalServer.token("alice") }, retry = RetryPolicy(1, 5, maxElapsedMs = 200)),
        scope,
    )

    @Test
    fun `write and delete store on the IO dispatcher, not on the caller's thread`() = runBlocking {
        val storage = Recording(SqliteQueueStorage(dir.resolve("w.db").toString(), "alice"))
        val main = Executors.newSingleThreadExecutor { Thread(it, "main") }.asCoroutineDispatcher()
        val c = client(storage)
        try {
            withContext(main) {
                val e = c.write("note.created", JsonObject(emptyMap()))
                c.delete(e.id)
            }
            assertEquals(2, storage.addedOn.size)
            storage.addedOn.forEach { assertNotEquals("main", it.name) }
        } finally {
            c.close()
            main.close()
        }
    }

    @Test
    fun `a client closed by use leaves its storage open, the queue in it`() = runBlocking {
        val storage = SqliteQueueStorage(dir.resolve("u.db").toString(), "alice")
        val c = client(storage)
        val e = c.use { it.write("note.created", JsonObject(emptyMap())) }
        assertEquals(LiveState.Stopped, c.live.value)
        assertTrue(storage.list().any { it.key == e.key }, "the storage is still open, the write queued in it")
        c.close() // closing again does nothing more
        storage.close()
    }
}
