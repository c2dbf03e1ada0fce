package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.nio.file.Path
import java.util.UUID

/** The live channel against make run's server: its poke function and its Event API stand-in. */
@Tag("server")
class LiveServerTest {
    @TempDir
    lateinit var dir: Path

    @Test
    fun `a write on one device reaches the other through a poke, without a sync called there`() = runBlocking {
        val server = LocalServer.shared
        val user = "kt-" + UUID.randomUUID()
        val token = LocalServer.token(user)
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        try {
            fun device(name: String) = SyncClient(
                SqliteQueueStorage(dir.resolve("$name.db").toString(), user),
                SyncClientConfig(
                    server.url, { token },
                    channel = LiveChannel(server.realtimeUrl, server.httpHost, { token }, scope),
                    // No poll, no live check within the test: only a poke can bring the writes.
                    pollIntervalMs = 600_000, liveCheckMs = 600_000,
                ),
                scope,
            )
            val writer = device("a")
            val reader = device("b")
            val got = Channel<SyncEvent>(Channel.UNLIMITED)
            scope.launch(start = CoroutineStart.UNDISPATCHED) { reader.events.collect { got.send(it) } }
            reader.start()
            withTimeout(10_000) { reader.live.first { it == LiveState.Live } }
            // The pull on going live is done: what comes next, a poke brought.
            withTimeout(10_000) { reader.status.first { it == SyncStatus.Synced } }
            for (i in 0 until 3) {
                val id = writer.write("note.created", JsonObject(mapOf("n" to JsonPrimitive(i)))).id
                val arrived = withTimeout(10_000) { got.receive() }
                assertEquals(id, arrived.id, "write $i arrived, alone and in order")
            }
            assertEquals(LiveState.Live, reader.live.value)
            writer.close()
            reader.close()
        } finally {
            scope.cancel()
        }
    }
}
