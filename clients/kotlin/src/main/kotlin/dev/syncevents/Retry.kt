package dev.syncevents

import java.time.Duration
import java.time.ZonedDateTime
import java.time.format.DateTimeFormatter
import kotlin.random.Random

/**
 * How a request is tried again after no answer, a 429 or a 5xx: full jitter
 * (a uniform wait up to an exponential cap from [baseDelayMs] to
 * [maxDelayMs]), a server's Retry-After taken as a floor but never past
 * [maxDelayMs], and at most [maxAttempts] attempts (unbounded by default).
 */
public data class RetryPolicy(
    val baseDelayMs: Long = 500,
    val maxDelayMs: Long = 30_000,
    val maxAttempts: Int = Int.MAX_VALUE,
) {
    init {
        require(baseDelayMs >= 0 && maxDelayMs >= 0) { "delays must be at least 0" }
        require(maxAttempts >= 1) { "maxAttempts must be at least 1" }
    }

    /** The wait before attempt number [attempt] + 1, given the server's Retry-After (ms) if any. */
    internal fun delayMs(attempt: Int, retryAfterMs: Long?, random: Random = Random.Default): Long {
        val cap = minOf(maxDelayMs, baseDelayMs * (1L shl minOf(attempt - 1, 30)))
        val jittered = (random.nextDouble() * cap).toLong()
        return if (retryAfterMs == null) jittered else minOf(maxDelayMs, maxOf(retryAfterMs, jittered))
    }
}

/** Retry-After in ms from now (RFC 9110, 10.2.3): delay-seconds or an HTTP-date; null if neither. */
internal fun retryAfterMs(header: String?, nowMs: Long = System.currentTimeMillis()): Long? {
    val v = header?.trim() ?: return null
    if (v.matches(Regex("^[0-9]+$"))) return (v.toBigInteger().min(Long.MAX_VALUE.toBigInteger() / 1000.toBigInteger())).toLong() * 1000
    return try {
        val at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli()
        maxOf(0, Duration.ofMillis(at - nowMs).toMillis())
    } catch (_: Exception) {
        null
    }
}
