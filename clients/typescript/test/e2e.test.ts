import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { IDBFactory } from "fake-indexeddb";
import { IndexedDBStorage } from "../src/indexeddb.js";
import { pullEvents } from "../src/pull.js";
import { type DrainReport, SyncQueue } from "../src/queue.js";
import type { RetryOptions } from "../src/retry.js";
import type { ListedEvent, QueueEntry } from "../src/types.js";
import { EventWriter } from "../src/writer.js";
import { FaultProxy } from "./fault-proxy.js";
import { localToken, startService } from "./server.js";

const N = Number(process.env.E2E_EVENTS ?? 300);
const SEED = Number(process.env.FAULT_SEED ?? 20261203);
const CLIENT_TIMEOUT_MS = 300;

let service: Awaited<ReturnType<typeof startService>>;
let proxy: FaultProxy;

before(async () => {
  service = await startService();
  proxy = await FaultProxy.start({
    upstream: service.url,
    seed: SEED,
    rates: { reset_before_forwarding: 0.05, drop_after_answer: 0.05, delay_past_timeout: 0.05, answer_503: 0.04 },
    delayMs: CLIENT_TIMEOUT_MS + 200,
    // The first batch's answer is lost after the server committed it.
    first: { "POST /api/v1/sync/events/batch": ["drop_after_answer"] },
  });
});

after(async () => {
  await proxy?.close();
  service?.stop();
});

/** A payload of the kinds an app writes, different for each event. */
function payload(i: number): Record<string, unknown> {
  return {
    i,
    title: `note ${i}: "quoted", back\\slash, émoji 🚀, ${"x".repeat(i % 50)}`,
    tags: i % 3 === 0 ? [] : ["a", i, i % 2 === 0, null],
    nested: { depth: { n: -(i + 1) / 8, big: Number.MAX_SAFE_INTEGER - i } },
  };
}

it(`${N} events written offline reach the server exactly once, in batches, through a faulty network and an app restart mid-batch`, async () => {
  const user = `e2e-${crypto.randomUUID()}`;
  const factory = new IDBFactory();
  const retry: RetryOptions = { baseDelayMs: 20, maxDelayMs: 200, timeoutMs: CLIENT_TIMEOUT_MS };
  // Every request's key and body, as the app sent them.
  const sent: { key: string; body: string }[] = [];
  const recording: typeof globalThis.fetch = async (input, init) => {
    const req = input as Request;
    sent.push({ key: req.headers.get("idempotency-key") ?? "", body: await req.clone().text() });
    return globalThis.fetch(input, init);
  };
  const common = { baseUrl: proxy.url, getToken: () => localToken(user), retry };
  // Batches of 10, so that the drain makes enough requests to meet the faults.
  const queueOptions = { ...common, fetch: recording, batch: { maxEvents: 10 } };

  // Offline: the app writes N events into its queue; nothing is sent.
  const first = new IndexedDBStorage({ user, name: "app-queue", factory });
  const writer = new EventWriter(first);
  const written: QueueEntry[] = [];
  for (let i = 0; i < N; i++) {
    written.push(await writer.write(i % 2 ? "note.updated" : "note.created", payload(i)));
  }

  // A second device of the same user syncs all the while, each pull
  // starting where the last one ended.
  const secondDevice: string[] = [];
  let draining = true;
  const syncing = (async () => {
    let cursor: string | undefined;
    for (;;) {
      const last = !draining; // read before the pull: a pull after the drains' end is the last
      const pull = pullEvents({ ...common, cursor, limit: 7 });
      for await (const e of pull) {
        secondDevice.push(e.id);
      }
      cursor = pull.cursor;
      if (last) {
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  // Online: the app drains in batches, and is closed a third of the way
  // through, while a batch it has just formed is out (cut off wherever it
  // is).
  const closeApp = new AbortController();
  let settled = 0;
  const removeAll = first.removeAll.bind(first);
  first.removeAll = async (keys) => {
    await removeAll(keys);
    settled += keys.length;
  };
  const updateAll = first.updateAll.bind(first);
  first.updateAll = async (entries) => {
    await updateAll(entries);
    if (settled >= N / 3 && entries.every((e) => e.batch !== undefined)) {
      setTimeout(() => closeApp.abort(), 1);
    }
  };
  const before = await new SyncQueue({ storage: first, ...queueOptions }).drain({ signal: closeApp.signal });
  assert.equal(before.stopped, "aborted");
  await first.close();
  const sentBefore = sent.length;

  // The app starts again: a new queue over the same storage carries on, with
  // the batch that was out, the very same batch under the same key.
  const reopened = new IndexedDBStorage({ user, name: "app-queue", factory });
  const left = await reopened.list();
  assert.ok(left.length > 0 && left.length < N, `${left.length} entries left after the restart`);
  assert.deepEqual(
    left.map(({ batch: _, ...e }) => e),
    written.slice(N - left.length),
    "the entries left are the last ones written, untouched",
  );
  const inFlight = left[0]?.batch;
  assert.ok(inFlight !== undefined, "the first entry left belongs to the batch that was out");
  const after = await new SyncQueue({ storage: reopened, ...queueOptions }).drain();
  const resent = sent[sentBefore];
  assert.equal(resent?.key, inFlight, "the first request after the restart is that batch's, under its key");
  assert.ok(
    sent.slice(0, sentBefore).some((s) => s.key === inFlight && s.body === resent?.body),
    "and it is the very same batch, byte for byte",
  );
  assert.equal(after.stopped, undefined);
  assert.deepEqual(await reopened.list(), [], "the queue is empty");
  draining = false;
  await syncing;

  // What the server holds, read back through the same faulty network.
  const listed: ListedEvent[] = [];
  for await (const e of pullEvents({ ...common, limit: 1000 })) {
    listed.push(e);
  }
  const byId = new Map(listed.map((e) => [e.id, e]));
  assert.equal(listed.length, N, `the server lists ${listed.length} events`);
  assert.equal(byId.size, N, "each event once");
  for (const w of written) {
    const got = byId.get(w.event.id);
    assert.ok(got, `event ${w.event.id} is stored`);
    assert.deepEqual([got.type, got.occurredAt, got.payload], [w.event.type, w.event.occurredAt, w.event.payload]);
  }

  assert.deepEqual(
    secondDevice,
    listed.map((e) => e.id),
    "the second device, pulling while the first wrote, saw every event once, in the server's order",
  );

  const total = (k: keyof DrainReport) => (before[k] as number) + (after[k] as number);
  assert.equal(total("sent") + total("replayed"), N, "every event answered 201 (fresh or replayed) or already stored");
  assert.equal(total("conflicts") + total("rejected"), 0);
  const faults = Object.values(proxy.injected).reduce((a, b) => a + b, 0);
  assert.ok(faults > 0 && total("retries") > 0);
  assert.ok((proxy.injectedOn.get("/api/v1/sync/events/batch")?.drop_after_answer ?? 0) > 0, "a batch's answer was lost after commit");
  assert.ok(sent.filter((s) => !s.body.startsWith('{"events":')).length <= 1, "the events went in batches (a lone leftover at most alone)");
  console.log(
    JSON.stringify({
      events: N,
      seed: SEED,
      faults_injected: proxy.injected,
      faults_by_path: Object.fromEntries(proxy.injectedOn),
      batch_requests: sent.filter((s) => s.body.startsWith('{"events":')).length,
      requests_forwarded: proxy.forwarded,
      retries: total("retries"),
      drains: { before_restart: before, after_restart: after },
      server_holds: { events: listed.length, distinct_ids: byId.size },
      second_device_saw: secondDevice.length,
    }),
  );
});
