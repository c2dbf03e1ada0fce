package dev.syncevents

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.time.Instant

/**
 * A queued mutation as the app reads it back ([SyncClient.pending],
 * [SyncClient.kept]): an event to store ([Event]) or an event's deletion
 * ([Delete]), with its [key] (the Idempotency-Key it is sent under) and
 * where it stands. [QueueEntry] is the same entry as stored, its event as
 * JSON text, for [QueueStorage] implementations.
 */
public sealed interface PendingWrite {
    /** The Idempotency-Key the mutation is sent under, made once, kept until answered. */
    public val key: String

    /** The event's id: the one written, or the one to delete. */
    public val id: String

    /** [EntryStatus.PENDING] while it waits to be sent; CONFLICT or REJECTED once refused and kept. */
    public val status: EntryStatus

    /** For REJECTED: the HTTP status of the refusal; else null. */
    public val errorStatus: Int?

    /** For REJECTED: the server's answer; else null. */
    public val errorBody: String?

    /** An event to store, as it will be sent. */
    public data class Event(
        override val key: String,
        override val id: String,
        val type: String,
        /** When it happened on this device (milliseconds), sent as `occurredAt`. */
        val occurredAt: Instant,
        val payload: JsonObject,
        override val status: EntryStatus = EntryStatus.PENDING,
        override val errorStatus: Int? = null,
        override val errorBody: String? = null,
    ) : PendingWrite

    /** The deletion of the event [id], sent as DELETE. */
    public data class Delete(
        override val key: String,
        override val id: String,
        override val status: EntryStatus = EntryStatus.PENDING,
        override val errorStatus: Int? = null,
        override val errorBody: String? = null,
    ) : PendingWrite
}

/**
 * The entry as the app reads it: its event's JSON parsed. Throws
 * IllegalArgumentException if the stored event is not the JSON [SyncQueue]
 * wrote (a storage corrupted by hand).
 */
public fun QueueEntry.toPendingWrite(): PendingWrite {
    if (action == EntryAction.DELETE) return PendingWrite.Delete(key, eventId, status, errorStatus, errorBody)
    val o = Json.parseToJsonElement(event) as? JsonObject ?: throw IllegalArgumentException("entry $key: not an event object")
    fun str(k: String) = (o[k] as? JsonPrimitive)?.takeIf { it.isString }?.content
        ?: throw IllegalArgumentException("entry $key: no $k")
    return PendingWrite.Event(
        key = key,
        id = eventId,
        type = str("type"),
        occurredAt = Instant.parse(str("occurredAt")),
        payload = o["payload"] as? JsonObject ?: throw IllegalArgumentException("entry $key: no payload"),
        status = status,
        errorStatus = errorStatus,
        errorBody = errorBody,
    )
}
