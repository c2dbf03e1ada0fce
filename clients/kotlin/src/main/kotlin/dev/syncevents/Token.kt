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
