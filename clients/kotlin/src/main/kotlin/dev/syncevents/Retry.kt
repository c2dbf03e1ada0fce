package dev.syncevents

import java.time.Duration
import java.time.ZonedDateTime
import java.time.format.DateTimeFormatter
import kotlin.random.Random

/**
 * How a request is tried again after no answer, a 429 or a 5xx: full jitter
 * (a uniform wait up to an exponential cap from [baseDelayMs] to
 * [maxDelayMs]), a server's Retry-After taken as a floor but never past
 * [maxDelayMs], at most [maxAttempts] attempts (unbounded by default), and
 * no wait begun that would end more than [maxElapsedMs] after the first
 * attempt (20 s by default): a request with no server to answer it is
 * given up ([StopReason.RETRIES_EXHAUSTED], or a pull's IOException) after
 * about that long, plus the last attempt's own time (OkHttp's timeouts).
 * A write given up stays queued under its key, and the next sync sends it
 * again. [LiveChannel]'s reconnection uses only the delays: it never gives up.
 */
public data class RetryPolicy(
    val baseDelayMs: Long = 500,
    val maxDelayMs: Long = 30_000,
    val maxAttempts: Int = Int.MAX_VALUE,
    /** The time budget of one request's attempts and waits; [Long.MAX_VALUE] for none. */
    val maxElapsedMs: Long = 20_000,
) {
    init {
        require(baseDelayMs >= 0 && maxDelayMs >= 0) { "delays must be at least 0" }
        require(maxAttempts >= 1) { "maxAttempts must be at least 1" }
        require(maxElapsedMs >= 0) { "maxElapsedMs must be at least 0" }
    }

    /** Whether a wait of [waitMs] after attempts begun at [startedNs] (System.nanoTime) would end past [maxElapsedMs]. */
    internal fun givesUp(startedNs: Long, waitMs: Long, nowNs: Long = System.nanoTime()): Boolean {
        val elapsedMs = (nowNs - startedNs) / 1_000_000
        return maxElapsedMs != Long.MAX_VALUE && elapsedMs + waitMs >= maxElapsedMs
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
