import assert from "node:assert/strict";
import { it } from "node:test";
import type { QueueEntry } from "../src/types.js";
import { EventWriter } from "../src/writer.js";
import { memory, UUID_V4 } from "./helpers.js";

it("EventWriter gives each event a fresh UUID v4 id and key, and stores it before returning", async () => {
  const stored: QueueEntry[] = [];
  const storage = memory();
  const add = storage.add.bind(storage);
  storage.add = async (e) => {
    stored.push(structuredClone(e));
    await add(e);
  };
  const writer = new EventWriter(storage);
  const before = Date.now();
  const a = await writer.write("note.created", { title: "Groceries" });
  const b = await writer.write("note.deleted", { noteId: 1 }, "2026-12-03T09:00:00.5+01:00");
  for (const e of [a, b]) {
    assert.match(e.key, UUID_V4);
    assert.match(e.event.id, UUID_V4);
    assert.equal(e.status, "pending");
  }
  assert.equal(new Set([a.key, a.event.id, b.key, b.event.id]).size, 4);
  assert.deepEqual(stored, [a, b], "each entry was in storage, as returned, when write resolved");
  assert.ok(Date.parse(a.event.occurredAt) >= before && Date.parse(a.event.occurredAt) <= Date.now());
  assert.equal(b.event.occurredAt, "2026-12-03T09:00:00.5+01:00", "a given occurredAt is sent as given");
  assert.deepEqual(await storage.list(), [a, b]);
});
