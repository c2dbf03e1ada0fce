package dev.syncevents

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.util.Base64

/**
 * The `sub` claim of a JWT, read without verifying it: the server verifies
 * the token and takes the user from this very claim. Null when the token is
 * no JWT whose payload is a JSON object with a non-empty string `sub`.
 */
public fun tokenSubject(token: String): String? {
    val parts = token.split(".")
    if (parts.size < 2 || !parts[1].matches(Regex("^[A-Za-z0-9_-]+=*$"))) return null
    return try {
        val bytes = Base64.getUrlDecoder().decode(parts[1].trimEnd('='))
        val decoder = Charsets.UTF_8.newDecoder()
        val text = decoder.decode(java.nio.ByteBuffer.wrap(bytes)).toString()
        val obj = Json.parseToJsonElement(text) as? JsonObject ?: return null
        val sub = obj["sub"] as? JsonPrimitive ?: return null
        if (!sub.isString || sub.content.isEmpty()) null else sub.content
    } catch (_: Exception) {
        null
    }
}

/** A token refused before it was used: [reason] is [StopReason.WRONG_USER] or [StopReason.UNREADABLE_TOKEN]. */
internal class TokenRefused(val reason: StopReason, message: String) : Exception(message)

/**
 * Why [token] may not be used for [user]'s storage, or null if it may:
 * its `sub` must be [user]. A request with another user's token would read
 * that user's stream into this user's storage, or write into their account.
 */
internal fun refusal(token: String, user: String): TokenRefused? {
    val sub = tokenSubject(token) ?: return TokenRefused(StopReason.UNREADABLE_TOKEN, "the token has no readable sub")
    if (sub != user) return TokenRefused(StopReason.WRONG_USER, "the token is another user's than the storage's")
    return null
}

/**
 * The one place every request (a pull, a write, a space operation, the
 * live channel's connection) obtains its token: asked for afresh, and
 * returned only if it is [user]'s; otherwise [TokenRefused] is thrown and
 * nothing is to be sent with it.
 */
internal suspend fun tokenFor(user: String, token: suspend () -> String): String {
    val t = token()
    refusal(t, user)?.let { throw it }
    return t
}

/**
 * The app's token refresh, asked when the server answers 401 (or the live
 * channel's connection or subscription is refused as unauthorized), in the
 * manner of OkHttp's `Authenticator`: given the token the server refused,
 * it returns a new one (a refresh-token exchange, say), or null to give up
 * (the user must sign in again). The client asks it once per request: the
 * request is sent again at once with the new token, under the same
 * Idempotency-Key; a second 401, or null, stops the client with
 * [StopReason.UNAUTHORIZED]. The new token must be the storage's user's
 * like any other: another user's stops the client with
 * [StopReason.WRONG_USER] before it is sent. Keep the new token where the
 * client's `token` reads it: the client uses it for that one request
 * only, and asks `token` afresh for the next. Called on the client's
 * coroutines (an IO thread); concurrent requests refused at once may each
 * call it.
 */
public typealias TokenRefresh = suspend (rejected: String) -> String?

/** The token [refresh] gives for [rejected] if it is [user]'s; null if it gave none; [TokenRefused] if it is not the user's. */
internal suspend fun refreshed(user: String, rejected: String, refresh: TokenRefresh): String? {
    val t = refresh(rejected) ?: return null
    refusal(t, user)?.let { throw it }
    return t
}
