package dev.syncevents

import java.io.File
import java.net.ServerSocket
import java.net.Socket
import java.util.Base64
import java.util.concurrent.TimeUnit

/**
 * The service as `make run` serves it (the real handler on the embedded
 * DynamoDB), built once from this repository into target/ and started on a
 * free loopback port.
 */
object LocalServer {
    private val root: File = File("../..").canonicalFile
    private val bin: File by lazy {
        val out = File("target/sync-events-local").absoluteFile
        val p = ProcessBuilder("go", "build", "-o", out.path, "./cmd/sync-events-local")
            .directory(root).inheritIO().start()
        check(p.waitFor() == 0) { "go build of cmd/sync-events-local failed" }
        out
    }

    /** A running server; stop it with [Running.close]. */
    class Running(val url: String, private val process: Process) : AutoCloseable {
        /** Its live channel's WebSocket endpoint, the Event API stand-in. */
        val realtimeUrl: String get() = url.replace("http://", "ws://") + "/event/realtime"

        /** The host the live channel's authorization names. */
        val httpHost: String get() = url.removePrefix("http://")

        override fun close() {
            process.destroy()
            process.waitFor(5, TimeUnit.SECONDS)
        }
    }

    val shared: Running by lazy { start().also { s -> Runtime.getRuntime().addShutdownHook(Thread { s.close() }) } }

    fun start(env: Map<String, String> = emptyMap()): Running {
        val port = ServerSocket(0).use { it.localPort }
        val pb = ProcessBuilder(bin.path).redirectErrorStream(true)
            .redirectOutput(File("target/sync-events-local-$port.log"))
        pb.environment()["ADDR"] = "127.0.0.1:$port"
        pb.environment().putAll(env)
        val p = pb.start()
        repeat(600) {
            if (!p.isAlive) error("the service exited with ${p.exitValue()}; see target/sync-events-local-$port.log")
            try {
                Socket("127.0.0.1", port).close()
                return Running("http://127.0.0.1:$port", p)
            } catch (_: Exception) {
                Thread.sleep(100)
            }
        }
        p.destroy()
        error("the service did not start on port $port")
    }

    /** A bearer token the local authorizer stand-in accepts: claims only, unsigned. */
    fun token(sub: String): String =
        "x." + Base64.getUrlEncoder().withoutPadding().encodeToString("""{"sub":"$sub"}""".toByteArray()) + ".x"
}
