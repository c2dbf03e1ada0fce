package dev.syncevents

import java.sql.Connection
import java.sql.DriverManager

/**
 * A [QueueStorage] in a SQLite file over JDBC (xerial sqlite-jdbc): the
 * queues of several users (and streams) may share one file, each apart
 * under its [user] and [stream]. Every write is one SQLite transaction, so
 * an entry and its key are on disk before anything is sent, and a process
 * killed at any point leaves each entry whole, with the key it had.
 */
public class SqliteQueueStorage(
    path: String,
    override val user: String,
    /** The stream the queue is for: "" for the user's own, else a space's id. */
    private val stream: String = "",
) : QueueStorage, AutoCloseable {
    private val conn: Connection = DriverManager.getConnection("jdbc:sqlite:$path")
    private val lock = Any()

    init {
        require(user.isNotEmpty()) { "user must not be empty" }
        conn.createStatement().use {
            it.execute("PRAGMA journal_mode=WAL")
            it.execute("PRAGMA busy_timeout=5000")
            it.execute(
                "CREATE TABLE IF NOT EXISTS sync_queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, " +
                    "user TEXT NOT NULL, stream TEXT NOT NULL, key TEXT NOT NULL UNIQUE, event_id TEXT NOT NULL, " +
                    "action TEXT NOT NULL, event TEXT NOT NULL, batch TEXT, status TEXT NOT NULL, " +
                    "error_status INTEGER, error_body TEXT)",
            )
            it.execute(
                "CREATE TABLE IF NOT EXISTS sync_values (user TEXT NOT NULL, stream TEXT NOT NULL, " +
                    "name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (user, stream, name))",
            )
        }
        conn.autoCommit = false
        conn.commit()
    }

    private fun <T> tx(block: Connection.() -> T): T = synchronized(lock) {
        try {
            val r = conn.block()
            conn.commit()
            r
        } catch (e: Exception) {
            conn.rollback()
            throw e
        }
    }

    override fun add(entries: List<QueueEntry>): Unit = tx {
        prepareStatement(
            "INSERT INTO sync_queue (user, stream, key, event_id, action, event, batch, status, error_status, error_body) " +
                "VALUES (?,?,?,?,?,?,?,?,?,?)",
        ).use { st ->
            for (e in entries) {
                st.setString(1, user)
                st.setString(2, stream)
                st.setString(3, e.key)
                st.setString(4, e.eventId)
                st.setString(5, e.action.name)
                st.setString(6, e.event)
                st.setString(7, e.batch)
                st.setString(8, e.status.name)
                if (e.errorStatus == null) st.setNull(9, java.sql.Types.INTEGER) else st.setInt(9, e.errorStatus)
                st.setString(10, e.errorBody)
                st.executeUpdate()
            }
        }
    }

    override fun list(): List<QueueEntry> = tx {
        prepareStatement(
            "SELECT key, event_id, event, action, batch, status, error_status, error_body FROM sync_queue " +
                "WHERE user = ? AND stream = ? ORDER BY seq",
        ).use { st ->
            st.setString(1, user)
            st.setString(2, stream)
            st.executeQuery().use { rs ->
                val out = ArrayList<QueueEntry>()
                while (rs.next()) {
                    // wasNull() speaks of the column read last: ask it right after error_status.
                    val errorStatus = rs.getInt(7).takeUnless { rs.wasNull() }
                    out += QueueEntry(
                        key = rs.getString(1),
                        eventId = rs.getString(2),
                        event = rs.getString(3),
                        action = EntryAction.valueOf(rs.getString(4)),
                        batch = rs.getString(5),
                        status = EntryStatus.valueOf(rs.getString(6)),
                        errorStatus = errorStatus,
                        errorBody = rs.getString(8),
                    )
                }
                out
            }
        }
    }

    override fun updateAll(entries: List<QueueEntry>): Unit = tx {
        prepareStatement(
            "UPDATE sync_queue SET batch = ?, status = ?, error_status = ?, error_body = ? " +
                "WHERE key = ? AND user = ? AND stream = ?",
        ).use { st ->
            for (e in entries) {
                st.setString(1, e.batch)
                st.setString(2, e.status.name)
                if (e.errorStatus == null) st.setNull(3, java.sql.Types.INTEGER) else st.setInt(3, e.errorStatus)
                st.setString(4, e.errorBody)
                st.setString(5, e.key)
                st.setString(6, user)
                st.setString(7, stream)
                st.executeUpdate()
            }
        }
    }

    override fun removeAll(keys: Collection<String>): Unit = tx {
        prepareStatement("DELETE FROM sync_queue WHERE key = ? AND user = ? AND stream = ?").use { st ->
            for (k in keys) {
                st.setString(1, k)
                st.setString(2, user)
                st.setString(3, stream)
                st.executeUpdate()
            }
        }
    }

    override fun getValue(name: String): String? = tx {
        prepareStatement("SELECT value FROM sync_values WHERE user = ? AND stream = ? AND name = ?").use { st ->
            st.setString(1, user)
            st.setString(2, stream)
            st.setString(3, name)
            st.executeQuery().use { rs -> if (rs.next()) rs.getString(1) else null }
        }
    }

    override fun setValue(name: String, value: String?): Unit = tx {
        val sql = if (value == null) {
            "DELETE FROM sync_values WHERE user = ? AND stream = ? AND name = ?"
        } else {
            "INSERT INTO sync_values (user, stream, name, value) VALUES (?,?,?,?) " +
                "ON CONFLICT (user, stream, name) DO UPDATE SET value = excluded.value"
        }
        prepareStatement(sql).use { st ->
            st.setString(1, user)
            st.setString(2, stream)
            st.setString(3, name)
            if (value != null) st.setString(4, value)
            st.executeUpdate()
        }
    }

    override fun clear(): Unit = tx {
        for (table in listOf("sync_queue", "sync_values")) {
            prepareStatement("DELETE FROM $table WHERE user = ? AND stream = ?").use { st ->
                st.setString(1, user)
                st.setString(2, stream)
                st.executeUpdate()
            }
        }
    }

    override fun close(): Unit = synchronized(lock) { conn.close() }
}
