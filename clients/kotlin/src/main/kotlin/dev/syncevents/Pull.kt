package dev.syncevents

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import okhttp3.HttpUrl.Companion.toHttpUrl
import okhttp3.OkHttpClient
import okhttp3.Request
import java.io.IOException

/** What a pull delivers: a stored event, or word that one was deleted (a tombstone or an `event.deleted` notice). */
public sealed interface SyncEvent {
    /** The event's id. */
    public val id: String

    /** A stored event, as the server lists it. */
    public data class Event(
        override val id: String,
        val type: String,
        val occurredAt: String,
        val payload: JsonObject,
        /** On a space's events, the writer's `sub`. */
        val author: String?,
    ) : SyncEvent

    /** The event [id] was deleted: drop it. */
    public data class Deleted(override val id: String) : SyncEvent
}

/** A pull refused by the server (not retried): the status and the API's code. */
public class PullException(public val status: Int, public val code: String?, body: String) :
    Exception("GET events answered $status${code?.let { " $it" } ?: ""}: ${body.take(200)}")

internal const val CURSOR = "cursor"

/** The most events a pull asks for in one page. */
internal const val PAGE_LIMIT: Int = 1000

/**
 * Reads a stream's pages from the cursor kept in [storage] (under "cursor")
 * to its end, handing each page's events to [deliver] before the page's
 * cursor is kept, so that a crash re-delivers a page rather than skips one.
 * On 410 CURSOR_EXPIRED it calls [startOver] and reads from the beginning
 * (at most 3 times a pull). Each request's token comes from [tokenFor]:
 * one not the storage's user's throws [TokenRefused] before anything is
 * sent or stored. A 401 is answered once a request through [refresh]:
 * the page is asked again with the token it gives (checked the same way).
 */
internal suspend fun pull(
    http: OkHttpClient,
    baseUrl: String,
    space: String?,
    storage: QueueStorage,
    token: suspend () -> String,
    retry: RetryPolicy,
    startOver: suspend () -> Unit,
    refresh: TokenRefresh? = null,
    deliver: suspend (List<SyncEvent>) -> Unit,
): Int = withContext(Dispatchers.IO) {
    var fresh: String? = null
    var triedRefresh = false
    var startedOver = 0
    var delivered = 0
    var attempt = 0
    var started = System.nanoTime()
    while (true) {
        val cursor = storage.getValue(CURSOR)
        val url = baseUrl.toHttpUrl().newBuilder().apply {
            addPathSegments("api/v1")
            if (space == null) addPathSegments("sync/events") else addPathSegment("spaces").addPathSegment(space).addPathSegment("events")
            if (cursor != null) addQueryParameter("cursor", cursor)
            addQueryParameter("limit", PAGE_LIMIT.toString())
        }.build()
        // Before each request, the token checked against the storage's user: another user's stream is never read into it.
        val t = fresh ?: tokenFor(storage.user, token)
        val req = Request.Builder().url(url).header("Authorization", "Bearer $t").build()
        val (status, body, retryAfter) = try {
            http.newCall(req).execute().use { Triple(it.code, it.body.string(), retryAfterMs(it.header("Retry-After"))) }
        } catch (e: IOException) {
            Triple(-1, e.javaClass.simpleName, null)
        }
        if (status == -1 || status == 429 || status >= 500) {
            attempt++
            if (attempt >= retry.maxAttempts) throw IOException("pull gave up after $attempt attempts: last $status $body")
            val wait = retry.delayMs(attempt, retryAfter)
            if (retry.givesUp(started, wait)) throw IOException("pull gave up after $attempt attempts in ${retry.maxElapsedMs} ms: last $status $body")
            delay(wait)
            continue
        }
        attempt = 0
        started = System.nanoTime()
        val obj = try {
            Json.parseToJsonElement(body) as? JsonObject
        } catch (_: Exception) {
            null
        }
        if (status != 200) {
            val code = (obj?.get("error") as? JsonPrimitive)?.content
            if (status == 401 && refresh != null && !triedRefresh) {
                // Once a page: a second 401 (with the token the hook gave) stops the pull.
                triedRefresh = true
                fresh = refreshed(storage.user, t, refresh)
                if (fresh != null) continue
            }
            if (status == 410 && code == "CURSOR_EXPIRED" && cursor != null && startedOver < 3) {
                startedOver++
                startOver()
                storage.setValue(CURSOR, null)
                continue
            }
            throw PullException(status, code, body)
        }
        fresh = null
        triedRefresh = false
        val page = obj ?: throw PullException(status, null, "not the contract's page: $body")
        val events = (page["events"] as? List<*>)?.map { parseEvent(it as? JsonElement) }
            ?: throw PullException(status, null, "not the contract's page: no events")
        deliver(events)
        delivered += events.size
        (page["cursor"] as? JsonPrimitive)?.content?.let { storage.setValue(CURSOR, it) }
        if ((page["hasMore"] as? JsonPrimitive)?.booleanOrNull != true) return@withContext delivered
    }
    @Suppress("UNREACHABLE_CODE")
    delivered
}

internal fun parseEvent(e: JsonElement?): SyncEvent {
    val o = e as? JsonObject ?: throw PullException(200, null, "not the contract's event: $e")
    fun str(k: String) = (o[k] as? JsonPrimitive)?.takeIf { it.isString }?.content
    val id = str("id") ?: throw PullException(200, null, "an event without an id")
    if ((o["deleted"] as? JsonPrimitive)?.booleanOrNull == true) return SyncEvent.Deleted(id)
    val type = str("type") ?: throw PullException(200, null, "an event without a type")
    val payload = o["payload"] as? JsonObject ?: JsonObject(emptyMap())
    if (type == "event.deleted") {
        (payload["id"] as? JsonPrimitive)?.takeIf { it.isString }?.content?.let { return SyncEvent.Deleted(it) }
    }
    return SyncEvent.Event(id, type, str("occurredAt") ?: "", payload, str("author"))
}
