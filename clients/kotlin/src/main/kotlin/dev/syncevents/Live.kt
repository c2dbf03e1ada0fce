package dev.syncevents

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.longOrNull
import kotlinx.serialization.json.put
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import java.util.Base64
import java.util.UUID

/** What a stream's live channel is doing (see [SyncClient.live]). */
public sealed interface LiveState {
    /** Not started ([SyncClient.start]), or stopped: no pokes, no polling. */
    public data object Stopped : LiveState

    /** Started, the channel not live yet: a pull comes every poll interval meanwhile. */
    public data object Connecting : LiveState

    /** Subscribed: each poke pulls, and a pull comes every live check all the same. */
    public data object Live : LiveState

    /** Pulling every poll interval, since pokes cannot be heard, for [reason]; reconnection goes on meanwhile. */
    public data class Polling(val reason: PollReason) : LiveState
}

/** Why a stream polls instead of hearing pokes. */
public enum class PollReason {
    /** No [LiveChannel] was given, or the user's id cannot be a channel segment. */
    NO_CHANNEL,

    /** The socket could not open, closed, broke or went silent past its keep-alive timeout. */
    CHANNEL_UNAVAILABLE,

    /** The channel refused the subscription (tried again after 5 minutes at the soonest). */
    SUBSCRIBE_REFUSED,
}

/**
 * One WebSocket connection to an AppSync Events API, by its protocol, on
 * which each started [SyncClient] given it subscribes to its stream's
 * channel (`/users/<sub>`, or `/spaces/<id>` for a space): the user's
 * streams share one socket. It opens with the first subscription and
 * closes with the last. The authorization (the API's own JWT, for
 * [httpHost]) goes in a subprotocol `header-` + base64url(JSON) beside
 * `aws-appsync-event-ws`, then `connection_init`, `connection_ack` with the
 * keep-alive timeout, a `subscribe` per channel with the authorization
 * again, `subscribe_success` or `subscribe_error`, and `data` messages: a
 * poke, the stream's head, `{"cursor":…}`. Nothing heard within the
 * keep-alive timeout (AppSync sends `ka` every minute), a close or an
 * error breaks the connection: each stream polls meanwhile, and it
 * reconnects after [reconnect]'s full-jitter backoff. A stream's channel
 * is subscribed only with a token whose `sub` is the stream's user: with
 * another user's token the client is stopped (StopReason.WRONG_USER), and
 * no socket is opened for it.
 *
 * A connection refused as unauthorized (the upgrade answered 401) or a
 * subscription refused so (`subscribe_error` `UnauthorizedException`)
 * asks the client's refresh hook ([SyncClientConfig.refreshToken]) once,
 * as an HTTP request does: with the refused token, and the token it gives
 * is checked against the stream's user like any other (another user's
 * stops the client with StopReason.WRONG_USER, with nothing sent with
 * it). The connection is opened again, or the subscribe sent again, at
 * once with it; the next connection asks [token] afresh. No hook, a null
 * from it, or a second refusal: the connection is broken (polling, and
 * reconnection with backoff), or the subscription refused (polling).
 */
public class LiveChannel(
    /** The WebSocket endpoint, e.g. `wss://xyz.appsync-realtime-api.eu-west-1.amazonaws.com/event/realtime`. */
    private val realtimeUrl: String,
    /** The HTTP endpoint's host, which the authorization names, e.g. `xyz.appsync-api.eu-west-1.amazonaws.com`. */
    private val httpHost: String,
    /** The API's bearer token (a JWT), asked for each connection. */
    private val token: suspend () -> String,
    /** Where the connection's coroutines run; cancelling it ends the channel as [close] does. */
    private val scope: CoroutineScope,
    /** The client the socket is opened with (its interceptors and dispatcher). */
    private val http: OkHttpClient = OkHttpClient(),
    /** The wait before each reconnection: full jitter, 500 ms doubling to 30 s. */
    private val reconnect: RetryPolicy = RetryPolicy(baseDelayMs = 500, maxDelayMs = 30_000),
    /** How long a connection may take to be acknowledged. */
    private val connectTimeoutMs: Long = 15_000,
    /** The namespace of the users' channels: user u's is `/<namespace>/u`. */
    private val namespace: String = "users",
) : AutoCloseable {
    private val cmds = Channel<Cmd>(Channel.UNLIMITED)

    // Touched only by the actor's coroutine.
    private val subs = LinkedHashSet<Sub>()
    private var conn: Conn? = null
    private var failures = 0
    private var reconnectJob: Job? = null

    private val actor: Job = scope.launch {
        try {
            for (c in cmds) {
                if (!handle(c)) break
            }
        } finally {
            disconnect()
            reconnectJob?.cancel()
            subs.forEach { it.retry?.cancel() }
        }
    }

    /** What a subscription is told, on the actor's coroutine: it must not block. */
    internal interface Listener {
        fun state(s: LiveState)
        fun poke(cursor: String?)

        /** The connection's token is not the subscription's user's (or has no readable sub): it was dropped unsubscribed. */
        fun refused(reason: StopReason, error: String)
    }

    /** A stream's subscription; [cancel] unsubscribes it. [refresh]: its client's hook, asked when it is refused as unauthorized. */
    internal inner class Sub(val path: String, val user: String, private val listener: Listener, val refresh: TokenRefresh? = null) {
        val id: String = UUID.randomUUID().toString()
        var subscribed = false

        /** Whether the hook was asked for this subscribe already: once a subscribe, as once an HTTP request. */
        var refreshTried = false
        var refusedUntil = 0L
        var retry: Job? = null
        private var state: LiveState = LiveState.Stopped

        fun set(s: LiveState) {
            if (s != state) {
                state = s
                listener.state(s)
            }
        }

        fun poke(cursor: String?) = listener.poke(cursor)

        fun refused(r: TokenRefused) = listener.refused(r.reason, r.message ?: r.reason.name)

        fun cancel() {
            cmds.trySend(Cmd.Remove(this))
        }
    }

    /** The channel of user's stream, or of space's; null if it cannot be a channel segment. */
    internal fun pathFor(user: String, space: String?): String? {
        val segment = space ?: user
        if (!SEGMENT.matches(segment)) return null
        return if (space != null) "/spaces/$space" else "/$namespace/$user"
    }

    /**
     * Subscribes listener to path, of [user]'s stream, now or once the
     * connection is acknowledged; only with a token whose `sub` is [user]
     * (else it is dropped and told [Listener.refused]).
     */
    internal fun subscribe(path: String, user: String, listener: Listener, refresh: TokenRefresh? = null): Sub =
        Sub(path, user, listener, refresh).also { cmds.trySend(Cmd.Add(it)) }

    /** Closes the socket and ends every subscription; the channel is not used again. */
    override fun close() {
        cmds.trySend(Cmd.Close)
        cmds.close()
    }

    private sealed interface Cmd {
        class Add(val sub: Sub) : Cmd
        class Remove(val sub: Sub) : Cmd
        data object Connect : Cmd
        data object Close : Cmd
        class Resubscribe(val sub: Sub) : Cmd
        class Opened(val conn: Conn) : Cmd
        class Text(val conn: Conn, val text: String) : Cmd
        class Broken(val conn: Conn) : Cmd

        /** The upgrade was answered 401. */
        class Unauthorized(val conn: Conn) : Cmd
    }

    /** One connection; replaced, never reused, on reconnection. */
    private class Conn {
        var ws: WebSocket? = null
        var token = ""
        var acked = false
        var keepAliveMs = DEFAULT_CONNECTION_TIMEOUT_MS
        var timer: Job? = null

        /** Whether its token is the refresh hook's, given for the last connection's 401: a second 401 is not asked again. */
        var refreshed = false
    }

    /** Whether to go on. */
    private suspend fun handle(c: Cmd): Boolean {
        when (c) {
            is Cmd.Add -> add(c.sub)
            is Cmd.Remove -> remove(c.sub)
            Cmd.Connect -> {
                reconnectJob = null
                if (subs.isNotEmpty() && conn == null) connect()
            }
            Cmd.Close -> return false
            is Cmd.Resubscribe -> conn?.let {
                c.sub.refreshTried = false // a new try, after the wait: the hook may be asked again
                if (it.acked && c.sub in subs && !c.sub.subscribed) subscribe(it, c.sub)
            }
            is Cmd.Opened -> if (c.conn === conn) c.conn.ws?.send("""{"type":"connection_init"}""")
            is Cmd.Text -> if (c.conn === conn) message(c.conn, c.text)
            is Cmd.Broken -> if (c.conn === conn) broken()
            is Cmd.Unauthorized -> if (c.conn === conn) unauthorized(c.conn)
        }
        return true
    }

    private suspend fun add(sub: Sub) {
        subs += sub
        val c = conn
        when {
            c != null -> {
                sub.set(LiveState.Connecting)
                if (c.acked) subscribe(c, sub)
            }
            reconnectJob != null -> sub.set(LiveState.Polling(PollReason.CHANNEL_UNAVAILABLE))
            else -> {
                sub.set(LiveState.Connecting)
                connect()
            }
        }
    }

    private fun remove(sub: Sub) {
        if (!subs.remove(sub)) return
        sub.retry?.cancel()
        val c = conn
        if (sub.subscribed && c != null) c.ws?.send(buildJsonObject { put("type", "unsubscribe"); put("id", sub.id) }.toString())
        sub.subscribed = false
        sub.set(LiveState.Stopped)
        if (subs.isEmpty()) {
            disconnect()
            reconnectJob?.cancel()
            reconnectJob = null
            failures = 0
        }
    }

    /** Opens a connection with [token]'s token, or with [given] (the refresh hook's, after a 401). */
    private suspend fun connect(given: String? = null) {
        val c = Conn()
        conn = c
        c.refreshed = given != null
        val t = given ?: try {
            withTimeoutOrNull(connectTimeoutMs) { token() }
        } catch (e: CancellationException) {
            throw e
        } catch (_: Exception) {
            null
        }
        if (conn !== c) return
        if (t == null) return broken()
        // No socket opened with a token for none of its subscriptions' users.
        if (!keepOnly(t)) return
        c.token = t
        val header = "header-" + Base64.getUrlEncoder().withoutPadding().encodeToString(authorization(t).toString().toByteArray())
        val req = try {
            Request.Builder().url(realtimeUrl).header("Sec-WebSocket-Protocol", "$SUBPROTOCOL, $header").build()
        } catch (_: IllegalArgumentException) {
            return broken() // a malformed realtimeUrl: retried with backoff, polled meanwhile
        }
        c.timer = after(c, connectTimeoutMs)
        c.ws = http.newWebSocket(req, Events(c))
    }

    /**
     * The upgrade of [c] was refused as unauthorized: the hook of a
     * subscription waiting on it is asked once for a new token, and the
     * connection opened again at once with it (checked against the
     * subscriptions' users by [connect]); else it is broken as any failure.
     */
    private suspend fun unauthorized(c: Conn) {
        val hook = subs.firstNotNullOfOrNull { it.refresh }
        if (hook == null || c.refreshed) return broken()
        disconnect()
        val t = ask(hook, c.token) ?: return broken()
        if (subs.isEmpty() || conn != null) return // every subscription went, or another connection began, meanwhile
        connect(given = t)
    }

    /** The token [hook] gives for [rejected]; null if none (null, a failure, or no answer within the connect timeout). Unchecked: the caller checks its user. */
    private suspend fun ask(hook: TokenRefresh, rejected: String): String? = try {
        withTimeoutOrNull(connectTimeoutMs) { hook(rejected) }
    } catch (e: CancellationException) {
        throw e
    } catch (_: Exception) {
        null
    }

    /**
     * [sub]'s subscribe was refused as unauthorized: its hook is asked once
     * for a new token, which must be [sub]'s user's (else the subscription is
     * dropped and told so, and the client stops); the subscribe is sent again
     * at once with it, and the connection's later subscribes use it too.
     * Whether it was sent again; false: the refusal stands.
     */
    private suspend fun refreshSubscribe(c: Conn, sub: Sub): Boolean {
        val hook = sub.refresh ?: return false
        if (sub.refreshTried) return false
        sub.refreshTried = true
        val t = ask(hook, c.token) ?: return false
        if (conn !== c || sub !in subs || sub.subscribed) return true // gone meanwhile: nothing to send
        refusal(t, sub.user)?.let {
            sub.refused(it)
            remove(sub)
            return true
        }
        c.token = t
        subscribe(c, sub)
        return true
    }

    private fun authorization(token: String): JsonObject = buildJsonObject {
        put("host", httpHost)
        put("Authorization", token)
    }

    /** Drops, telling each, the subscriptions [token] may not be used for (another user's); whether any is left. */
    private fun keepOnly(token: String): Boolean {
        for (sub in subs.toList()) {
            val r = refusal(token, sub.user) ?: continue
            sub.refused(r)
            remove(sub)
        }
        return subs.isNotEmpty()
    }

    private fun subscribe(c: Conn, sub: Sub) {
        if (sub.refusedUntil > System.currentTimeMillis()) return // its retry job subscribes it later
        // Every subscribe goes through here: never one to a channel of a user the token is not.
        refusal(c.token, sub.user)?.let {
            sub.refused(it)
            remove(sub)
            return
        }
        c.ws?.send(
            buildJsonObject {
                put("type", "subscribe")
                put("id", sub.id)
                put("channel", sub.path)
                put("authorization", authorization(c.token))
            }.toString(),
        )
    }

    private suspend fun message(c: Conn, text: String) {
        val m = try {
            Json.parseToJsonElement(text) as? JsonObject
        } catch (_: Exception) {
            null
        } ?: return // not the protocol's: ignored, like an unknown type
        if (c.acked) keepAlive(c) // any message shows the connection alive
        val type = (m["type"] as? JsonPrimitive)?.content
        val sub = (m["id"] as? JsonPrimitive)?.content?.let { id -> subs.firstOrNull { it.id == id } }
        when (type) {
            "connection_ack" -> if (!c.acked) {
                c.acked = true
                (m["connectionTimeoutMs"] as? JsonPrimitive)?.longOrNull?.takeIf { it > 0 }?.let { c.keepAliveMs = it }
                keepAlive(c)
                subs.toList().forEach { subscribe(c, it) }
            }
            "subscribe_success" -> if (sub != null && !sub.subscribed) {
                sub.subscribed = true
                sub.refreshTried = false
                failures = 0
                sub.set(LiveState.Live)
            }
            "subscribe_error" -> if (sub != null && !(isUnauthorized(m) && refreshSubscribe(c, sub))) refused(sub)
            "data" -> if (sub != null && sub.subscribed) pokes(m["event"]).forEach { sub.poke(it) }
            // A message for this subscription failed: it may have been a poke.
            "broadcast_error" -> if (sub != null && sub.subscribed) sub.poke(null)
            "error", "connection_error" -> broken()
            else -> {} // "ka", "unsubscribe_success", and anything new
        }
    }

    /**
     * A refusal lasts until the token or the handler changes, and each try
     * is a subscription and a handler run, all billed: not again before
     * REFUSED_RETRY_MS.
     */
    private fun refused(sub: Sub) {
        sub.set(LiveState.Polling(PollReason.SUBSCRIBE_REFUSED))
        val wait = maxOf(REFUSED_RETRY_MS, reconnect.delayMs(1, null))
        sub.refusedUntil = System.currentTimeMillis() + wait
        sub.retry?.cancel()
        sub.retry = scope.launch {
            delay(wait)
            cmds.trySend(Cmd.Resubscribe(sub))
        }
    }

    private fun keepAlive(c: Conn) {
        c.timer?.cancel()
        c.timer = after(c, c.keepAliveMs)
    }

    /** Breaks c if it is still the connection after ms. */
    private fun after(c: Conn, ms: Long): Job = scope.launch {
        delay(ms)
        cmds.trySend(Cmd.Broken(c))
    }

    /** The connection failed: every stream polls, and it reconnects after the backoff. */
    private fun broken() {
        disconnect()
        for (s in subs) {
            s.subscribed = false
            s.set(LiveState.Polling(PollReason.CHANNEL_UNAVAILABLE))
        }
        failures++
        val wait = reconnect.delayMs(failures, null)
        reconnectJob?.cancel()
        reconnectJob = scope.launch {
            delay(wait)
            cmds.trySend(Cmd.Connect)
        }
    }

    private fun disconnect() {
        val c = conn ?: return
        conn = null
        c.timer?.cancel()
        c.ws?.close(1000, null)
    }

    /** The socket's events, posted to the actor. */
    private inner class Events(private val c: Conn) : WebSocketListener() {
        override fun onOpen(webSocket: WebSocket, response: Response) {
            cmds.trySend(Cmd.Opened(c))
        }

        override fun onMessage(webSocket: WebSocket, text: String) {
            cmds.trySend(Cmd.Text(c, text))
        }

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            webSocket.close(1000, null)
            cmds.trySend(Cmd.Broken(c))
        }

        override fun onClosed(webSocket: WebSocket, code: Int, reason: String) {
            cmds.trySend(Cmd.Broken(c))
        }

        override fun onFailure(webSocket: WebSocket, t: Throwable, response: Response?) {
            cmds.trySend(if (response?.code == 401) Cmd.Unauthorized(c) else Cmd.Broken(c))
        }
    }

    private companion object {
        const val SUBPROTOCOL = "aws-appsync-event-ws"

        /** The keep-alive timeout when connection_ack names none: AppSync's 5 minutes. */
        const val DEFAULT_CONNECTION_TIMEOUT_MS = 300_000L

        /** The least wait before subscribing again after a refusal: 5 minutes. */
        const val REFUSED_RETRY_MS = 300_000L

        /** Whether a `subscribe_error` says the authorization was refused (`UnauthorizedException`). */
        fun isUnauthorized(m: JsonObject): Boolean = (m["errors"] as? JsonArray)?.any { e ->
            ((e as? JsonObject)?.get("errorType") as? JsonPrimitive)?.content == "UnauthorizedException"
        } == true

        /** What AppSync Events allows in a channel segment: 1 to 50 letters, digits and inner dashes. */
        val SEGMENT = Regex("^[A-Za-z0-9](?:[A-Za-z0-9-]{0,48}[A-Za-z0-9])?$")

        /**
         * The cursors of a `data` message's event: one JSON string (as the
         * stand-in and AWS's tutorial send it) or an array of them (as the
         * protocol page shows it); a null for a poke without a readable cursor.
         */
        fun pokes(event: JsonElement?): List<String?> {
            val each = if (event is JsonArray) event.toList() else listOf(event)
            return each.map { e ->
                val body = (e as? JsonPrimitive)?.takeIf { it.isString }?.let {
                    try {
                        Json.parseToJsonElement(it.content)
                    } catch (_: Exception) {
                        null
                    }
                } ?: e
                ((body as? JsonObject)?.get("cursor") as? JsonPrimitive)?.takeIf { it.isString }?.content
            }
        }
    }
}

/** A sequence cursor: "p" and 16 lowercase hex digits; two of them order as strings. */
private val SEQUENCE_CURSOR = Regex("^p[0-9a-f]{16}$")

/**
 * Whether a poke at [poked] may bring events past [reached], the cursor the
 * last pull reached. Cursors are opaque: only two sequence cursors are
 * compared, and anything else is taken for news.
 */
internal fun isAfter(poked: String?, reached: String?): Boolean =
    poked == null || reached == null || !SEQUENCE_CURSOR.matches(poked) || !SEQUENCE_CURSOR.matches(reached) || poked > reached
