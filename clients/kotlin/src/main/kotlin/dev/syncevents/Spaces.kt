package dev.syncevents

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import okhttp3.HttpUrl
import okhttp3.HttpUrl.Companion.toHttpUrl
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody
import java.util.UUID

/** A member's role in a space: every member reads; a writer writes events too; an owner also adds and removes members. */
public enum class Role {
    /** Reads, writes, adds and removes members. */
    OWNER,

    /** Reads and writes events. */
    WRITER,

    /** Reads events. */
    READER,
    ;

    internal val wire: String get() = name.lowercase()
}

/** A space the caller is a member of, and the caller's role in it. */
public data class Space(val id: String, val name: String, val role: Role)

/** A member of a space and their role. */
public data class Member(val space: String, val member: String, val role: Role)

/** A member removed from a space, or who left it. */
public data class RemovedMember(val space: String, val member: String)

/** A space request refused by the server: nothing was done. [code] is the API's error code, if the body is the API's. */
public class SpaceRefused(public val status: Int, public val code: String?, public val body: String) :
    Exception("space request answered $status${code?.let { " $it" } ?: ""}")

/**
 * A space mutation given up before an answer ([reason], the last failure
 * [error]): it may have been carried out all the same, its answer lost. Its
 * Idempotency-Key stays held: the same call again (same arguments, same
 * storage, in this process or the next) is sent under it, so that the
 * server answers what it did instead of doing it twice.
 */
public class SpaceStopped(public val reason: StopReason, public val error: String?) :
    Exception("space request stopped: $reason${error?.let { " ($it)" } ?: ""}; it may have been carried out")

/**
 * The space operations of [storage]'s user, each mutation exactly once: its
 * Idempotency-Key (and a create's space id) is kept in [storage] before
 * the first send and used for every attempt until an answer, so a call
 * made again after a lost answer, a crash or a [SpaceStopped] (with the
 * same arguments) reuses it. One operation at a time.
 */
public class Spaces(
    /** The user's own stream's storage: the keys are kept among its values. */
    private val storage: QueueStorage,
    /** Where the API is, e.g. https://api.example.com. */
    baseUrl: String,
    /** The bearer token for the next attempt; its `sub` must be [QueueStorage.user] or nothing is sent. */
    private val token: suspend () -> String,
    private val http: OkHttpClient = OkHttpClient(),
    /** How an attempt with no answer, a 429 or a 5xx is tried again; a request given up throws [SpaceStopped]. */
    private val retry: RetryPolicy = RetryPolicy(),
    /** Asked for a new token when the server answers 401, once a request ([TokenRefresh]); null: a 401 throws [SpaceRefused]. */
    private val refreshToken: TokenRefresh? = null,
) {
    private val base: HttpUrl = baseUrl.toHttpUrl()
    private val mutex = Mutex()

    /** Creates a space named [name], the user its owner; a refusal throws [SpaceRefused], a request given up [SpaceStopped]. */
    public suspend fun create(name: String): Space {
        require(name.isNotEmpty()) { "name must not be empty" }
        val o = mutate("create $name", "POST", url(), 201) { id -> buildJsonObject { put("id", id); put("name", name) } }
        return space(o)
    }

    /** The spaces the user is a member of, with their role in each, sorted by id. */
    public suspend fun list(): List<Space> {
        val outcome = withContext(Dispatchers.IO) {
            sendUntilAnswered(
                http, retry, token, storage.user,
                { t -> Request.Builder().url(url()).header("Authorization", "Bearer $t").build() },
                refresh = refreshToken,
            )
        }
        val a = answered(outcome, 200)
        return ((parse(a.body)["spaces"] as? JsonArray) ?: throw unexpected(a)).map { space(it as? JsonObject ?: throw unexpected(a)) }
    }

    /** Adds [member] (a user's `sub`) to [space] with [role]: an owner's call (403 SPACE_ROLE_FORBIDS for anyone else). */
    public suspend fun addMember(space: String, member: String, role: Role): Member {
        val o = mutate("add $space $member ${role.wire}", "POST", url(space, "members"), 201) {
            buildJsonObject { put("member", member); put("role", role.wire) }
        }
        return Member(str(o, "space"), str(o, "member"), role(o))
    }

    /** Removes [member] from [space]: an owner removes anyone; the last owner may not go (409 SPACE_LAST_OWNER). */
    public suspend fun removeMember(space: String, member: String): RemovedMember {
        val o = mutate("remove $space $member", "DELETE", url(space, "members", member), 200) { null }
        return RemovedMember(str(o, "space"), str(o, "member"))
    }

    /** The user leaves [space] (a removal of their own `sub`). Drop its stream's client and storage after (SyncClient.signOut). */
    public suspend fun leave(space: String): RemovedMember = removeMember(space, storage.user)

    /**
     * Sends one mutation under the key held for [op] (made and kept before
     * the first send if none is), until answered; the key is let go on an
     * answer, kept when given up. [body] is given the create's space id.
     */
    private suspend fun mutate(op: String, method: String, url: HttpUrl, expected: Int, body: (id: String) -> JsonObject?): JsonObject =
        mutex.withLock {
            withContext(Dispatchers.IO) {
                val name = "space-op $op"
                val held = storage.getValue(name)?.let { parse(it) }
                val key = (held?.get("key") as? JsonPrimitive)?.content ?: UUID.randomUUID().toString()
                val id = (held?.get("id") as? JsonPrimitive)?.content ?: UUID.randomUUID().toString()
                if (held == null) storage.setValue(name, buildJsonObject { put("key", key); put("id", id) }.toString())
                val json = body(id)?.toString()
                val outcome = sendUntilAnswered(http, retry, token, storage.user, { t ->
                    Request.Builder().url(url)
                        .header("Authorization", "Bearer $t")
                        .header("Idempotency-Key", key)
                        .method(method, json?.toRequestBody(JSON_TYPE))
                        .build()
                }, refresh = refreshToken)
                // Given up, or an answer not the contract's: it may have been done; the key stays for the next call.
                if (outcome is Outcome.Answered && outcome.status in 400..499) storage.setValue(name, null)
                val a = answered(outcome, expected)
                storage.setValue(name, null)
                parse(a.body)
            }
        }

    private fun answered(outcome: Outcome, expected: Int): Outcome.Answered {
        when (outcome) {
            is Outcome.Stopped -> throw SpaceStopped(outcome.reason, outcome.error)
            is Outcome.Answered -> {
                if (outcome.status in 400..499) throw SpaceRefused(outcome.status, outcome.code, outcome.body)
                if (outcome.status != expected) throw unexpected(outcome)
                return outcome
            }
        }
    }

    private fun unexpected(a: Outcome.Answered) =
        SpaceStopped(StopReason.UNEXPECTED_ANSWER, "status ${a.status}: not the contract's answer")

    private fun url(vararg segments: String): HttpUrl = base.newBuilder().addPathSegments("api/v1/spaces").apply {
        segments.forEach { addPathSegment(it) }
    }.build()

    private fun parse(text: String): JsonObject = try {
        Json.parseToJsonElement(text) as? JsonObject
    } catch (_: Exception) {
        null
    } ?: throw SpaceStopped(StopReason.UNEXPECTED_ANSWER, "not the contract's answer: not a JSON object")

    private fun str(o: JsonObject, k: String): String = (o[k] as? JsonPrimitive)?.takeIf { it.isString }?.content
        ?: throw SpaceStopped(StopReason.UNEXPECTED_ANSWER, "not the contract's answer: no $k")

    private fun role(o: JsonObject): Role = Role.entries.firstOrNull { it.wire == str(o, "role") }
        ?: throw SpaceStopped(StopReason.UNEXPECTED_ANSWER, "not the contract's answer: an unknown role")

    private fun space(o: JsonObject) = Space(str(o, "id"), str(o, "name"), role(o))
}
