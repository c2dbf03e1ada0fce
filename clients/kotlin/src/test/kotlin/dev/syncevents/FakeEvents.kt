package dev.syncevents

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.mockwebserver.Dispatcher
import okhttp3.mockwebserver.MockResponse
import okhttp3.mockwebserver.RecordedRequest

/**
 * A MockWebServer dispatcher holding one stream in memory as the API does
 * for the client's needs: POST /api/v1/sync/events (one) and /batch (many)
 * store events in commit order (a key answered again replays, an event id
 * seen already is skipped), GET lists them from a cursor ("p" and the
 * position, 16 digits) in pages of the asked limit. Each request waits
 * [delayMs] first, as a round trip would.
 */
class FakeEvents(private val delayMs: Long = 0) : Dispatcher() {
    val events: MutableList<JsonObject> = ArrayList()
    val bodies: MutableList<String> = ArrayList()
    private val keys = HashMap<String, MockResponse>()
    private val ids = HashSet<String>()

    override fun dispatch(request: RecordedRequest): MockResponse {
        if (delayMs > 0) Thread.sleep(delayMs)
        val path = request.requestUrl!!
        return synchronized(this) {
            when (request.method) {
                "GET" -> {
                    val from = path.queryParameter("cursor")?.removePrefix("p")?.toInt() ?: 0
                    val limit = path.queryParameter("limit")?.toInt() ?: 50
                    val page = events.drop(from).take(limit)
                    val next = from + page.size
                    MockResponse().setBody(
                        JsonObject(
                            mapOf(
                                "events" to JsonArray(page),
                                "cursor" to JsonPrimitive("p%016d".format(next)),
                                "hasMore" to JsonPrimitive(next < events.size),
                            ),
                        ).toString(),
                    )
                }
                "POST" -> {
                    val key = request.getHeader("Idempotency-Key")!!
                    keys[key]?.let { return it.clone().setHeader("Idempotent-Replayed", "true") }
                    val body = request.body.readUtf8()
                    bodies += body
                    val o = Json.parseToJsonElement(body) as JsonObject
                    val batch = path.encodedPath.endsWith("/batch")
                    val list = if (batch) (o["events"] as JsonArray).map { it as JsonObject } else listOf(o)
                    for (e in list) {
                        val id = (e["id"] as JsonPrimitive).content
                        if (ids.add(id)) events += JsonObject(e + ("receivedAt" to JsonPrimitive("2026-01-01T00:00:00.000Z")))
                    }
                    MockResponse().setResponseCode(201).setBody("{}").also { keys[key] = it }
                }
                else -> MockResponse().setResponseCode(405)
            }
        }
    }
}
