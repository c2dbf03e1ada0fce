package dev.syncevents

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.distinctUntilChanged
import kotlinx.coroutines.flow.flowOn
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put

/** The event type of [Records.put]: the record becomes exactly its fields. */
public const val RECORD_PUT: String = "record.put"

/** The event type of [Records.patch]: the fields it names take its values, the others stay. */
public const val RECORD_PATCH: String = "record.patch"

/** The event type of [Records.delete]: the record is gone, for good. */
public const val RECORD_DELETE: String = "record.delete"

/**
 * One record of a collection as the app sees it: the server's merge of
 * every put, patch and delete listed so far, with this device's changes
 * not yet listed applied on top ([pending] if any applies to it).
 */
public data class Record(
    /** The record's id in its collection. */
    val id: String,
    /** Its fields, each the value of the last put or patch (in commit order, then this device's pending ones) that set it. */
    val fields: JsonObject,
    /** Whether a change of this device not yet listed by a pull is applied to it. */
    val pending: Boolean,
)

/**
 * A collection of records kept by [SyncClient] without a reducer of the
 * app's: [put], [patch] and [delete] are ordinary events of the stream
 * (types [RECORD_PUT], [RECORD_PATCH], [RECORD_DELETE], payload
 * `{"collection": …, "id": …, "fields": {…}}`, no `fields` for a delete),
 * queued and sent exactly once like any [SyncClient.write]. Every client
 * of the stream merges them the same way, in the stream's commit order:
 * a put makes the record exactly its fields, a patch sets the fields it
 * names (the last writer of each field wins; a patch of a record never put
 * makes it), a delete is final (a later put or patch of that id does
 * nothing). This device's changes not yet listed by a pull are applied on
 * top, in the order they were made. The merged records of every collection
 * are kept in the client's [QueueStorage] (one value per collection,
 * stored before each page's cursor), so they survive a restart and need
 * no pull from the start; a 410 start-over drops them and merges again.
 *
 * Another app's or version's event types are untouched; an event of these
 * types whose payload is not the shape above is ignored (a put or patch
 * without `fields` has none: `{}`). A record event
 * deleted through [SyncClient.delete] (by its event id) is not undone on a
 * device that merged it already: change records through this class only.
 */
public class Records internal constructor(
    private val client: SyncClient,
    /** The collection's name, e.g. "todo". */
    public val collection: String,
) {
    init {
        require(collection.isNotEmpty()) { "collection must not be empty" }
    }

    /** Queues a put of record [id]: once merged it holds exactly [fields]. Suspends as [SyncClient.write] does; returns the queued entry. */
    public suspend fun put(id: String, fields: JsonObject): PendingWrite.Event = client.write(RECORD_PUT, change(id, fields))

    /** Queues a patch of record [id]: the fields of [fields] take its values, the record's others stay. */
    public suspend fun patch(id: String, fields: JsonObject): PendingWrite.Event = client.write(RECORD_PATCH, change(id, fields))

    /** Queues the deletion of record [id], final: a put or patch of the id merged after it does nothing. */
    public suspend fun delete(id: String): PendingWrite.Event = client.write(RECORD_DELETE, change(id, null))

    /**
     * The collection's live records, again on every change: a pulled page,
     * a change queued on this device, a write answered or refused. Each
     * collector reads the storage when it starts, then on each change (on
     * [Dispatchers.IO]); a late collector misses nothing. In the order each
     * record was first merged (the confirmed ones, then those only pending).
     */
    public val all: Flow<List<Record>> =
        client.recordsChanged.map { client.recordsNow(collection) }.distinctUntilChanged().flowOn(Dispatchers.IO)

    /** The collection's live records now, as [all] gives them. */
    public suspend fun list(): List<Record> = withContext(Dispatchers.IO) { client.recordsNow(collection) }

    /** The record [id] now, or null if none (never put, or deleted). */
    public suspend fun get(id: String): Record? = list().firstOrNull { it.id == id }

    private fun change(id: String, fields: JsonObject?): JsonObject {
        require(id.isNotEmpty()) { "id must not be empty" }
        return buildJsonObject {
            put("collection", collection)
            put("id", id)
            if (fields != null) put("fields", fields)
        }
    }
}

/** A record event's change, read from its type and payload; null if it is none. */
internal data class RecordChange(val type: String, val collection: String, val id: String, val fields: JsonObject?) {
    companion object {
        fun of(type: String, payload: JsonObject): RecordChange? {
            if (type != RECORD_PUT && type != RECORD_PATCH && type != RECORD_DELETE) return null
            fun str(k: String) = (payload[k] as? JsonPrimitive)?.takeIf { it.isString && it.content.isNotEmpty() }?.content
            val collection = str("collection") ?: return null
            val id = str("id") ?: return null
            // No fields is none ({}), as the TypeScript client reads it; fields that are not an object make no change.
            val fields = when (val f = payload["fields"]) {
                null, JsonNull -> JsonObject(emptyMap())
                is JsonObject -> f
                else -> return null
            }
            return RecordChange(type, collection, id, fields.takeIf { type != RECORD_DELETE })
        }

        /** The change of a queued entry's event JSON; null if it is no record change. */
        fun ofEvent(event: String): RecordChange? {
            val o = try {
                Json.parseToJsonElement(event) as? JsonObject
            } catch (_: IllegalArgumentException) {
                null
            } ?: return null
            val type = (o["type"] as? JsonPrimitive)?.content ?: return null
            return of(type, o["payload"] as? JsonObject ?: return null)
        }
    }
}

/** A record as merged: its fields, or null once deleted (a tombstone, so that the delete stays final). */
internal typealias Merged = LinkedHashMap<String, JsonObject?>

/** Merges [c] into the records; false if it does nothing (its record was deleted: a delete is final). */
internal fun Merged.merge(c: RecordChange): Boolean {
    if (containsKey(c.id) && get(c.id) == null) return false
    put(
        c.id,
        when (c.type) {
            RECORD_PUT -> c.fields!!
            RECORD_PATCH -> JsonObject((get(c.id) ?: JsonObject(emptyMap())) + c.fields!!)
            else -> null
        },
    )
    return true
}

/** The storage value of a collection's merged records: `{"id": {"fields": {...}}, "gone": {"deleted": true}}`. */
internal fun recordsValue(collection: String) = "record/$collection"

/** The storage value listing the collections merged so far (a JSON array), for a start-over to drop them. */
internal const val RECORD_COLLECTIONS = "record-collections"

/** The storage value keeping this device's record changes answered but not yet listed: event id to the event's JSON. */
internal const val RECORDS_SENT = "record-sent"

internal fun decodeSent(text: String?): Map<String, String> =
    (text?.let { Json.parseToJsonElement(it) as? JsonObject })?.mapNotNull { (id, e) ->
        (e as? JsonPrimitive)?.takeIf { it.isString }?.let { id to it.content }
    }?.toMap() ?: emptyMap()

internal fun encodeSent(m: Map<String, String>): String? = m.takeIf { it.isNotEmpty() }?.let { JsonObject(it.mapValues { (_, e) -> JsonPrimitive(e) }).toString() }

internal fun decodeMerged(text: String?): Merged {
    val m = Merged()
    val o = text?.let { Json.parseToJsonElement(it) as? JsonObject } ?: return m
    for ((id, r) in o) {
        val rec = r as? JsonObject ?: continue
        m[id] = if ((rec["deleted"] as? JsonPrimitive)?.booleanOrNull == true) null else rec["fields"] as? JsonObject ?: continue
    }
    return m
}

internal fun encodeMerged(m: Merged): String = JsonObject(
    m.mapValues { (_, f) -> if (f == null) buildJsonObject { put("deleted", true) } else buildJsonObject { put("fields", f) } },
).toString()

internal fun decodeNames(text: String?): List<String> =
    (text?.let { Json.parseToJsonElement(it) as? JsonArray })?.mapNotNull { (it as? JsonPrimitive)?.content } ?: emptyList()

internal fun encodeNames(names: List<String>): String = JsonArray(names.map { JsonPrimitive(it) }).toString()
