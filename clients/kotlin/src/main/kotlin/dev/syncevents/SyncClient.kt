package dev.syncevents

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.collectLatest
import kotlinx.coroutines.flow.distinctUntilChanged
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.withContext
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.MutableSharedFlow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.SharedFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asSharedFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.flow.update
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.longOrNull
import okhttp3.OkHttpClient
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicReference

/** Where the client stands. */
public sealed interface SyncStatus {
    /** Nothing done yet: the client has neither sent nor pulled since it was made (writes may be queued from before, see [SyncClient.pending]). */
    public data object Idle : SyncStatus

    /** Writes are being sent or the stream pulled, or a write answered is not listed by a pull yet ([SyncClient.waiting]). */
    public data object Syncing : SyncStatus

    /** Every write answered and listed by a pull, and the last pull reached the stream's end. */
    public data object Synced : SyncStatus

    /**
     * The last sync failed in a way that is retried on the next
     * [SyncClient.sync]: no answer within the [RetryPolicy]'s budget (no
     * network, no server), or a 5xx or 429 throughout; or the app's
     * `onEvents` or the storage threw.
     */
    public data class Failed(val error: String) : SyncStatus

    /** Stopped until the app acts (a 401, another user's token, a space's 403): writes stay queued with their keys. */
    public data class Stopped(val reason: StopReason, val error: String?) : SyncStatus
}

/**
 * How many of the latest events [SyncClient.events] replays to a new
 * collector: as many as a pulled page holds at most, so a collector
 * started just after a sync gets at least its last page whole.
 */
public const val EVENTS_REPLAY: Int = PAGE_LIMIT

/** The value beside the queue that keeps [SyncClient.waiting]: each event id with when its write was answered. */
private const val SENT = "sent"

/**
 * How long an answered write waits to be listed before [SyncClient.waiting]
 * lets it go: a sequencer behind lists it later than that only in an
 * outage, and one never listed (deleted, then trimmed by retention before a
 * pull came) must not keep the status from Synced for ever.
 */
internal const val SENT_WAIT_MS: Long = 10 * 60_000L

/**
 * The app's one object for one user's stream (their own, or a space's):
 * [write] and [delete] queue durably and sync; [status] says where it
 * stands; [events] carries what the server confirmed, each pulled event or
 * deletion, in the stream's order. [sync] runs in [scope], one at a time.
 * Once [start]ed, it keeps the stream current by itself: it pulls on each
 * poke heard on [channel], and every [pollIntervalMs] while it hears none
 * ([live] says which).
 *
 * ```
 * val sync = SyncClient(storage, SyncClientConfig(baseUrl, token = { auth.idToken() }), appScope)
 * ```
 *
 * Every request (each pull, write, space operation, and the live
 * channel's subscription) asks [token] afresh and checks its `sub` against
 * the storage's [QueueStorage.user] before anything is sent: another
 * user's token stops the client ([SyncStatus.Stopped] with
 * [StopReason.WRONG_USER]) with nothing sent, stored or subscribed, and
 * the cursor where it was.
 */
public class SyncClient(
    private val storage: QueueStorage,
    /** Where the API is, the user's tokens, and the tuning shared by this client and the spaces it [follow]s. */
    public val config: SyncClientConfig,
    private val scope: CoroutineScope,
    /**
     * Called with each pulled page, in the stream's order, before its
     * cursor is kept: where the app applies what must survive a crash (its
     * own database). A crash or a throw here re-delivers the page rather
     * than skips it, so apply events idempotently by id.
     */
    private val onEvents: suspend (List<SyncEvent>) -> Unit = {},
    /** Called on 410 CURSOR_EXPIRED before the stream is read again from its start: drop the app's copy of it. */
    private val startOver: suspend () -> Unit = {},
    /** A space's id: this client is of that space's stream (see [follow]); null for the user's own. */
    private val space: String? = null,
) : AutoCloseable {
    /**
     * The constructor of eleven parameters, before [SyncClientConfig]: the
     * same client, its settings put in a config.
     */
    @Deprecated(
        "Put baseUrl, token and the settings in a SyncClientConfig",
        ReplaceWith(
            "SyncClient(storage, SyncClientConfig(baseUrl, token, http = http, retry = retry, channel = channel, " +
                "pollIntervalMs = pollIntervalMs, liveCheckMs = liveCheckMs), scope, onEvents, startOver, space)",
        ),
    )
    public constructor(
        storage: QueueStorage,
        baseUrl: String,
        token: suspend () -> String,
        scope: CoroutineScope,
        http: OkHttpClient = OkHttpClient(),
        retry: RetryPolicy = RetryPolicy(),
        space: String? = null,
        startOver: suspend () -> Unit = {},
        onEvents: suspend (List<SyncEvent>) -> Unit = {},
        channel: LiveChannel? = null,
        pollIntervalMs: Long = 10_000,
        liveCheckMs: Long = 300_000,
    ) : this(
        storage,
        SyncClientConfig(baseUrl, token, http = http, retry = retry, channel = channel, pollIntervalMs = pollIntervalMs, liveCheckMs = liveCheckMs),
        scope, onEvents, startOver, space,
    )

    private val baseUrl = config.baseUrl
    private val token = config.token
    private val http = config.http
    private val retry = config.retry
    private val channel = config.channel
    private val pollIntervalMs = config.pollIntervalMs
    private val liveCheckMs = config.liveCheckMs
    private val refreshToken = config.refreshToken

    private val queue = SyncQueue(storage, baseUrl, token, http, retry, space, refreshToken = refreshToken).also { it.onStored = ::answered }

    /** When each waiting event's write was answered (ms since the epoch), by event id; changed inside [sync] (and by [signOut]). */
    @Volatile
    private var sent: Map<String, Long> = loadSent()
    private val _waiting = MutableStateFlow(sent.keys)

    /** The clock [SENT_WAIT_MS] is read on; tests move it. */
    internal var clock: () -> Long = System::currentTimeMillis

    /** Counts the changes that may change records (a page merged, a change queued, answered or refused); [Records.all] reads again on each. */
    private val _recordsChanged = MutableStateFlow(0L)
    internal val recordsChanged: StateFlow<Long> = _recordsChanged.asStateFlow()

    /** Held while records are merged, or read with this device's changes on top: a reader sees a page's merge whole. */
    private val recordLock = Any()

    private val mutex = Mutex()
    private val wake = Channel<Unit>(Channel.CONFLATED)
    private val _status = MutableStateFlow<SyncStatus>(SyncStatus.Idle)
    private val _events = MutableSharedFlow<SyncEvent>(replay = EVENTS_REPLAY, extraBufferCapacity = 1024)
    private val _live = MutableStateFlow<LiveState>(LiveState.Stopped)

    // A pull wanted by the app or the interval (forced), or by a poke (past its cursor).
    private val forced = AtomicBoolean(false)
    private val poked = AtomicReference<String?>(null)

    @Volatile
    private var reached: String? = null
    private var subscription: LiveChannel.Sub? = null
    private var ticker: Job? = null

    private val loop: Job = scope.launch {
        for (w in wake) {
            if (!due()) continue
            try {
                sync()
            } catch (e: CancellationException) {
                throw e
            } catch (e: Exception) {
                // The storage failing, say: the next wish tries again.
                _status.value = SyncStatus.Failed(e.message ?: e.javaClass.simpleName)
            }
        }
    }

    /** Where the client stands. */
    public val status: StateFlow<SyncStatus> = _status.asStateFlow()

    /** What the live channel is doing: [LiveState.Live] (pokes heard), [LiveState.Polling], or not started. */
    public val live: StateFlow<LiveState> = _live.asStateFlow()

    /**
     * The event ids of the writes (and deletions) the server answered that
     * no pull has listed yet. A 201 promises the event stored, exactly
     * once; in a busy space pulls list it a moment later (typically under a
     * second, longer while the server's sequencer is behind). Until a pull
     * lists it ([sync], a poke's or the interval's), [status] stays
     * [SyncStatus.Syncing], not [SyncStatus.Synced]. Kept in the storage
     * across restarts; one still unlisted 10 minutes after its answer is
     * let go when a pull ends (deleted, then trimmed by retention, say).
     */
    public val waiting: StateFlow<Set<String>> = _waiting.asStateFlow()

    /**
     * Events the server confirmed (pulled), and deletions, in the stream's
     * order, for a view. A new collector first gets the latest
     * [EVENTS_REPLAY] events delivered (the last pages, whole, when they
     * hold no more; `replayCache` lists them), then each as it arrives: one
     * started just after a [sync] or [start] misses nothing of a pull of
     * up to that many events, and a collector started again (a view
     * recreated) gets events it may have seen already, so apply them by
     * id. Earlier events of a longer pull are not replayed: what must not
     * be missed, or must survive a crash, goes through `onEvents`, which
     * is called with every page before its cursor is kept. The replay
     * holds those events in memory while the client lives.
     */
    public val events: SharedFlow<SyncEvent> = _events.asSharedFlow()

    /**
     * Queues an event of [type] with [payload] and wakes a sync in the
     * client's scope; returns the stored entry. The entry and its key are
     * stored in one storage transaction on [Dispatchers.IO] (main-safe)
     * before anything is sent; it throws, queuing nothing, if they cannot
     * be. The storing is not cancelled half-way: a caller cancelled
     * meanwhile gets a CancellationException, and the write may be queued
     * all the same ([pending] tells).
     */
    public suspend fun write(type: String, payload: JsonObject): PendingWrite.Event =
        queued { queue.write(type, payload) } as PendingWrite.Event

    /** Queues the deletion of [eventId] and wakes a sync, as [write] does: stored first, on [Dispatchers.IO]. */
    public suspend fun delete(eventId: String): PendingWrite.Delete = queued { queue.delete(eventId) } as PendingWrite.Delete

    private suspend fun queued(store: () -> QueueEntry): PendingWrite =
        withContext(Dispatchers.IO + NonCancellable) {
            store().also {
                _recordsChanged.update { n -> n + 1 }
                want(force = true)
            }.toPendingWrite()
        }

    /**
     * The records of [collection], merged from the stream's [RECORD_PUT],
     * [RECORD_PATCH] and [RECORD_DELETE] events with this device's changes
     * on top: put, patch and delete them, and follow them as a `Flow`. See
     * [Records].
     */
    public fun records(collection: String): Records = Records(this, collection)

    /**
     * The live records of [collection] now: the merged ones with this
     * device's changes on top (those answered but unlisted, then those
     * queued; in a space, authored by the storage's user), oldest first.
     */
    internal fun recordsNow(collection: String): List<Record> = synchronized(recordLock) {
        val m = decodeMerged(storage.getValue(recordsValue(collection)))
        val overlay = decodeSent(storage.getValue(RECORDS_SENT)).values +
            pendingEntries().filter { it.action == EntryAction.WRITE }.map { it.event }
        topRecords(m, collection, overlay, if (space != null) storage.user else null)
    }

    /** Merges a pulled page's record events into the kept records, before its cursor is kept; a page merged again changes nothing more. */
    private fun mergeRecords(page: List<SyncEvent>) {
        val changes = page.mapNotNull { e -> (e as? SyncEvent.Event)?.let { RecordChange.of(it.type, it.payload, it.occurredAt, it.author) } }
        if (changes.isEmpty()) return
        synchronized(recordLock) {
            val names = decodeNames(storage.getValue(RECORD_COLLECTIONS))
            for ((collection, cs) in changes.groupBy { it.collection }) {
                val m = decodeMerged(storage.getValue(recordsValue(collection)))
                cs.forEach { m.merge(it) }
                storage.setValue(recordsValue(collection), encodeMerged(m))
            }
            val all = names + changes.map { it.collection }.distinct().filter { it !in names }
            if (all != names) storage.setValue(RECORD_COLLECTIONS, encodeNames(all))
        }
    }

    /** On a start-over: the merged records go, to be merged again from the stream's start. */
    private fun dropRecords() = synchronized(recordLock) {
        for (name in decodeNames(storage.getValue(RECORD_COLLECTIONS))) storage.setValue(recordsValue(name), null)
        storage.setValue(RECORD_COLLECTIONS, null)
    }

    /** Writes the server refused, kept for the app ([EntryStatus.CONFLICT], [EntryStatus.REJECTED] with the server's answer), oldest first. */
    public fun kept(): List<PendingWrite> = queue.kept().map { it.toPendingWrite() }

    /** Writes and deletions still waiting to be answered, oldest first, typed: what [write] and [delete] returned. */
    public fun pending(): List<PendingWrite> = pendingEntries().map { it.toPendingWrite() }

    private fun pendingEntries(): List<QueueEntry> = storage.list().filter { it.status == EntryStatus.PENDING }

    /**
     * Sends every queued write, then pulls from the kept cursor to the
     * stream's end; the last report. It ends: with no answer it gives up
     * after [RetryPolicy.maxElapsedMs] (20 s by default) a request, the
     * status [SyncStatus.Failed], writes still queued under their keys. What `onEvents` or the storage throws
     * comes out here, the status [SyncStatus.Failed], the cursor where the
     * last page applied left it.
     */
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
            val over: suspend () -> Unit = {
                dropRecords()
                startOver()
            }
            pull(http, baseUrl, space, storage, token, retry, over, refreshToken) { page ->
                onEvents(page)
                // Before the page's cursor is kept: a crash re-delivers the page, never loses a listing or a record.
                synchronized(recordLock) {
                    mergeRecords(page)
                    keepSent(sent - page.map { it.id }.toSet())
                }
                _recordsChanged.update { it + 1 }
                page.forEach { _events.emit(it) }
            }
            reached = storage.getValue(CURSOR)
            val now = clock()
            keepSent(sent.filterValues { now - it < SENT_WAIT_MS })
            _recordsChanged.update { it + 1 }
            _status.value = if (pendingEntries().isEmpty() && sent.isEmpty()) SyncStatus.Synced else SyncStatus.Syncing
        } catch (e: TokenRefused) {
            // Another user's token (or none readable): nothing was sent, stored or moved.
            _status.value = SyncStatus.Stopped(e.reason, e.message)
        } catch (e: PullException) {
            _status.value = if (e.status == 401 || e.status == 403) {
                SyncStatus.Stopped(if (e.status == 401) StopReason.UNAUTHORIZED else StopReason.FORBIDDEN, e.message)
            } else {
                SyncStatus.Failed(e.message ?: "pull refused")
            }
        } catch (e: java.io.IOException) {
            _status.value = SyncStatus.Failed(e.message ?: "no answer")
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            // onEvents threw (or the storage failed): the page's cursor was not kept.
            _status.value = SyncStatus.Failed(e.message ?: e.javaClass.simpleName)
            throw e
        }
        report
    }

    /** The queue's [SyncQueue.onStored]: the entries wait for a pull to list their events. */
    private fun answered(entries: List<QueueEntry>) {
        val at = clock()
        synchronized(recordLock) {
            // A record change answered stays on top of the records until a pull lists it.
            val changes = entries.filter { it.action == EntryAction.WRITE && RecordChange.ofEvent(it.event) != null }
            if (changes.isNotEmpty() && loop.isActive) {
                val kept = decodeSent(storage.getValue(RECORDS_SENT)) + changes.associate { it.eventId to it.event }
                storage.setValue(RECORDS_SENT, encodeSent(kept))
            }
            keepSent(sent + entries.associate { it.eventId to at })
        }
    }

    /** Makes [next] the waiting writes, beside the queue first; not once closed, so signOut's clear() stays clear. */
    private fun keepSent(next: Map<String, Long>) {
        if (next == sent || !loop.isActive) return
        storage.setValue(SENT, next.takeIf { it.isNotEmpty() }?.let { m -> JsonObject(m.mapValues { JsonPrimitive(it.value) }).toString() })
        val changes = decodeSent(storage.getValue(RECORDS_SENT))
        if (changes.keys.any { it !in next }) storage.setValue(RECORDS_SENT, encodeSent(changes.filterKeys { it in next }))
        sent = next
        _waiting.value = next.keys
    }

    /** The waiting writes kept beside the queue; none if none (or nothing readable) is kept. */
    private fun loadSent(): Map<String, Long> {
        val kept = storage.getValue(SENT) ?: return emptyMap()
        val obj = try {
            Json.parseToJsonElement(kept) as? JsonObject
        } catch (_: IllegalArgumentException) {
            null
        }
        return obj?.mapNotNull { (id, at) -> (at as? JsonPrimitive)?.longOrNull?.let { id to it } }?.toMap() ?: emptyMap()
    }

    /**
     * Keeps the stream current by itself: subscribes to its channel on
     * [channel] (or polls, without one), pulls on each poke past the
     * cursor reached, on each (re)subscription, every [pollIntervalMs]
     * while the channel is not live and every [liveCheckMs] while it is. A
     * stream [SyncStatus.Stopped] is not pulled again until the app calls
     * [sync] or writes. Again after [stop], it starts afresh. The channel
     * is subscribed only with a token of the storage's user: with another
     * user's it subscribes to nothing, and the client stops
     * ([SyncStatus.Stopped], [StopReason.WRONG_USER]) and is not started.
     */
    public fun start(): Unit = synchronized(this) {
        if (ticker != null) return
        ticker = scope.launch {
            _live.map { it.javaClass }.distinctUntilChanged().collectLatest { intervals(_live.value) }
        }
        val path = channel?.pathFor(storage.user, space)
        if (channel == null || path == null) {
            enter(LiveState.Polling(PollReason.NO_CHANNEL))
        } else {
            subscription = channel.subscribe(
                path,
                storage.user,
                object : LiveChannel.Listener {
                    override fun state(s: LiveState) = enter(s)

                    override fun poke(cursor: String?) = want(poke = cursor)

                    override fun refused(reason: StopReason, error: String) {
                        _status.value = SyncStatus.Stopped(reason, error)
                        stop()
                    }
                },
                refreshToken,
            )
        }
    }

    /** Stops hearing pokes and polling (an app going to the background, say); [sync] and writes still sync. */
    public fun stop(): Unit = synchronized(this) {
        subscription?.cancel()
        subscription = null
        ticker?.cancel()
        ticker = null
        _live.value = LiveState.Stopped
    }

    /** Entering live or polling from another state, a pull at once: a poke may have been missed. */
    private fun enter(s: LiveState) {
        val was = _live.value
        _live.value = s
        if (was.javaClass != s.javaClass && (s is LiveState.Live || s is LiveState.Polling) && _status.value !is SyncStatus.Stopped) {
            want(force = true)
        }
    }

    /** The pulls of the interval while in state s. */
    private suspend fun intervals(s: LiveState) {
        val every = when (s) {
            LiveState.Stopped -> return
            LiveState.Live -> liveCheckMs
            LiveState.Connecting, is LiveState.Polling -> pollIntervalMs
        }
        while (true) {
            delay(every)
            if (_status.value !is SyncStatus.Stopped) want(force = true)
        }
    }

    /** Asks the loop for a sync: forced, or for a poke, whose cursor it drops if a pull went as far. */
    private fun want(force: Boolean = false, poke: String? = null) {
        if (force) {
            forced.set(true)
        } else {
            if (_status.value is SyncStatus.Stopped) return
            // "" stands for a poke without a cursor: a pull all the same.
            poked.getAndUpdate { was ->
                when {
                    was == "" || poke == null -> ""
                    was == null || isAfter(poke, was) -> poke
                    else -> was
                }
            }
        }
        wake.trySend(Unit)
    }

    /** Whether a sync is wanted now; consumes the wish. */
    private fun due(): Boolean {
        val f = forced.getAndSet(false)
        val p = poked.getAndSet(null)
        return f || (p != null && isAfter(p.ifEmpty { null }, reached))
    }

    /** The space operations of this client's user (create, list, add and remove members, leave), their keys kept in its storage. */
    public val spaces: Spaces by lazy { Spaces(storage, baseUrl, token, http, retry, refreshToken) }

    /**
     * Follows [space]: a client of that space's stream over [storage] (of
     * that stream, e.g. `SqliteQueueStorage(path, user, stream = space)`),
     * with this one's token, HTTP client, retry policy, live channel and
     * intervals; started if this one is. Its writes go to the space in
     * batches of at most [MAX_SPACE_BATCH_EVENTS]. To stop following,
     * [close] it; after leaving, [signOut] it to drop what it kept.
     */
    public fun follow(
        space: String,
        storage: QueueStorage,
        startOver: suspend () -> Unit = {},
        onEvents: suspend (List<SyncEvent>) -> Unit = {},
    ): SyncClient {
        require(this.space == null) { "follow a space from the client of the user's own stream" }
        require(storage.user == this.storage.user) { "the space's storage must be this user's" }
        val c = SyncClient(storage, config, scope, onEvents, startOver, space)
        if (ticker != null) c.start()
        return c
    }

    /**
     * Sign-out: [close]s the client and removes this stream's queue,
     * cursor and kept values from the storage (which stays open: the app
     * closes it).
     */
    public fun signOut() {
        close()
        storage.clear()
        sent = emptyMap()
        _waiting.value = emptySet()
        _recordsChanged.update { it + 1 }
    }

    /**
     * Stops syncing: the loop, the pokes and intervals, the live
     * subscription. The queue stays for the next client over the same
     * storage. It closes neither the storage, nor the [LiveChannel], nor
     * the OkHttp client: the app made them, may share them (one SQLite
     * file for several users and spaces, one channel for the user's
     * streams), and closes them itself once every client over them is
     * closed. A client [follow] returned is closed on its own. Closing
     * twice does nothing more.
     */
    override fun close() {
        stop()
        wake.close()
        loop.cancel()
    }
}

/**
 * What a [SyncClient] needs besides its stream's storage and scope: where
 * the API is, the user's tokens, and the settings, each with a default.
 * One config serves the user's own client and every space it follows
 * ([SyncClient.follow] passes it on); `copy()` makes a variant.
 */
public data class SyncClientConfig(
    /** Where the API is, e.g. `https://api.example.com`. */
    val baseUrl: String,
    /** The bearer token (a JWT) for the next request, asked afresh for each; its `sub` must be the storage's user. */
    val token: suspend () -> String,
    /**
     * Asked for a new token when the server answers 401, once a request
     * (a pull, a write, a space operation): the request is sent again with
     * it, under the same Idempotency-Key. Null, or a second 401, stops the
     * client ([StopReason.UNAUTHORIZED]); see [TokenRefresh]. The live
     * channel asks it the same way when its connection or the stream's
     * subscription is refused as unauthorized (see [LiveChannel]).
     */
    val refreshToken: TokenRefresh? = null,
    /** The HTTP client of every request; the app closes it, not the [SyncClient]. */
    val http: OkHttpClient = OkHttpClient(),
    /** How a request with no answer, a 429 or a 5xx is tried again, and when given up (20 s by default). */
    val retry: RetryPolicy = RetryPolicy(),
    /** The live channel (one shared by the user's streams) to hear pokes on once started; null: poll only. */
    val channel: LiveChannel? = null,
    /** How often to pull, once started, while the channel is not live. */
    val pollIntervalMs: Long = 10_000,
    /** How often to pull while live all the same: a poke lost costs at most this much latency, never an event. */
    val liveCheckMs: Long = 300_000,
) {
    init {
        require(pollIntervalMs > 0 && liveCheckMs > 0) { "intervals must be positive" }
    }
}
