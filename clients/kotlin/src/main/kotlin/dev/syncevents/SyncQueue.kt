package dev.syncevents

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.intOrNull
import kotlinx.serialization.json.put
import okhttp3.HttpUrl
import okhttp3.HttpUrl.Companion.toHttpUrl
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import java.time.Instant
import java.time.format.DateTimeFormatter
import java.time.temporal.ChronoUnit
import java.util.UUID

/** The server's batch limit: 98 events (a transaction's 100 actions, less the key's record and the user's head). */
public const val MAX_BATCH_EVENTS: Int = 98

/** A space's batch holds one fewer: the writer's role check is one more action. */
public const val MAX_SPACE_BATCH_EVENTS: Int = MAX_BATCH_EVENTS - 1

/** The server's body limit for a batch: 2 MiB. */
public const val MAX_BATCH_BYTES: Int = 2 * 1024 * 1024

/** Why a drain ended with entries still queued (see [DrainReport.stopped]). */
public enum class StopReason {
    /** A 401: refresh the token, then drain again. */
    UNAUTHORIZED,

    /** A space's 403 (SPACE_NOT_MEMBER or SPACE_ROLE_FORBIDS): nothing stored; the refused entries kept as REJECTED. */
    FORBIDDEN,

    /** The token's `sub` is not the queue's user: nothing was sent with it. */
    WRONG_USER,

    /** The token is no JWT with a `sub`: nothing was sent with it. */
    UNREADABLE_TOKEN,

    /** The retry policy's attempts are spent (no answer, 429 or 5xx each time). */
    RETRIES_EXHAUSTED,

    /**
     * An answer that is not the contract's (a 200 or a redirect to a POST, a
     * proxy's page): the entries may or may not be stored, so they stay
     * queued with their keys, and the next drain's retry under the same key
     * finds out.
     */
    UNEXPECTED_ANSWER,
}

/** What a drain did. */
public data class DrainReport(
    /** Entries the server stored on this drain (201). */
    val sent: Int = 0,
    /** Entries the server had stored already: a replayed answer, or 409 EVENT_ALREADY_EXISTS. */
    val replayed: Int = 0,
    /** Entries refused with 409 IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD: kept as CONFLICT. */
    val conflicts: Int = 0,
    /** Entries refused with another 4xx: kept as REJECTED with the server's answer. */
    val rejected: Int = 0,
    /** Attempts made again after no answer, a 429 or a 5xx. */
    val retries: Int = 0,
    /** Requests sent (attempts included). */
    val requests: Int = 0,
    /** Why the drain ended before every pending entry was answered; null if it did not. */
    val stopped: StopReason? = null,
    /** With [stopped]: the last failure seen, e.g. "status 503". */
    val error: String? = null,
)

/**
 * Sends one user's queued entries, in order, until each is answered. Before
 * a batch's first send its entries are stamped, in one storage transaction,
 * with the batch's own key; from then on they go together under that key,
 * the very same batch, until answered, across retries and restarts. One
 * drain runs at a time per queue.
 */
public class SyncQueue(
    private val storage: QueueStorage,
    baseUrl: String,
    /** The bearer token for the next attempt; its `sub` must be [QueueStorage.user] or nothing is sent. */
    private val token: suspend () -> String,
    private val http: OkHttpClient = OkHttpClient(),
    private val retry: RetryPolicy = RetryPolicy(),
    /** A space's id to send to; the user's own stream if null. */
    private val space: String? = null,
    /** At most this many events a batch (1 sends each alone, under its own key). */
    maxBatchEvents: Int = if (space == null) MAX_BATCH_EVENTS else MAX_SPACE_BATCH_EVENTS,
    /** Asked for a new token when the server answers 401, once a request; null: a 401 stops the drain ([TokenRefresh]). */
    private val refreshToken: TokenRefresh? = null,
) {
    private val base: HttpUrl = baseUrl.toHttpUrl()
    private val maxEvents = minOf(maxBatchEvents, if (space == null) MAX_BATCH_EVENTS else MAX_SPACE_BATCH_EVENTS)
    private val mutex = Mutex()

    init {
        require(maxBatchEvents >= 1) { "maxBatchEvents must be at least 1" }
    }

    /**
     * Called, inside a drain, with the entries the server stored (a 201, a
     * DELETE's 200, 409 EVENT_ALREADY_EXISTS) just before they leave the queue: what
     * a pull is yet to list. A DELETE answered 409 EVENT_ALREADY_DELETED is
     * not among them: another request deleted the event.
     */
    internal var onStored: (List<QueueEntry>) -> Unit = {}

    /**
     * Queues an event of [type] with [payload], stored with a new key in one
     * storage transaction before anything is sent; throws (and queues
     * nothing) if it cannot be stored. Returns the stored entry. It blocks
     * on the storage: call it off the main thread ([SyncClient.write]
     * suspends and does).
     */
    public fun write(type: String, payload: JsonObject, id: String = UUID.randomUUID().toString(), occurredAt: Instant = Instant.now()): QueueEntry {
        require(type.isNotEmpty()) { "type must not be empty" }
        val event = buildJsonObject {
            put("id", id)
            put("type", type)
            put("occurredAt", DateTimeFormatter.ISO_INSTANT.format(occurredAt.truncatedTo(ChronoUnit.MILLIS)))
            put("payload", payload)
        }
        val entry = QueueEntry(key = UUID.randomUUID().toString(), eventId = id, event = event.toString())
        storage.add(listOf(entry))
        return entry
    }

    /** Queues the deletion of the event [eventId], under a key of its own, sent alone as DELETE; blocks on the storage, as [write] does. */
    public fun delete(eventId: String): QueueEntry {
        require(eventId.isNotEmpty()) { "eventId must not be empty" }
        val entry = QueueEntry(
            key = UUID.randomUUID().toString(),
            eventId = eventId,
            event = buildJsonObject { put("id", eventId) }.toString(),
            action = EntryAction.DELETE,
        )
        storage.add(listOf(entry))
        return entry
    }

    /** Entries kept for the app: refused for a reused key (CONFLICT) or with another 4xx (REJECTED). */
    public fun kept(): List<QueueEntry> = storage.list().filter { it.status != EntryStatus.PENDING }

    /** Sends every pending entry until answered, or until a reason to stop. */
    public suspend fun drain(): DrainReport = mutex.withLock {
        withContext(Dispatchers.IO) { Drain().run() }
    }

    private inner class Drain {
        var r = DrainReport()

        suspend fun run(): DrainReport {
            // Entries added while draining go in the same drain: list again once answered.
            while (true) {
                var pending = storage.list().filter { it.status == EntryStatus.PENDING }
                if (pending.isEmpty()) return r
                while (pending.isNotEmpty()) {
                    val group = nextBatch(pending)
                    val keys = group.map { it.key }.toSet()
                    pending = pending.filter { it.key !in keys }
                    val only = group.singleOrNull()?.takeIf { it.batch == null }
                    val stop = if (only != null) sendOne(only) else sendBatch(group)
                    if (stop != null) return r.copy(stopped = stop.first, error = stop.second ?: r.error)
                }
            }
        }

        fun nextBatch(pending: List<QueueEntry>): List<QueueEntry> {
            val first = pending.first()
            if (first.batch != null) return pending.filter { it.batch == first.batch }
            if (first.action == EntryAction.DELETE) return listOf(first)
            val group = ArrayList<QueueEntry>()
            var bytes = "{\"events\":[]}".length
            for (e in pending) {
                val size = e.event.toByteArray().size + 1
                if (e.batch != null || e.action != EntryAction.WRITE || group.size == maxEvents ||
                    (group.isNotEmpty() && bytes + size > MAX_BATCH_BYTES)
                ) {
                    break
                }
                group += e
                bytes += size
            }
            if (group.size == 1) return group
            val key = UUID.randomUUID().toString()
            val stamped = group.map { it.copy(batch = key) }
            storage.updateAll(stamped)
            return stamped
        }

        suspend fun sendOne(e: QueueEntry): Pair<StopReason, String?>? {
            val url = eventsUrl().let {
                if (e.action == EntryAction.DELETE) it.newBuilder().addPathSegment(e.eventId).build() else it
            }
            val body = if (e.action == EntryAction.DELETE) null else e.event
            val a = send(url, e.key, body)
            if (a is Outcome.Stopped) return a.reason to a.error
            a as Outcome.Answered
            if (e.action == EntryAction.DELETE &&
                (a.status == 200 || (a.status == 409 && a.code == "EVENT_ALREADY_DELETED"))
            ) {
                storage.removeAll(listOf(e.key))
                if (a.status == 200) onStored(listOf(e))
                r = if (a.status == 200 && !a.replayed) r.copy(sent = r.sent + 1) else r.copy(replayed = r.replayed + 1)
                return null
            }
            return settle(listOf(e), a)
        }

        suspend fun sendBatch(group: List<QueueEntry>): Pair<StopReason, String?>? {
            val body = group.joinToString(",", "{\"events\":[", "]}") { it.event }
            val url = eventsUrl().newBuilder().addPathSegment("batch").build()
            val a = send(url, group.first().batch!!, body)
            if (a is Outcome.Stopped) return a.reason to a.error
            a as Outcome.Answered
            val named = namedEntries(group, a) ?: return settle(group, a)
            val rest = group.filter { it !in named }.map { it.copy(batch = null) }
            if (a.code == "EVENT_ALREADY_EXISTS") {
                onStored(named)
                storage.removeAll(named.map { it.key })
                r = r.copy(replayed = r.replayed + named.size)
            } else {
                storage.updateAll(
                    named.map {
                        it.copy(batch = null, status = EntryStatus.REJECTED, errorStatus = a.status, errorBody = a.body)
                    },
                )
                r = r.copy(rejected = r.rejected + named.size)
            }
            // The refused batch left nothing on the server: the rest go again under a new key.
            storage.updateAll(rest)
            return null
        }

        /** Records an answer for group (one entry, or one whole batch). */
        fun settle(group: List<QueueEntry>, a: Outcome.Answered): Pair<StopReason, String?>? {
            val n = group.size
            when {
                a.status == 201 -> {
                    // onStored first: what it keeps (a record change on top) is never missing in between.
                    onStored(group)
                    storage.removeAll(group.map { it.key })
                    r = if (a.replayed) r.copy(replayed = r.replayed + n) else r.copy(sent = r.sent + n)
                }
                a.status !in 400..499 -> return StopReason.UNEXPECTED_ANSWER to "status ${a.status}: not the contract's answer"
                // Refused for the token (the refresh hook's too, or it gave none): nothing stored; the entries wait with their keys.
                a.status == 401 -> return StopReason.UNAUTHORIZED to "status 401"
                // Nothing stored, and no retry changes it: kept for the app, and the drain stops.
                a.status == 403 && (a.code == "SPACE_NOT_MEMBER" || a.code == "SPACE_ROLE_FORBIDS") -> {
                    storage.updateAll(
                        group.map {
                            it.copy(batch = null, status = EntryStatus.REJECTED, errorStatus = a.status, errorBody = a.body)
                        },
                    )
                    r = r.copy(rejected = r.rejected + n)
                    return StopReason.FORBIDDEN to a.code
                }
                a.status == 409 && a.code == "EVENT_ALREADY_EXISTS" -> {
                    onStored(group)
                    storage.removeAll(group.map { it.key })
                    r = r.copy(replayed = r.replayed + n)
                }
                a.status == 409 && a.code == "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD" -> {
                    storage.updateAll(group.map { it.copy(batch = null, status = EntryStatus.CONFLICT) })
                    r = r.copy(conflicts = r.conflicts + n)
                }
                else -> {
                    storage.updateAll(
                        group.map {
                            it.copy(batch = null, status = EntryStatus.REJECTED, errorStatus = a.status, errorBody = a.body)
                        },
                    )
                    r = r.copy(rejected = r.rejected + n)
                }
            }
            return null
        }

        /** Sends under key until answered, counting requests and retries. */
        suspend fun send(url: HttpUrl, key: String, body: String?): Outcome = sendUntilAnswered(
            http, retry, token, storage.user,
            request = { t ->
                Request.Builder().url(url)
                    .header("Authorization", "Bearer $t")
                    .header("Idempotency-Key", key)
                    .apply { if (body == null) delete() else post(body.toRequestBody(JSON_TYPE)) }
                    .build()
            },
            attempted = { r = r.copy(requests = r.requests + 1) },
            retrying = { r = r.copy(retries = r.retries + 1) },
            refresh = refreshToken,
        )
    }

    private fun eventsUrl(): HttpUrl = base.newBuilder().apply {
        addPathSegments("api/v1")
        if (space == null) addPathSegments("sync/events") else addPathSegment("spaces").addPathSegment(space).addPathSegment("events")
    }.build()

    private companion object {
        /** The entries a batch's refusal names: stored already (details.ids) or invalid (details' index). */
        fun namedEntries(group: List<QueueEntry>, a: Outcome.Answered): List<QueueEntry>? {
            val details: JsonElement = try {
                (Json.parseToJsonElement(a.body) as? JsonObject)?.get("details")
            } catch (_: Exception) {
                null
            } ?: return null
            if (a.status == 409 && a.code == "EVENT_ALREADY_EXISTS" && details is JsonObject) {
                val ids = (details["ids"] as? JsonArray)?.mapNotNull { (it as? JsonPrimitive)?.content }?.toSet() ?: return null
                return group.filter { it.eventId in ids }
            }
            val indexes = when (details) {
                is JsonArray -> details.map { ((it as? JsonObject)?.get("index") as? JsonPrimitive)?.intOrNull }
                is JsonObject -> listOf((details["index"] as? JsonPrimitive)?.intOrNull)
                else -> emptyList()
            }
            if ((a.status == 400 || a.status == 413) && indexes.isNotEmpty() && indexes.all { it != null && it in group.indices }) {
                return group.filterIndexed { i, _ -> i in indexes }
            }
            return null
        }
    }
}
