package dev.syncevents

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The shared fixture clients/test-fixtures/records.json (on the test
 * classpath; the TypeScript client's records-fixture.test.ts reads the same
 * file): each case's listed events merged as a pulled page is (parsed as a
 * page's events, merged, kept in storage's encoding and read back), this
 * device's pending changes on top as [SyncClient.records] puts them, gives
 * exactly the expected list: the same records, fields, pending, createdAt,
 * updatedAt and author, in the same order, as the TypeScript client.
 */
class RecordsFixtureTest {
    @Test
    fun sameRecordsAsTheTypeScriptClient() {
        val text = javaClass.getResource("/records.json")?.readText() ?: error("records.json is not on the test classpath")
        val cases = Json.parseToJsonElement(text).jsonObject["cases"]!!.jsonArray
        assertTrue(cases.isNotEmpty())
        for (case in cases.map { it.jsonObject }) {
            val name = case["name"]!!.jsonPrimitive.content
            val collection = case["collection"]!!.jsonPrimitive.content
            val space = (case["space"] as? JsonPrimitive)?.takeIf { it !is JsonNull }?.content
            val user = case["user"]!!.jsonPrimitive.content

            val page = case["listed"]!!.jsonArray.map { parseEvent(it) }
            val merged = Merged()
            page.mapNotNull { e -> (e as? SyncEvent.Event)?.let { RecordChange.of(it.type, it.payload, it.occurredAt, it.author) } }
                .filter { it.collection == collection }
                .forEach { merged.merge(it) }
            val kept = decodeMerged(encodeMerged(merged))
            val pending = case["pending"]!!.jsonArray.map { it.toString() }
            val got = topRecords(kept, collection, pending, if (space != null) user else null)

            val expected = case["expected"]!!.jsonArray.map { r ->
                val o = r.jsonObject
                Record(
                    id = o["id"]!!.jsonPrimitive.content,
                    fields = o["fields"]!!.jsonObject,
                    pending = o["pending"]!!.jsonPrimitive.content.toBooleanStrict(),
                    createdAt = o["createdAt"]!!.jsonPrimitive.content,
                    updatedAt = o["updatedAt"]!!.jsonPrimitive.content,
                    author = (o["author"] as? JsonPrimitive)?.content,
                )
            }
            assertEquals(expected, got, name)
        }
    }
}
