package dev.syncevents

import kotlinx.coroutines.delay
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Request
import java.io.IOException

/** How a mutation's sending ended: an answer (not a 429 or 5xx), or given up before one. */
internal sealed interface Outcome {
    data class Answered(val status: Int, val body: String, val code: String?, val replayed: Boolean) : Outcome
    data class Stopped(val reason: StopReason, val error: String?) : Outcome
}

internal val JSON_TYPE = "application/json".toMediaType()

/**
 * Sends a mutation, built by [request] with each attempt's token (and the
 * caller's fixed Idempotency-Key), until answered: no answer, a 429 or a
 * 5xx is tried again after [retry]'s wait, within its attempts and time
 * budget. Each attempt asks for the token
 * afresh from [tokenFor], which checks its `sub` is [user] before
 * sending: a mutation sent with another user's token would be carried out
 * in that user's account.
 * A 401 is answered once through [refresh] (see [refreshed]): the request
 * is sent again at once, under the same key, with the token it gives, and
 * that token is kept for the request's later attempts.
 * [attempted] is called before each send, [retrying] before each wait.
 */
internal suspend fun sendUntilAnswered(
    http: OkHttpClient,
    retry: RetryPolicy,
    token: suspend () -> String,
    user: String,
    request: (token: String) -> Request,
    attempted: () -> Unit = {},
    retrying: () -> Unit = {},
    refresh: TokenRefresh? = null,
): Outcome {
    var attempt = 0
    var last: String? = null
    val started = System.nanoTime()
    // The token the refresh hook gave after a 401: this request's later attempts use it.
    var fresh: String? = null
    var triedRefresh = false
    while (true) {
        attempt++
        if (attempt > retry.maxAttempts) return Outcome.Stopped(StopReason.RETRIES_EXHAUSTED, last)
        val t = fresh ?: try {
            tokenFor(user, token)
        } catch (e: TokenRefused) {
            return Outcome.Stopped(e.reason, e.message)
        }
        attempted()
        var retryAfter: Long? = null
        var again = false
        try {
            http.newCall(request(t)).execute().use { resp ->
                val text = resp.body.string()
                if (resp.code == 429 || resp.code >= 500) {
                    retryAfter = retryAfterMs(resp.header("Retry-After"))
                    last = "status ${resp.code}"
                } else if (resp.code == 401 && refresh != null && !triedRefresh) {
                    again = true
                } else {
                    return Outcome.Answered(resp.code, text, errorCode(text), resp.header("Idempotent-Replayed") == "true")
                }
            }
        } catch (e: IOException) {
            last = "network: ${e.javaClass.simpleName}"
        }
        if (again) {
            triedRefresh = true
            fresh = try {
                refreshed(user, t, refresh!!)
            } catch (e: TokenRefused) {
                return Outcome.Stopped(e.reason, e.message)
            } ?: return Outcome.Answered(401, "", null, false)
            // Sent again at once: the 401 was no failure of the network or the server.
            attempt--
            continue
        }
        if (attempt >= retry.maxAttempts) return Outcome.Stopped(StopReason.RETRIES_EXHAUSTED, last)
        val wait = retry.delayMs(attempt, retryAfter)
        if (retry.givesUp(started, wait)) return Outcome.Stopped(StopReason.RETRIES_EXHAUSTED, "$last; gave up after ${retry.maxElapsedMs} ms")
        retrying()
        delay(wait)
    }
}

/** The API's error code in an error body; null if it is none. */
internal fun errorCode(body: String): String? = try {
    ((Json.parseToJsonElement(body) as? JsonObject)?.get("error") as? JsonPrimitive)?.takeIf { it.isString }?.content
} catch (_: Exception) {
    null
}
