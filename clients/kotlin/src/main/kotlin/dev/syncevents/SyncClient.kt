package dev.syncevents

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.MutableSharedFlow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asSharedFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.serialization.json.JsonObject
import okhttp3.OkHttpClient

/** Where the client stands. */
public sealed interface SyncStatus {
    /** Writes are being sent or the stream pulled. */
    public data object Syncing : SyncStatus

    /** Every write answered and the last pull reached the stream's end. */
    public data object Synced : SyncStatus

    /** The last sync failed in a way that is retried on the next [SyncClient.sync] (no answer, say). */
    public data class Failed(val error: String) : SyncStatus

    /** Stopped until the app acts (a 401, another user's token, a space's 403): writes stay queued with their keys. */
    public data class Stopped(val reason: StopReason, val error: String?) : SyncStatus
}

/**
 * The app's one object for one user's stream (their own, or a space's):
 * [write] and [delete] queue durably and sync; [status] says where it
 * stands; [events] carries what the server confirmed, each pulled event or
 * deletion, in the stream's order. [sync] runs in [scope], one at a time.
 */
public class SyncClient(
    private val storage: QueueStorage,
    private val baseUrl: String,
    private val token: suspend () -> String,
    private val scope: CoroutineScope,
    private val http: OkHttpClient = OkHttpClient(),
    private val retry: RetryPolicy = RetryPolicy(),
    private val space: String? = null,
    /** Called on 410 CURSOR_EXPIRED before the stream is read again from its start: drop the app's copy of it. */
    private val startOver: suspend () -> Unit = {},
) {
    private val queue = SyncQueue(storage, baseUrl, token, http, retry, space)
    private val mutex = Mutex()
    private val wake = Channel<Unit>(Channel.CONFLATED)
    private val _status = MutableStateFlow<SyncStatus>(SyncStatus.Syncing)
    private val _events = MutableSharedFlow<SyncEvent>(extraBufferCapacity = 1024)
    private val loop: Job = scope.launch { for (w in wake) sync() }

    /** Where the client stands. */
    public val status: StateFlow<SyncStatus> = _status.asStateFlow()

    /** Events the server confirmed (pulled), and deletions, as they arrive; subscribe before [sync]. */
    public val events: Flow<SyncEvent> = _events.asSharedFlow()

    /** Queues an event (stored with its key before anything is sent; throws if it cannot be) and syncs. */
    public fun write(type: String, payload: JsonObject): QueueEntry = queue.write(type, payload).also { wake.trySend(Unit) }

    /** Queues the deletion of [eventId] and syncs. */
    public fun delete(eventId: String): QueueEntry = queue.delete(eventId).also { wake.trySend(Unit) }

    /** Writes the server refused, kept for the app (CONFLICT, REJECTED). */
    public fun kept(): List<QueueEntry> = queue.kept()

    /** Writes still waiting to be answered. */
    public fun pending(): List<QueueEntry> = storage.list().filter { it.status == EntryStatus.PENDING }

    /** Sends every queued write, then pulls from the kept cursor to the stream's end; the last report. */
    public suspend fun sync(): DrainReport = mutex.withLock {
        _status.value = SyncStatus.Syncing
        val report = queue.drain()
        if (report.stopped != null) {
            _status.value = if (report.stopped == StopReason.RETRIES_EXHAUSTED) {
                SyncStatus.Failed(report.error ?: "retries exhausted")
            } else {
                SyncStatus.Stopped(report.stopped, report.error)
            }
            return report
        }
        try {
            pull(http, baseUrl, space, storage, token, retry, startOver) { page -> page.forEach { _events.emit(it) } }
            _status.value = if (pending().isEmpty()) SyncStatus.Synced else SyncStatus.Syncing
        } catch (e: PullException) {
            _status.value = if (e.status == 401 || e.status == 403) {
                SyncStatus.Stopped(if (e.status == 401) StopReason.UNAUTHORIZED else StopReason.FORBIDDEN, e.message)
            } else {
                SyncStatus.Failed(e.message ?: "pull refused")
            }
        } catch (e: java.io.IOException) {
            _status.value = SyncStatus.Failed(e.message ?: "no answer")
        }
        report
    }

    /** Sign-out: stops syncing and removes this user's queue and cursor. */
    public fun signOut() {
        close()
        storage.clear()
    }

    /** Stops syncing; the queue stays for the next client over the same storage. */
    public fun close() {
        wake.close()
        loop.cancel()
    }
}
