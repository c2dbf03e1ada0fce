package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import okhttp3.OkHttpClient
import okhttp3.Request
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.io.TempDir
import java.io.IOException
import java.nio.file.Path
import java.util.UUID

/** Spaces against make run's server: members, live pokes of a space, a removal. */
@Tag("server")
class SpacesServerTest {
    @TempDir
    lateinit var dir: Path

    private val server = LocalServer.shared

    private class User(val sub: String) {
        val token = LocalServer.token(sub)
    }

    private fun user(name: String) = User("$name-" + UUID.randomUUID())

    private fun note(text: String) = JsonObject(mapOf("text" to JsonPrimitive(text)))

    @Test
    fun `alice shares a space with bob live, removes him, and his next write is refused and kept`() = runBlocking {
        val alice = user("alice")
        val bob = user("bob")
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        try {
            fun device(u: User, name: String) = SyncClient(
                SqliteQueueStorage(dir.resolve("$name.db").toString(), u.sub),
                SyncClientConfig(server.url, { u.token }, channel = LiveChannel(server.realtimeUrl, server.httpHost, { u.token }, scope), pollIntervalMs = 600_000, liveCheckMs = 600_000),
                scope,
            )
            val aliceMine = device(alice, "alice")
            val space = aliceMine.spaces.create("Groceries")
            assertEquals(Role.OWNER, space.role)
            assertEquals(Member(space.id, bob.sub, Role.WRITER), aliceMine.spaces.addMember(space.id, bob.sub, Role.WRITER))
            assertEquals(listOf(Space(space.id, "Groceries", Role.WRITER)), device(bob, "bob-list").spaces.list())

            // Bob's device follows the space and hears its pokes.
            val bobMine = device(bob, "bob")
            bobMine.start()
            val bobSpace = bobMine.follow(space.id, SqliteQueueStorage(dir.resolve("bob.db").toString(), bob.sub, stream = space.id))
            val got = Channel<SyncEvent>(Channel.UNLIMITED)
            val seen = java.util.Collections.synchronizedList(ArrayList<SyncEvent>())
            scope.launch(start = CoroutineStart.UNDISPATCHED) { bobSpace.events.collect { seen += it; got.send(it) } }
            withTimeout(10_000) { bobSpace.live.first { it == LiveState.Live } }
            withTimeout(10_000) { bobSpace.status.first { it == SyncStatus.Synced } }
            val before = seen.size
            assertEquals(listOf("space.created", "space.member_added"), seen.map { (it as SyncEvent.Event).type })

            // Alice writes to the space: it reaches Bob's device by a poke, no sync called there.
            val aliceSpace = aliceMine.follow(space.id, SqliteQueueStorage(dir.resolve("alice.db").toString(), alice.sub, stream = space.id))
            val shared = aliceSpace.write("note.created", note("oat milk")).id
            repeat(before) { got.receive() }
            val arrived = withTimeout(10_000) { got.receive() } as SyncEvent.Event
            assertEquals(shared to alice.sub, arrived.id to arrived.author)

            // Alice removes Bob: the removal's poke makes his device pull, and the pull is refused.
            assertEquals(RemovedMember(space.id, bob.sub), aliceMine.spaces.removeMember(space.id, bob.sub))
            val stopped = withTimeout(10_000) { bobSpace.status.first { it is SyncStatus.Stopped } } as SyncStatus.Stopped
            assertEquals(StopReason.FORBIDDEN, stopped.reason)
            assertTrue(stopped.error!!.contains("SPACE_NOT_MEMBER"), stopped.error)
            val after = aliceSpace.write("note.created", note("after bob left")).id
            withTimeout(10_000) { aliceSpace.status.first { it == SyncStatus.Synced } }

            // Bob's next write is refused: kept for the app, with the server's answer, and the status names it.
            val late = bobSpace.write("note.created", note("bob, removed"))
            // Wait on the kept entry, not on one exact status: a pull refused at
            // the same moment sets Stopped(FORBIDDEN) with its own message, and a
            // StateFlow shows only the latest of the two.
            val status = withTimeout(10_000) {
                while (bobSpace.kept().isEmpty() || bobSpace.status.value !is SyncStatus.Stopped) delay(20)
                bobSpace.status.value as SyncStatus.Stopped
            }
            assertEquals(StopReason.FORBIDDEN, status.reason)
            assertTrue(status.error!!.contains("SPACE_NOT_MEMBER"), status.error)
            val kept = bobSpace.kept().single()
            assertEquals(late.key to EntryStatus.REJECTED, kept.key to kept.status)
            assertEquals(403, kept.errorStatus)
            assertTrue(bobSpace.pending().isEmpty())

            // Bob never lists what was written after his removal; the server refuses him the space.
            assertFalse(seen.any { it.id == after }, "bob's device never had the later write")
            assertEquals(403, get("/api/v1/spaces/${space.id}/events", bob.token).first)
            assertEquals(emptyList<Space>(), bobMine.spaces.list())
            // The space holds alice's notes once each, and none of Bob's refused write.
            val notes = listed(space.id, alice.token).filter { it.second == "note.created" }.map { it.first }
            assertEquals(listOf(shared, after), notes)
            listOf(aliceMine, aliceSpace, bobMine, bobSpace).forEach { it.close() }
        } finally {
            scope.cancel()
        }
    }

    @Test
    fun `a space operation given up after its answer was lost is sent again under its key, by a new process's call`() = runBlocking {
        val alice = user("alice")
        val bob = user("bob")
        val path = dir.resolve("ops.db").toString()
        // The Idempotency-Key of each mutation sent, by path, through each client.
        val lostKeys = java.util.concurrent.ConcurrentHashMap<String, MutableSet<String>>()
        val sentKeys = java.util.concurrent.ConcurrentHashMap<String, MutableSet<String>>()
        fun record(into: MutableMap<String, MutableSet<String>>, r: Request) {
            r.header("Idempotency-Key")?.let { into.getOrPut(r.url.encodedPath) { java.util.concurrent.ConcurrentHashMap.newKeySet() } += it }
        }
        // Every request reaches the server and its answer is lost.
        val losing = OkHttpClient.Builder().addInterceptor { chain ->
            record(lostKeys, chain.request())
            chain.proceed(chain.request()).close()
            throw IOException("answer lost after the commit")
        }.build()
        val recording = OkHttpClient.Builder().addInterceptor { chain ->
            record(sentKeys, chain.request())
            chain.proceed(chain.request())
        }.build()
        val twice = RetryPolicy(baseDelayMs = 1, maxDelayMs = 5, maxAttempts = 2)
        fun spaces(http: OkHttpClient, retry: RetryPolicy = RetryPolicy(1, 5)) =
            Spaces(SqliteQueueStorage(path, alice.sub), server.url, { alice.token }, http, retry)

        val stopped = assertThrows<SpaceStopped> { runBlocking { spaces(losing, twice).create("Book club") } }
        assertEquals(StopReason.RETRIES_EXHAUSTED, stopped.reason)
        // Another process over the same storage: the same call is the same mutation, answered by a replay.
        val created = spaces(recording).create("Book club")
        assertEquals(listOf(created), spaces(recording).list())
        val membersPath = "/api/v1/spaces/${created.id}/members"
        assertThrows<SpaceStopped> { runBlocking { spaces(losing, twice).addMember(created.id, bob.sub, Role.READER) } }
        assertEquals(Member(created.id, bob.sub, Role.READER), spaces(recording).addMember(created.id, bob.sub, Role.READER))
        for (p in listOf("/api/v1/spaces", membersPath)) {
            assertEquals(1, lostKeys[p]!!.size, "$p: one key for both attempts")
            assertEquals(lostKeys[p], sentKeys[p], "$p: the new call sent under the held key")
        }
        // Done once each: one space.created, one space.member_added.
        val membership = listed(created.id, alice.token).map { it.second }.filter { it.startsWith("space.") }
        assertEquals(listOf("space.created", "space.member_added"), membership)
        // Answered, the key is let go: the next create is another space, the next add another request.
        assertTrue(spaces(recording).create("Book club").id != created.id)
        val refused = assertThrows<SpaceRefused> { runBlocking { spaces(recording).addMember(created.id, bob.sub, Role.READER) } }
        assertEquals(409 to "SPACE_ALREADY_MEMBER", refused.status to refused.code)
        assertEquals(2, sentKeys[membersPath]!!.size)
    }

    private fun get(path: String, token: String): Pair<Int, String> =
        OkHttpClient().newCall(Request.Builder().url(server.url + path).header("Authorization", "Bearer $token").build()).execute()
            .use { it.code to it.body.string() }

    /** Every event of the space, as (id, type), read by a member. */
    private fun listed(space: String, token: String): List<Pair<String, String>> {
        val (status, body) = get("/api/v1/spaces/$space/events?limit=1000", token)
        check(status == 200) { "GET space events: $status" }
        return Json.parseToJsonElement(body).jsonObject["events"]!!.jsonArray.map {
            it.jsonObject["id"]!!.jsonPrimitive.content to it.jsonObject["type"]!!.jsonPrimitive.content
        }
    }
}
