import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { pullEvents } from "../src/pull.js";
import { deleteEvent, SpaceError } from "../src/spaces.js";
import type { ListedEvent } from "../src/types.js";
import { uuidv4 } from "../src/uuid.js";
import { applyEvents } from "./helpers.js";
import { asUser, localToken, startService } from "./server.js";

let service: { url: string; stop: () => void };
before(async () => {
  service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
});
after(() => service?.stop());

it("deletedId: a device applying tombstones and notices drops a deleted event, from a cursor before it or after it", async () => {
  const token = localToken(`tomb-${crypto.randomUUID()}`);
  const call = asUser(service.url, token);
  const ids = [uuidv4(), uuidv4(), uuidv4()];
  for (const [i, id] of ids.entries()) {
    const r = await call("POST", "/api/v1/sync/events", {
      id,
      type: "note.created",
      occurredAt: "2026-12-04T10:00:00Z",
      payload: { text: `n${i}` },
    });
    assert.equal(r.status, 201);
  }
  const common = { baseUrl: service.url, getToken: () => token };
  // A device that pulled all three before the deletion, and one that pulls only after.
  const early = new Map<string, unknown>();
  const first = pullEvents(common);
  for await (const page of first.pages()) {
    applyEvents(early, page.events);
  }
  assert.equal(early.size, 3);

  const key = uuidv4();
  const victim = ids[1] as string;
  assert.deepEqual(await deleteEvent(common, victim, { key }), { id: victim, deleted: true });
  // Its retry (an answer lost) answers the same, and deletes nothing more.
  assert.deepEqual(await deleteEvent(common, victim, { key }), { id: victim, deleted: true });
  await assert.rejects(
    deleteEvent(common, victim),
    (err: unknown) => err instanceof SpaceError && err.status === 409 && err.code === "EVENT_ALREADY_DELETED",
  );

  for await (const page of pullEvents({ ...common, cursor: first.cursor }).pages()) {
    applyEvents(early, page.events); // the notice
  }
  const late = new Map<string, unknown>();
  const seen: ListedEvent[] = [];
  for await (const page of pullEvents(common).pages()) {
    seen.push(...page.events);
    applyEvents(late, page.events); // the tombstone, then the notice
  }
  for (const held of [early, late]) {
    assert.deepEqual([...held.keys()].sort(), [ids[0], ids[2]].sort());
  }
  const tomb = seen.find((e) => e.id === ids[1]);
  assert.deepEqual(tomb?.payload, {}, "the tombstone's payload is erased");
  assert.equal(tomb?.deleted, true);
  assert.equal(seen.at(-1)?.type, "event.deleted");
});
