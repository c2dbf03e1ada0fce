/**
 * The live benchmark (npm run bench:live): the time from one device's 201
 * to another device's pulled page holding the event, over LIVE_EVENTS
 * (200) events written one after another, on make run's server: its
 * poke function fed from the stream stand-in (kumo: the answers) or the
 * table's real stream (DYNAMODB_ENDPOINT on dynoxide or moto), and its
 * Event API stand-in. The reader is LiveSync over a real WebSocket
 * (Node.js: --experimental-websocket before 22). It prints one JSON line:
 * p50, p99 and the maximum in ms, and the reader's pulls; and fails if
 * any event did not reach the reader exactly once.
 *
 * LIVE_WRITERS=N (default 1) writes to a space instead, N requests at
 * once (each writer waits for its own event at the reader before the
 * next): with several at once make run accepts some and its in-process
 * sequencer places them, so an event reaches the reader one placement
 * and one poke after its 201, the busy-space path's latency.
 */

import { LiveSync } from "../src/live.js";
import { pullEvents } from "../src/pull.js";
import { uuidv4 } from "../src/uuid.js";
import { localToken, startService } from "./server.js";

const EVENTS = Number(process.env.LIVE_EVENTS ?? 200);
const WRITERS = Number(process.env.LIVE_WRITERS ?? 1);
const service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
const user = `bench-${crypto.randomUUID()}`;
const token = localToken(user);
const api = new URL(service.url);
const post = (path: string, body: unknown) =>
  fetch(new URL(path, service.url), {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": uuidv4() },
    body: JSON.stringify(body),
  });
// With several writers, a space of the user's own: its stream is the one
// the busy-space path sequences (a user's own stream is always at the head).
const space = WRITERS > 1 ? uuidv4() : undefined;
if (space !== undefined) {
  const r = await post("/api/v1/spaces", { id: space, name: "bench" });
  if (r.status !== 201) {
    throw new Error(`create the space: ${r.status} ${await r.text()}`);
  }
}
const eventsPath = space === undefined ? "/api/v1/sync/events" : `/api/v1/spaces/${space}/events`;

const arrived = new Map<string, number>(); // event id → when the reader's page held it
let duplicates = 0;
let pulls = 0;
let cursor: string | undefined;
const reader = new LiveSync({
  getToken: () => token,
  channel: { realtimeUrl: `ws://${api.host}/event/realtime`, httpHost: api.host, space },
  pull: async (signal) => {
    pulls++;
    const p = pullEvents({ baseUrl: service.url, getToken: () => token, cursor, signal, space });
    for await (const page of p.pages()) {
      const now = performance.now();
      for (const ev of page.events) {
        if (arrived.has(ev.id)) {
          duplicates++;
        }
        arrived.set(ev.id, now);
      }
      cursor = page.cursor;
    }
    return cursor;
  },
});

const waitFor = async (ok: () => boolean, ms: number, what: string) => {
  for (const end = performance.now() + ms; !ok(); await new Promise((r) => setTimeout(r, 2))) {
    if (performance.now() > end) {
      throw new Error(`not within ${ms} ms: ${what}`);
    }
  }
};

try {
  reader.start();
  await waitFor(() => reader.state.kind === "live", 10_000, "the reader live");
  const latencies: number[] = [];
  pulls = 0;
  const written = new Set<string>();
  const write = async (i: number) => {
    const id = uuidv4();
    written.add(id);
    const r = await post(eventsPath, { id, type: "note.created", occurredAt: new Date().toISOString(), payload: { i } });
    const answered = performance.now();
    if (r.status !== 201) {
      throw new Error(`POST: ${r.status} ${await r.text()}`);
    }
    await waitFor(() => arrived.has(id), 5_000, `event ${i} at the reader`);
    latencies.push((arrived.get(id) ?? 0) - answered);
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < EVENTS) {
        await write(next++);
      }
    }),
  );
  for (const id of arrived.keys()) {
    if (!written.has(id)) {
      arrived.delete(id); // the space's own events (its creation)
    }
  }
  if (arrived.size !== EVENTS || duplicates !== 0) {
    throw new Error(`${arrived.size} events reached the reader, ${duplicates} twice, of ${EVENTS}`);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  console.log(
    JSON.stringify({
      events: EVENTS,
      source: process.env.DYNAMODB_ENDPOINT ? "stream" : "answers",
      writers: WRITERS,
      p50_ms: at(0.5),
      p99_ms: at(0.99),
      max_ms: Math.round(latencies[latencies.length - 1] ?? 0),
      reader_pulls: pulls,
    }),
  );
} finally {
  reader.stop();
  service.stop();
}
