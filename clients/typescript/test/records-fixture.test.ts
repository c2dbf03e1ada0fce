import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, it } from "node:test";
import { foldRecords, listRecords, NO_RECORDS, type RecordEvent, type SyncRecord } from "../src/records.js";

/**
 * The shared fixture clients/test-fixtures/records.json (the Kotlin
 * client's RecordsFixtureTest reads the same file): each case's listed
 * events folded as a pulled page is, this device's pending changes on top
 * as the client folds them (pending; in a space authored by the user),
 * give exactly the expected list, in its order.
 */

interface Case {
  name: string;
  space: string | null;
  user: string;
  collection: string;
  listed: { id: string; type: string; occurredAt: string; payload: unknown; author?: string }[];
  pending: { id: string; type: string; occurredAt: string; payload: unknown }[];
  expected: SyncRecord[];
}

// The test runs from build/test/: the repository's root is four levels up.
const root = resolve(import.meta.dirname, "../../../..");
const fixture = JSON.parse(readFileSync(resolve(root, "clients/test-fixtures/records.json"), "utf8")) as { cases: Case[] };

describe("the records fixture shared with the Kotlin client", () => {
  it("has cases", () => assert.ok(fixture.cases.length > 0));
  for (const c of fixture.cases) {
    it(c.name, () => {
      const listed = foldRecords(
        NO_RECORDS,
        c.listed.map(
          (e): RecordEvent => ({
            type: e.type,
            payload: e.payload,
            occurredAt: e.occurredAt,
            ...(e.author !== undefined && { author: e.author }),
          }),
        ),
      );
      // Kept as JSON (memory or IndexedDB alike) and read back.
      const kept = JSON.parse(JSON.stringify(listed)) as typeof listed;
      const author = c.space === null ? undefined : c.user;
      const topped = foldRecords(
        kept,
        c.pending.map(
          (e): RecordEvent => ({
            type: e.type,
            payload: e.payload,
            occurredAt: e.occurredAt,
            ...(author !== undefined && { author }),
            pending: true,
          }),
        ),
      );
      assert.deepEqual(listRecords(topped.live[c.collection]), c.expected);
    });
  }
});
