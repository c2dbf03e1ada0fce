import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SyncQueue } from "../src/queue.js";
import type { NewEvent } from "../src/types.js";
import { EventWriter } from "../src/writer.js";
import { answer, fakeFetch, hangUntilAborted, instantRetry, memory, queueOf, TOKEN } from "./helpers.js";

const BASE = "https://api.example.com";

/** A server of the batch endpoint that stores what it is sent and answers as the API does. */
function batchServer(refuse: (events: NewEvent[], n: number) => Response | undefined = () => undefined) {
  const stored: string[] = [];
  const answers = new Map<string, string>();
  const api = fakeFetch(async (req, n) => {
    const key = req.headers.get("idempotency-key") ?? "";
    const body = await req.text();
    const single = !new URL(req.url).pathname.endsWith("/batch");
    const events: NewEvent[] = single ? [JSON.parse(body)] : JSON.parse(body).events;
    const refused = refuse(events, n);
    if (refused) {
      return refused;
    }
    const replay = answers.get(key);
    if (replay !== undefined) {
      assert.equal(replay, body, "a key is only ever sent with one body");
      return answer(201, {}, { "idempotent-replayed": "true" });
    }
    answers.set(key, body);
    stored.push(...events.map((e) => e.id));
    return answer(201, single ? {} : { events: [] });
  });
  return { api, stored };
}

describe("SyncQueue.drain, in batches", () => {
  it("sends the queue in batches of at most 98, each stamped with its key before it is sent, in order", async () => {
    const { storage, entries } = await queueOf(250);
    const stampedAtSend: boolean[] = [];
    const { api, stored } = batchServer();
    const fetch: typeof globalThis.fetch = async (input, init) => {
      // The queue fetches a Request; copying it would take its body.
      const key = (input as Request).headers.get("idempotency-key");
      const queued = await storage.list();
      stampedAtSend.push(queued.filter((e) => e.batch === key).length > 0);
      return api.fetch(input, init);
    };
    const report = await new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch, retry: instantRetry().retry }).drain();
    assert.deepEqual(report, { sent: 250, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
    assert.deepEqual(
      api.seen.map((s) => (JSON.parse(s.body).events as unknown[]).length),
      [98, 98, 54],
    );
    assert.deepEqual(
      stored,
      entries.map((e) => e.event.id),
      "every event once, in the order written",
    );
    assert.equal(new Set(api.seen.map((s) => s.key)).size, 3, "a key of its own for each batch");
    assert.ok(!api.seen.some((s) => entries.some((e) => e.key === s.key)), "no entry's own key is used for a batch");
    assert.deepEqual(stampedAtSend, [true, true, true], "each batch was kept with its key before it was sent");
    assert.deepEqual(await storage.list(), []);
  });

  it("bounds a batch by its bytes too", async () => {
    const { storage } = await queueOf(10, (i) => ({ i, s: "x".repeat(1000) }));
    const { api } = batchServer();
    await new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch, batch: { maxBytes: 3500 } }).drain();
    const sizes = api.seen.map((s) => s.body.length);
    assert.ok(
      sizes.every((n) => n <= 3500),
      `bodies of ${sizes}`,
    );
    assert.equal(api.seen.length, 4, "10 events of about 1 KB, 3 to a batch (the last alone)");
  });

  it("sends an offline burst as one batch: a drain after each write, offline, stamps nothing", async () => {
    // As the client does: each write starts a drain. Before, each of those
    // drains stamped a batch of what was queued, and the burst went as a
    // batch of the first two and the third alone.
    const storage = memory();
    const writer = new EventWriter(storage);
    const { api, stored } = batchServer();
    let online = false;
    const queue = new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch, online: () => online });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await writer.write("note.created", { i })).event.id);
      assert.equal((await queue.drain()).stopped, "offline");
    }
    assert.deepEqual(
      (await storage.list()).map((e) => e.batch),
      [undefined, undefined, undefined],
      "no batch formed while offline",
    );
    online = true;
    assert.deepEqual(await queue.drain(), { sent: 3, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
    assert.equal(api.seen.length, 1, "one request for the burst");
    assert.equal((JSON.parse(api.seen[0]?.body ?? "{}").events as unknown[]).length, 3);
    assert.deepEqual(stored, ids);
  });

  it("sends a queue of one entry alone, under the entry's own key", async () => {
    const { storage, entries } = await queueOf(1);
    const { api } = batchServer();
    await new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch }).drain();
    assert.equal(api.seen.length, 1);
    assert.equal(api.seen[0]?.key, entries[0]?.key);
    assert.ok(!api.seen[0]?.body.startsWith('{"events"'));
  });

  it("after the app is closed mid-batch, a new queue sends the very same batch under the same key", async () => {
    const { storage } = await queueOf(5);
    const closeApp = new AbortController();
    const hung = fakeFetch((_req, _n, signal) => {
      setTimeout(() => closeApp.abort(), 5); // the app closes while the request is out
      return hangUntilAborted(signal);
    });
    const first = await new SyncQueue({
      storage,
      baseUrl: BASE,
      getToken: () => TOKEN,
      fetch: hung.fetch,
      retry: instantRetry().retry,
    }).drain({
      signal: closeApp.signal,
    });
    assert.equal(first.stopped, "aborted");
    // More written meanwhile: not part of the batch in flight.
    await new EventWriter(storage).write("note.created", { late: true });
    const { api, stored } = batchServer();
    const report = await new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch }).drain();
    assert.equal(api.seen[0]?.key, hung.seen[0]?.key, "the same key");
    assert.equal(api.seen[0]?.body, hung.seen[0]?.body, "the very same batch, byte for byte");
    assert.equal(stored.length, 6);
    assert.equal(report.sent, 6);
  });

  it("drops the events a 409 names as stored and sends the rest in a new batch under a new key", async () => {
    const { storage, entries } = await queueOf(6);
    const already = [entries[1]?.event.id, entries[4]?.event.id];
    const { api, stored } = batchServer((_events, n) =>
      n === 1 ? answer(409, { error: "EVENT_ALREADY_EXISTS", message: "m", details: { ids: already } }) : undefined,
    );
    const report = await new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch }).drain();
    assert.equal(api.seen.length, 2);
    assert.notEqual(api.seen[0]?.key, api.seen[1]?.key);
    assert.deepEqual(
      stored,
      entries.filter((e) => !already.includes(e.event.id)).map((e) => e.event.id),
    );
    assert.deepEqual(report, { sent: 4, replayed: 2, conflicts: 0, rejected: 0, retries: 0 });
    assert.deepEqual(await storage.list(), []);
  });

  it("keeps the events a 400 names, with the error, and sends the rest in a new batch", async () => {
    const { storage, entries } = await queueOf(4);
    const { api, stored } = batchServer((_, n) =>
      n === 1
        ? answer(400, { error: "VALIDATION_FAILED", message: "m", details: [{ index: 2, field: "type", message: "bad" }] })
        : undefined,
    );
    const q = new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch });
    const report = await q.drain();
    assert.deepEqual(report, { sent: 3, replayed: 0, conflicts: 0, rejected: 1, retries: 0 });
    const rejected = await q.rejected();
    assert.deepEqual(
      rejected.map((e) => [e.key, e.batch, e.error?.status]),
      [[entries[2]?.key, undefined, 400]],
    );
    assert.equal(stored.length, 3);
  });

  it("retries a batch whose answer was lost with the same key and body, and counts it replayed", async () => {
    const { storage } = await queueOf(3);
    const { api, stored } = batchServer();
    let lost = false;
    const fetch: typeof globalThis.fetch = async (input, init) => {
      const resp = await api.fetch(input, init);
      if (!lost) {
        lost = true;
        throw new TypeError("network error after the server answered");
      }
      return resp;
    };
    const report = await new SyncQueue({ storage, baseUrl: BASE, getToken: () => TOKEN, fetch, retry: instantRetry().retry }).drain();
    assert.deepEqual(report, { sent: 0, replayed: 3, conflicts: 0, rejected: 0, retries: 1 });
    assert.equal(stored.length, 3);
    assert.equal(api.seen[0]?.body, api.seen[1]?.body);
  });
});
