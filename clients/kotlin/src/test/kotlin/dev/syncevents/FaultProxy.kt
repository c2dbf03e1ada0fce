package dev.syncevents

import java.io.ByteArrayOutputStream
import java.io.InputStream
import java.net.InetAddress
import java.net.ServerSocket
import java.net.Socket
import java.net.URI
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger
import kotlin.concurrent.thread
import kotlin.random.Random

/** The faults the proxy injects. */
enum class Fault {
    /** Forwards the request, reads the server's answer, and resets the client's connection instead (TCP RST): the server committed, the client saw a reset. */
    RESET_AFTER_FORWARDING,

    /** Forwards the request and answers 503 instead of the server's answer, as a gateway timing out on a backend that committed. */
    ANSWER_503_AFTER_FORWARDING,

    /** Answers 503 with Retry-After: 1 without forwarding. */
    ANSWER_503,

    /** Answers 429 with Retry-After: 1 without forwarding. */
    ANSWER_429,
}

/**
 * An HTTP/1.1 proxy on loopback in front of make run's server that fails as
 * a mobile network and a gateway do: one request per connection (it
 * answers with Connection: close), each drawn a fault from a seeded PRNG
 * by [rates] (the first requests of a route, "METHOD /path", may be given
 * theirs in [first]), or none, and forwarded whole.
 */
class FaultProxy(
    private val upstream: String,
    seed: Int,
    private val rates: Map<Fault, Double>,
    private val first: Map<String, List<Fault>> = emptyMap(),
) : AutoCloseable {
    private val random = Random(seed)
    private val server = ServerSocket(0, 50, InetAddress.getLoopbackAddress())
    private val received = ConcurrentHashMap<String, AtomicInteger>()

    /** How many times each fault was injected. */
    val injected: Map<Fault, AtomicInteger> = Fault.entries.associateWith { AtomicInteger() }

    /** Requests the server answered (faulted after forwarding or not). */
    val forwarded = AtomicInteger()

    /** The server's answers, by status. */
    val answered = ConcurrentHashMap<Int, AtomicInteger>()

    /** The server's answers marked Idempotent-Replayed. */
    val replayed = AtomicInteger()

    /** For each mutation received ("METHOD /path" and body), the Idempotency-Keys it came with. */
    val keysByRequest = ConcurrentHashMap<String, MutableSet<String>>()

    /** Where to send requests instead of the server. */
    val url: String = "http://127.0.0.1:${server.localPort}"

    private val acceptor = thread(isDaemon = true, name = "fault-proxy") {
        while (!server.isClosed) {
            val client = try {
                server.accept()
            } catch (_: Exception) {
                break
            }
            thread(isDaemon = true) { client.use { serve(it) } }
        }
    }

    override fun close() {
        server.close()
        acceptor.join(1000)
    }

    private fun serve(client: Socket) {
        val input = client.getInputStream()
        val head = readHead(input) ?: return
        val lines = head.split("\r\n")
        val (method, target) = lines[0].split(" ").let { it[0] to it[1] }
        val headers = lines.drop(1).filter { it.isNotEmpty() }
        val length = headers.firstOrNull { it.lowercase().startsWith("content-length:") }?.substringAfter(":")?.trim()?.toInt() ?: 0
        val body = input.readNBytes(length)
        val route = "$method ${URI(target).path}"
        headers.firstOrNull { it.lowercase().startsWith("idempotency-key:") }?.let { h ->
            keysByRequest.computeIfAbsent("$route ${String(body)}") { ConcurrentHashMap.newKeySet() } += h.substringAfter(":").trim()
        }
        val nth = received.computeIfAbsent(route) { AtomicInteger() }.incrementAndGet()
        val fault = first[route]?.getOrNull(nth - 1) ?: draw()
        fault?.let { injected.getValue(it).incrementAndGet() }
        val out = client.getOutputStream()
        when (fault) {
            Fault.ANSWER_503 -> return out.write(answer(503, "Service Unavailable"))
            Fault.ANSWER_429 -> return out.write(answer(429, "Too Many Requests"))
            else -> {}
        }
        val upstreamAnswer = forward(method, target, headers, body)
        forwarded.incrementAndGet()
        val answerHead = String(upstreamAnswer, Charsets.ISO_8859_1).substringBefore("\r\n\r\n")
        answered.computeIfAbsent(answerHead.split(" ")[1].toInt()) { AtomicInteger() }.incrementAndGet()
        if (answerHead.lowercase().contains("\r\nidempotent-replayed: true")) replayed.incrementAndGet()
        when (fault) {
            Fault.RESET_AFTER_FORWARDING -> {
                client.setSoLinger(true, 0) // close() sends RST, not FIN
                client.close()
            }
            Fault.ANSWER_503_AFTER_FORWARDING -> out.write(answer(503, "Service Unavailable"))
            else -> out.write(upstreamAnswer)
        }
    }

    @Synchronized
    private fun draw(): Fault? {
        var r = random.nextDouble()
        for ((f, rate) in rates) {
            if (r < rate) return f
            r -= rate
        }
        return null
    }

    /** Sends the request on a new connection, closed after its answer, and returns the answer's bytes. */
    private fun forward(method: String, target: String, headers: List<String>, body: ByteArray): ByteArray {
        val u = URI(upstream)
        Socket(u.host, u.port).use { s ->
            val kept = headers.filterNot { h ->
                val name = h.substringBefore(":").trim().lowercase()
                name == "connection" || name == "host" || name == "keep-alive"
            }
            val head = (listOf("$method $target HTTP/1.1", "Host: ${u.host}:${u.port}", "Connection: close") + kept)
                .joinToString("\r\n", postfix = "\r\n\r\n")
            s.getOutputStream().apply {
                write(head.toByteArray())
                write(body)
                flush()
            }
            return s.getInputStream().readAllBytes()
        }
    }

    private fun answer(status: Int, reason: String): ByteArray {
        val body = """{"message":"$reason"}"""
        return (
            "HTTP/1.1 $status $reason\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
                "Content-Length: ${body.length}\r\nConnection: close\r\n\r\n$body"
            ).toByteArray()
    }

    /** The request line and headers, up to the blank line; null if the connection ends first. */
    private fun readHead(input: InputStream): String? {
        val buf = ByteArrayOutputStream()
        var matched = 0
        val end = "\r\n\r\n"
        while (matched < 4) {
            val b = input.read()
            if (b < 0) return null
            buf.write(b)
            matched = if (b.toChar() == end[matched]) matched + 1 else if (b.toChar() == '\r') 1 else 0
        }
        return buf.toString(Charsets.ISO_8859_1).removeSuffix(end)
    }
}
