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
    /**
     * The `occurredAt` of the change that made it, as written (ISO 8601): when
     * the device that wrote it said so, by its clock. The TypeScript client's
     * `createdAt`, the same string.
     */
    val createdAt: String,
    /** The `occurredAt` of the last change applied to it (a pending one's included). */
    val updatedAt: String,
    /** In a space: the `sub` of who made it (this device's user, for a record made by a pending change); null in the user's own stream. */
    val author: String? = null,
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
     * [Dispatchers.IO]); a late collector misses nothing. Oldest first: by
     * [Record.createdAt], then [Record.id] (as strings), the order the
     * TypeScript client's `list()` gives.
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
internal data class RecordChange(
    val type: String,
    val collection: String,
    val id: String,
    val fields: JsonObject?,
    /** The event's `occurredAt`, as written; "" if it had none. */
    val occurredAt: String = "",
    /** The event's author (a space's), or for a pending change in a space this device's user. */
    val author: String? = null,
) {
    companion object {
        fun of(type: String, payload: JsonObject, occurredAt: String = "", author: String? = null): RecordChange? {
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
            return RecordChange(type, collection, id, fields.takeIf { type != RECORD_DELETE }, occurredAt, author)
        }

        /** The change of a queued entry's event JSON, made by [author] (in a space); null if it is no record change. */
        fun ofEvent(event: String, author: String? = null): RecordChange? {
            val o = try {
                Json.parseToJsonElement(event) as? JsonObject
            } catch (_: IllegalArgumentException) {
                null
            } ?: return null
            val type = (o["type"] as? JsonPrimitive)?.content ?: return null
            val occurredAt = (o["occurredAt"] as? JsonPrimitive)?.takeIf { it.isString }?.content ?: ""
            return of(type, o["payload"] as? JsonObject ?: return null, occurredAt, author)
        }
    }
}

/** A merged record as kept: its fields, the `occurredAt` of the change that made it and of the last one, its author. */
internal data class Kept(val fields: JsonObject, val createdAt: String, val updatedAt: String, val author: String?)

/** Records as merged, by id: a record, or null once deleted (a tombstone, so that the delete stays final). */
internal typealias Merged = LinkedHashMap<String, Kept?>

/**
 * Merges [c] into the records, as the TypeScript client's `foldRecords`
 * does; false if it does nothing (its record was deleted: a delete is
 * final). The record keeps the `occurredAt` and author of the change
 * that made it; [Kept.updatedAt] is the last change's.
 */
internal fun Merged.merge(c: RecordChange): Boolean {
    if (containsKey(c.id) && get(c.id) == null) return false
    val was = get(c.id)
    put(
        c.id,
        when (c.type) {
            RECORD_DELETE -> null
            else -> Kept(
                fields = if (c.type == RECORD_PUT || was == null) c.fields!! else JsonObject(was.fields + c.fields!!),
                createdAt = was?.createdAt ?: c.occurredAt,
                updatedAt = c.occurredAt,
                author = if (was == null) c.author else was.author,
            )
        },
    )
    return true
}

/**
 * [merged] (of [collection]) with this device's changes not yet listed on
 * top, [overlay] (their events' JSON, in the order made; in a space
 * authored by [author]), listed as [listRecords] does. [merged] is changed.
 */
internal fun topRecords(merged: Merged, collection: String, overlay: Iterable<String>, author: String?): List<Record> {
    val mine = HashSet<String>()
    for (event in overlay) {
        val c = RecordChange.ofEvent(event, author) ?: continue
        if (c.collection == collection && merged.merge(c)) mine += c.id
    }
    return listRecords(merged, mine)
}

/**
 * The live records of [merged] as the app reads them, oldest first: by
 * createdAt, then id, compared as strings (the TypeScript client's
 * `listRecords`); [pending] names those a change not yet listed applies to.
 */
internal fun listRecords(merged: Merged, pending: Set<String>): List<Record> =
    merged.mapNotNull { (id, k) -> k?.let { Record(id, it.fields, id in pending, it.createdAt, it.updatedAt, it.author) } }
        .sortedWith(compareBy<Record> { it.createdAt }.thenBy { it.id })

/**
 * The storage value of a collection's merged records:
 * `{"id": {"fields": {...}, "createdAt": "...", "updatedAt": "...", "author": "..."}, "gone": {"deleted": true}}`.
 */
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
        if ((rec["deleted"] as? JsonPrimitive)?.booleanOrNull == true) {
            m[id] = null
            continue
        }
        fun str(k: String) = (rec[k] as? JsonPrimitive)?.takeIf { it.isString }?.content
        val fields = rec["fields"] as? JsonObject ?: continue
        m[id] = Kept(fields, str("createdAt") ?: "", str("updatedAt") ?: "", str("author"))
    }
    return m
}

internal fun encodeMerged(m: Merged): String = JsonObject(
    m.mapValues { (_, k) ->
        if (k == null) {
            buildJsonObject { put("deleted", true) }
        } else {
            buildJsonObject {
                put("fields", k.fields)
                put("createdAt", k.createdAt)
                put("updatedAt", k.updatedAt)
                if (k.author != null) put("author", k.author)
            }
        }
    },
).toString()

internal fun decodeNames(text: String?): List<String> =
    (text?.let { Json.parseToJsonElement(it) as? JsonArray })?.mapNotNull { (it as? JsonPrimitive)?.content } ?: emptyList()

internal fun encodeNames(names: List<String>): String = JsonArray(names.map { JsonPrimitive(it) }).toString()
