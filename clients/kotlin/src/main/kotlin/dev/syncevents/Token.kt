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
