import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { QueueEntry } from "../src/types.js";
import { answer, error, fakeFetch, memory, networkError, queueAt } from "./helpers.js";

/** A queued delete of the event id, as SyncClient.delete makes it. */
const del = (n: number, id: string): QueueEntry => ({
  key: `d0000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
  event: { id, type: "event.deleted", occurredAt: "2026-12-03T10:00:00Z", payload: { id } },
  status: "pending",
  action: "delete",
});
const post = (n: number): QueueEntry => ({
  key: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
  event: { id: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`, type: "t", occurredAt: "2026-12-03T10:00:00Z", payload: { n } },
  status: "pending",
});

describe("SyncQueue: a queued delete", () => {
  it("goes alone, in its place in the order, as DELETE without a body, under its own key on every retry", async () => {
    const storage = memory();
    const target = post(2).event.id;
    for (const e of [post(1), post(2), del(3, target), post(4)]) {
      await storage.add(e);
    }
    const api = fakeFetch((req, n) => {
      if (req.method === "DELETE" && n === 2) {
        return networkError();
      }
      if (req.method === "DELETE") {
        return answer(200, { id: target, deleted: true });
      }
      return answer(201, {});
    });
    const report = await queueAt(storage, api.fetch, { space: "s1" }).drain();
    assert.deepEqual(
      api.seen.map((s) => [s.method, s.key, s.body]),
      [
        ["POST", api.seen[0]?.key, api.seen[0]?.body], // the batch of 1 and 2
        ["DELETE", del(3, target).key, ""],
        ["DELETE", del(3, target).key, ""],
        ["POST", post(4).key, JSON.stringify(post(4).event)],
      ],
    );
    assert.equal(JSON.parse(api.seen[0]?.body ?? "{}").events.length, 2, "the posts before it went as a batch");
    assert.equal(report.sent, 4);
    assert.deepEqual(await storage.list(), []);
  });

  it("settles as done on 409 EVENT_ALREADY_DELETED, and keeps a 403 SPACE_ROLE_FORBIDS as rejected while the rest go on", async () => {
    const storage = memory();
    await storage.add(del(1, "a"));
    await storage.add(del(2, "b"));
    await storage.add(post(3));
    const api = fakeFetch((req) =>
      req.url.endsWith("/a")
        ? error(409, "EVENT_ALREADY_DELETED")
        : req.url.endsWith("/b")
          ? error(403, "SPACE_ROLE_FORBIDS")
          : answer(201, {}),
    );
    const report = await queueAt(storage, api.fetch, { space: "s1" }).drain();
    assert.equal(report.stopped, undefined);
    assert.deepEqual([report.sent, report.replayed, report.rejected], [1, 1, 1]);
    const left = await storage.list();
    assert.deepEqual(
      left.map((e) => [e.key, e.status, e.error?.status]),
      [[del(2, "b").key, "rejected", 403]],
    );
    assert.ok(api.seen[0]?.key === del(1, "a").key && api.seen[0].method === "DELETE");
  });
});
