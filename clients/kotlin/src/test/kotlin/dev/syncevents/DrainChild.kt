package dev.syncevents

import kotlinx.coroutines.runBlocking

/**
 * A device's process for the killed-mid-drain test: drains the queue in the
 * SQLite file args[0] of user args[1] to the server args[2], in batches of
 * args[3], until killed.
 */
object DrainChild {
    @JvmStatic
    fun main(args: Array<String>) = runBlocking {
        val (path, user, url, batch) = args
        val s = SqliteQueueStorage(path, user)
        println("draining")
        System.out.flush()
        val r = SyncQueue(s, url, { LocalServer.token(user) }, maxBatchEvents = batch.toInt()).drain()
        println("done $r")
    }
}
