package dev.syncevents

/** Where an entry stands: waiting to be sent, or refused and kept for the app. */
public enum class EntryStatus { PENDING, CONFLICT, REJECTED }

/** What an entry asks for: an event stored, or an event deleted. */
public enum class EntryAction { WRITE, DELETE }

/**
 * One queued mutation, as stored before anything is sent. [key] is the
 * entry's Idempotency-Key, made once and never changed; [batch] the key of
 * the batch it was stamped into before that batch's first send, kept until
 * the batch is answered. [event] is the event's JSON as sent (for a delete,
 * `{"id":...}`).
 */
public data class QueueEntry(
    val key: String,
    val eventId: String,
    val event: String,
    val action: EntryAction = EntryAction.WRITE,
    val batch: String? = null,
    val status: EntryStatus = EntryStatus.PENDING,
    /** For REJECTED: the HTTP status and the server's body. */
    val errorStatus: Int? = null,
    val errorBody: String? = null,
)

/**
 * One user's durable queue, in the order entries were added. Each call is
 * one transaction of the store: all of it or none. The JVM's is
 * [SqliteQueueStorage]; on Android an app writes the same over
 * SupportSQLiteDatabase (see the README).
 */
public interface QueueStorage {
    /** The user (the token's `sub`) whose queue this is. */
    public val user: String

    /** Adds entries at the end, all or none; throws if they cannot be stored. */
    public fun add(entries: List<QueueEntry>)

    /** Every entry, oldest first. */
    public fun list(): List<QueueEntry>

    /** Replaces the stored entries of the same keys, all or none. */
    public fun updateAll(entries: List<QueueEntry>)

    /** Removes the entries of these keys, all or none. */
    public fun removeAll(keys: Collection<String>)

    /** A value kept beside the queue (the pull cursor, say); null if none. */
    public fun getValue(name: String): String?

    /** Keeps [value] under [name]; null removes it. */
    public fun setValue(name: String, value: String?)

    /** Removes this user's entries and values (sign-out). */
    public fun clear()
}
