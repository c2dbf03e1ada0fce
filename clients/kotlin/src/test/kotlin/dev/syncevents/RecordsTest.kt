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
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.put
import okhttp3.mockwebserver.Dispatcher
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.MockWebServer
import okhttp3.mockwebserver.RecordedRequest
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import okhttp3.OkHttpClient
import java.io.IOException
import java.nio.file.Path
import java.time.format.DateTimeFormatter
import java.util.concurrent.atomic.AtomicBoolean
import java.util.UUID

/** The record model: put, patch, delete as events, merged the same on every device. */
class RecordsTest {
    @TempDir
    lateinit var dir: Path

    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    private val servers = ArrayList<MockWebServer>()

    @AfterEach
    fun stop() {
        scope.cancel()
        servers.forEach { it.shutdown() }
    }

    private fun server(d: Dispatcher): String {
        val s = MockWebServer()
        s.dispatcher = d
        s.start()
        servers += s
        return s.url("/").toString()
    }

    private val offline = HashMap<SyncClient, AtomicBoolean>()

    /** A device of [user] over the SQLite file [file]; [offline] makes its requests fail, as with no network. */
    private fun device(url: String, file: String, user: String = "alice"): SyncClient {
        val off = AtomicBoolean(false)
        val http = OkHttpClient.Builder().addInterceptor { chain ->
            if (off.get()) throw IOException("offline")
            chain.proceed(chain.request())
        }.build()
        val c = SyncClient(
            SqliteQueueStorage(dir.resolve(file).toString(), user),
            SyncClientConfig(url, { LocalServer.token(user) }, http = http, retry = RetryPolicy(1, 10, maxElapsedMs = 200)),
            scope,
        )
        offline[c] = off
        return c
    }

    private fun SyncClient.offline(v: Boolean) = offline[this]!!.set(v)

    private fun fields(vararg kv: Pair<String, Any>) = buildJsonObject {
        for ((k, v) in kv) {
            when (v) {
                is String -> put(k, v)
                is Boolean -> put(k, v)
                is Int -> put(k, v)
            }
        }
    }

    private suspend fun SyncClient.todos() = records("todo").list().associate { it.id to it.fields }

    @Test
    fun `merged in commit order on every device, the last writer per field, a delete final`() = runBlocking {
        val url = server(FakeEvents())
        val a = device(url, "a.db")
        val b = device(url, "b.db")
        a.records("todo").put("t1", fields("title" to "Milk", "done" to false))
        a.sync()
        b.sync()
        assertEquals(mapOf("t1" to fields("title" to "Milk", "done" to false)), b.todos())

        // Offline on both: each patches a field of its own, and both the same field.
        a.offline(true)
        b.offline(true)
        a.records("todo").patch("t1", fields("done" to true, "note" to "a"))
        b.records("todo").patch("t1", fields("title" to "Oat milk", "note" to "b"))
        // Pending changes on top, before any sync.
        assertEquals(fields("title" to "Oat milk", "done" to false, "note" to "b"), b.todos()["t1"])
        assertTrue(b.records("todo").get("t1")!!.pending)
        a.offline(false)
        a.sync()
        b.offline(false)
        b.sync()
        a.sync()
        val merged = fields("title" to "Oat milk", "done" to true, "note" to "b") // b's patch committed last
        assertEquals(merged, a.todos()["t1"])
        assertEquals(merged, b.todos()["t1"])
        assertEquals(false, a.records("todo").get("t1")!!.pending)

        // A delete is final: b's patch, committed after it, does not bring the record back.
        a.records("todo").delete("t1")
        b.offline(true)
        b.records("todo").patch("t1", fields("done" to false))
        assertEquals(fields("title" to "Oat milk", "done" to false, "note" to "b"), b.todos()["t1"], "b has not heard of the delete")
        a.sync()
        b.offline(false)
        b.sync()
        a.sync()
        assertEquals(emptyMap<String, JsonObject>(), a.todos())
        assertEquals(emptyMap<String, JsonObject>(), b.todos())
        // A put of the id after its delete does nothing either.
        b.records("todo").put("t1", fields("title" to "again"))
        assertEquals(emptyMap<String, JsonObject>(), b.todos())
        // Another collection is apart.
        b.records("note").put("t1", fields("title" to "a note"))
        assertEquals(listOf("t1"), b.records("note").list().map { it.id })
    }

    @Test
    fun `a change is read as the TypeScript client reads it`() {
        val c = RecordChange.of("record.patch", Json.parseToJsonElement("""{"collection":"todo","id":"t1"}""").jsonObject)
        assertEquals(RecordChange("record.patch", "todo", "t1", JsonObject(emptyMap())), c, "no fields: none")
        assertNull(RecordChange.of("record.put", Json.parseToJsonElement("""{"collection":"todo","id":"t1","fields":5}""").jsonObject))
        assertNull(RecordChange.of("record.put", Json.parseToJsonElement("""{"collection":"","id":"t1","fields":{}}""").jsonObject))
        assertNull(RecordChange.of("note.created", Json.parseToJsonElement("""{"collection":"todo","id":"t1","fields":{}}""").jsonObject))
        assertEquals(null, RecordChange.of("record.delete", Json.parseToJsonElement("""{"collection":"todo","id":"t1"}""").jsonObject)!!.fields)
    }

    @Test
    fun `records are ordinary events of the shared wire format`() = runBlocking {
        val fake = FakeEvents()
        val a = device(server(fake), "w.db")
        a.records("todo").put("t1", fields("title" to "Milk"))
        a.records("todo").patch("t1", fields("done" to true))
        a.records("todo").delete("t1")
        a.sync()
        val sent = fake.events.map { e -> e["type"]!!.let { (it as JsonPrimitive).content } to e["payload"]!!.jsonObject }
        assertEquals(
            listOf(
                "record.put" to Json.parseToJsonElement("""{"collection":"todo","id":"t1","fields":{"title":"Milk"}}"""),
                "record.patch" to Json.parseToJsonElement("""{"collection":"todo","id":"t1","fields":{"done":true}}"""),
                "record.delete" to Json.parseToJsonElement("""{"collection":"todo","id":"t1"}"""),
            ),
            sent,
        )
    }

    @Test
    fun `pending changes on top across a restart, and merged records kept in the storage`() = runBlocking {
        val fake = FakeEvents()
        val url = server(fake)
        val closed = "http://127.0.0.1:9/" // nothing answers: the changes stay queued
        val a = device(closed, "p.db")
        val put = a.records("todo").put("t1", fields("title" to "Milk"))
        val patch = a.records("todo").patch("t1", fields("done" to true))
        a.close()
        // createdAt and updatedAt: the occurredAt of the put and of the last patch, as sent.
        val created = DateTimeFormatter.ISO_INSTANT.format(put.occurredAt)
        val updated = DateTimeFormatter.ISO_INSTANT.format(patch.occurredAt)
        val again = device(closed, "p.db")
        assertEquals(listOf(Record("t1", fields("title" to "Milk", "done" to true), true, created, updated)), again.records("todo").list())
        again.close()

        val online = device(url, "p.db")
        online.sync()
        assertEquals(listOf(Record("t1", fields("title" to "Milk", "done" to true), false, created, updated)), online.records("todo").list())
        online.close()
        // Merged and kept: a new client over the storage shows them without pulling from the start.
        synchronized(fake) { fake.events.clear() }
        val later = device(closed, "p.db")
        assertEquals(listOf(Record("t1", fields("title" to "Milk", "done" to true), false, created, updated)), later.records("todo").list())
    }

    @Test
    fun `a change answered but not yet listed stays on top`() = runBlocking {
        val url = server(
            object : Dispatcher() {
                override fun dispatch(request: RecordedRequest) = if (request.method == "GET") {
                    MockResponse().setBody("""{"events":[],"cursor":"p0000000000000000","hasMore":false}""")
                } else {
                    MockResponse().setResponseCode(201).setBody("{}")
                }
            },
        )
        val a = device(url, "l.db")
        val put = a.records("todo").put("t1", fields("title" to "Milk"))
        a.sync()
        assertTrue(a.pending().isEmpty(), "answered")
        val at = DateTimeFormatter.ISO_INSTANT.format(put.occurredAt)
        assertEquals(listOf(Record("t1", fields("title" to "Milk"), true, at, at)), a.records("todo").list())
    }

    @Test
    fun `the flow of a collection follows pulls and changes live`() = runBlocking {
        val url = server(FakeEvents())
        val a = device(url, "fa.db")
        val b = device(url, "fb.db")
        val todos = b.records("todo").all
        assertEquals(emptyList<Record>(), withTimeout(5_000) { todos.first() })
        a.records("todo").put("t1", fields("title" to "Milk"))
        a.sync()
        b.sync()
        assertEquals(listOf("t1"), withTimeout(5_000) { todos.first { it.isNotEmpty() } }.map { it.id })
        b.offline(true)
        b.records("todo").patch("t1", fields("done" to true))
        val seen = withTimeout(5_000) { todos.first { l -> l.any { it.fields["done"] == JsonPrimitive(true) } } }
        assertEquals(true, seen.single().pending)
    }

    @Test
    @Tag("server")
    fun `make run's server takes record events and two devices merge them alike`() = runBlocking {
        val url = LocalServer.shared.url
        val user = "kt-" + UUID.randomUUID()
        val a = device(url, "sa.db", user)
        val b = device(url, "sb.db", user)
        a.records("todo").put("t1", fields("title" to "Milk", "done" to false))
        a.records("todo").put("t2", fields("title" to "Bread"))
        a.sync()
        b.sync()
        b.records("todo").patch("t1", fields("done" to true))
        b.records("todo").delete("t2")
        b.sync()
        a.sync()
        withTimeout(10_000) { a.status.first { it == SyncStatus.Synced } }
        val want = mapOf("t1" to fields("title" to "Milk", "done" to true))
        assertEquals(want, a.todos())
        assertEquals(want, b.todos())
        assertNull(a.records("todo").get("t2"))
    }
}
