/**
 * The one client's benchmark (npm run bench:client), on make run's server
 * (rate limits off), printing one JSON line:
 * - write_to_other_ms: from one device's client.write() to the event in
 *   another device's client.state (same user, its own storage, the live
 *   channel over a real WebSocket), over CLIENT_EVENTS (200) writes one
 *   after another: p50, p99, max.
 * - reload_ms: a client made again offline over a device that kept
 *   RELOAD_EVENTS (10,000) events folded, to its state showing them all:
 *   the median of 5, per storage (memory; IndexedDB as fake-indexeddb).
 * It fails if an event is missing from the other device's state.
 */

import { IDBFactory } from "fake-indexeddb";
import { createSyncClient, type SyncClient, type SyncEvent, type SyncState } from "../src/client.js";
import { indexedDBStorage } from "../src/indexeddb.js";
import { memoryStorage, type SyncStorage } from "../src/storage.js";
import { uuidv4 } from "../src/uuid.js";
import { localToken, startService } from "./server.js";

const EVENTS = Number(process.env.CLIENT_EVENTS ?? 200);
const RELOAD_EVENTS = Number(process.env.RELOAD_EVENTS ?? 10_000);
const service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
const api = new URL(service.url);
const live = { realtimeUrl: `ws://${api.host}/event/realtime`, httpHost: api.host };

type Notes = Record<string, string>;
/** As the notes example's reduce: in place, in the copy the client hands it. */
const reduce = (s: Notes, e: SyncEvent): Notes => {
  if (e.kind === "deleted") {
    Reflect.deleteProperty(s, e.id);
  } else {
    s[e.id] = String(e.payload.text);
  }
  return s;
};

function open(user: string, storage: SyncStorage, extra: { online?: () => boolean } = {}): SyncClient<Notes> {
  return createSyncClient<Notes>({
    baseUrl: service.url,
    user,
    getToken: () => localToken(user),
    initial: {},
    reduce,
    storage,
    live,
    ...extra,
  });
}

function until<S>(c: SyncClient<S>, ok: (s: SyncState<S>) => boolean, ms: number, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`not within ${ms} ms: ${what}`));
    }, ms);
    const check = () => {
      if (ok(c.state)) {
        const now = performance.now();
        clearTimeout(timer);
        stop();
        resolve(now);
      }
    };
    const stop = c.subscribe(check);
    check();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function writeToOther(): Promise<Record<string, number>> {
  const user = `bench-${crypto.randomUUID()}`;
  const writer = open(user, memoryStorage());
  const reader = open(user, memoryStorage());
  try {
    await until(reader, (s) => s.mine.channel === "live", 10_000, "the reader live");
    await until(writer, (s) => s.mine.channel === "live", 10_000, "the writer live");
    const latencies: number[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const start = performance.now();
      const w = await writer.write("note.created", { text: `note ${i}` });
      const seen = await until(reader, (s) => w.id in s.mine.confirmed, 5_000, `event ${i} at the reader`);
      latencies.push(seen - start);
    }
    if (Object.keys(reader.state.mine.confirmed).length !== EVENTS) {
      throw new Error(`the reader holds ${Object.keys(reader.state.mine.confirmed).length} of ${EVENTS}`);
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
    return { p50: at(0.5), p99: at(0.99), max: Math.round(latencies[latencies.length - 1] ?? 0) };
  } finally {
    writer.close();
    reader.close();
  }
}

/** RELOAD_EVENTS events of a new user, posted in batches straight to the API. */
async function seed(user: string): Promise<void> {
  for (let i = 0; i < RELOAD_EVENTS; i += 98) {
    const events = Array.from({ length: Math.min(98, RELOAD_EVENTS - i) }, (_, j) => ({
      id: uuidv4(),
      type: "note.created",
      occurredAt: new Date().toISOString(),
      payload: { text: `note ${i + j}: ${"x".repeat(40)}` },
    }));
    const r = await fetch(new URL("/api/v1/sync/events/batch", service.url), {
      method: "POST",
      headers: { authorization: `Bearer ${localToken(user)}`, "content-type": "application/json", "idempotency-key": uuidv4() },
      body: JSON.stringify({ events }),
    });
    if (r.status !== 201) {
      throw new Error(`batch: ${r.status} ${await r.text()}`);
    }
  }
}

async function reload(user: string, storage: SyncStorage): Promise<{ fold_ms: number; reload_ms: number }> {
  const first = open(user, storage);
  const t0 = performance.now();
  const folded = await until(
    first,
    (s) => Object.keys(s.mine.confirmed).length === RELOAD_EVENTS && s.status.kind === "synced",
    600_000,
    "all folded",
  );
  first.close();
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    const again = open(user, storage, { online: () => false });
    const shown = await until(again, (s) => s.mine.loaded && Object.keys(s.mine.state).length === RELOAD_EVENTS, 60_000, "the kept state");
    times.push(shown - start);
    again.close();
  }
  return { fold_ms: Math.round(folded - t0), reload_ms: Math.round(median(times)) };
}

try {
  const latency = await writeToOther();
  const user = `reload-${crypto.randomUUID()}`;
  await seed(user);
  const memory = await reload(user, memoryStorage());
  const idb = await reload(user, indexedDBStorage({ factory: new IDBFactory() }));
  console.log(
    JSON.stringify({
      events: EVENTS,
      write_to_other_ms: latency,
      reload_events: RELOAD_EVENTS,
      memory,
      indexeddb_fake: idb,
    }),
  );
} finally {
  service.stop();
}
