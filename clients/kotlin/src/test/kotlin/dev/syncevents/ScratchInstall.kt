package dev.syncevents

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.nio.file.Path
import java.util.concurrent.TimeUnit

/**
 * scripts/scratch-install.sh: the library installed into the local Maven
 * repository (mvn install of a copy, offline), then a scratch Maven
 * project depending on it compiled and run, using the record model. Not
 * run by `mvn verify` (no *Test name; two Maven builds with their Kotlin
 * compilations take minutes): `mvn -q test -Dtest=ScratchInstall
 * -Dmaven.repo.local=…`, the repository the build uses.
 */
class ScratchInstall {
    @TempDir
    lateinit var dir: Path

    @Test
    fun `the jar installs and a scratch project uses its records`() {
        val pb = ProcessBuilder("sh", "scripts/scratch-install.sh", dir.toString()).redirectErrorStream(true)
        System.getProperty("maven.repo.local")?.let { pb.environment()["MAVEN_REPO_LOCAL"] = it }
        val started = System.nanoTime()
        val p = pb.start()
        val out = p.inputStream.bufferedReader().readText()
        assertTrue(p.waitFor(15, TimeUnit.MINUTES))
        println(out)
        println("scratch install, build and run: ${(System.nanoTime() - started) / 1_000_000} ms")
        assertEquals(0, p.exitValue(), out)
        assertTrue(out.contains("records: [Record(id=t1, fields={\"title\":\"Milk\",\"done\":true}, pending=true, createdAt="), out)
        assertTrue(File(dir.toFile(), "app/target/classes/MainKt.class").exists())
    }
}
