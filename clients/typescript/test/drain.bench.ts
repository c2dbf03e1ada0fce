/**
 * The drain benchmark (npm run bench): the time to drain a queue of
 * BENCH_EVENTS (1,000) events through a proxy that adds BENCH_LATENCY_MS
 * (50 ms) to every round trip, as a mobile network does, one event per
 * request against batches. It prints one JSON line: each way's time,
 * requests, and the ratio. A benchmark, not a test: it checks only that
 * every event was stored, in as many requests as each way takes. CI runs
 * it small (BENCH_EVENTS=200 BENCH_LATENCY_MS=5) so that it keeps working.
 */

import { pullEvents } from "../src/pull.js";
import { SyncQueue } from "../src/queue.js";
import { MemoryStorage } from "../src/storage.js";
import { EventWriter } from "../src/writer.js";
import { FaultProxy } from "./fault-proxy.js";
import { localToken, startService } from "./server.js";

const EVENTS = setting("BENCH_EVENTS", 1000, 1);
const LATENCY_MS = setting("BENCH_LATENCY_MS", 50, 0);

/** A whole number from the environment, at least min; the process ends with a clear error on anything else. */
function setting(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isSafeInteger(n) || n < min) {
    console.error(`${name} must be a whole number of at least ${min}, not ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return n;
}

// Each user's rate limits off: the one-per-request drain is the point of
// comparison, and at machine speed it would be held to the limit instead.
const service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
const proxy = await FaultProxy.start({
  upstream: service.url,
  seed: 1,
  rates: { reset_before_forwarding: 0, drop_after_answer: 0, delay_past_timeout: 0, answer_503: 0 },
  delayMs: 0,
  latencyMs: LATENCY_MS,
});

async function drain(maxEvents: number) {
  const user = `bench-${crypto.randomUUID()}`;
  const storage = new MemoryStorage({ user });
  const writer = new EventWriter(storage);
  for (let i = 0; i < EVENTS; i++) {
    await writer.write("note.created", { i, title: `note ${i}`, items: ["milk", "eggs"] });
  }
  const common = { baseUrl: proxy.url, getToken: () => localToken(user) };
  const before = proxy.forwarded;
  const start = performance.now();
  const report = await new SyncQueue({ storage, ...common, batch: { maxEvents } }).drain();
  const ms = performance.now() - start;
  const requests = proxy.forwarded - before;
  let stored = 0;
  for await (const _ of pullEvents({ ...common, limit: 1000 })) {
    stored++;
  }
  const want = Math.ceil(EVENTS / maxEvents);
  if (report.sent !== EVENTS || stored !== EVENTS || requests !== want) {
    throw new Error(
      `batches of ${maxEvents}: ${report.sent} sent, ${stored} stored, of ${EVENTS}, in ${requests} requests (${want} expected)`,
    );
  }
  return { ms: Math.round(ms), requests };
}

try {
  const alone = await drain(1);
  const batched = await drain(98);
  console.log(
    JSON.stringify({
      events: EVENTS,
      latency_ms: LATENCY_MS,
      one_per_request: alone,
      batches: batched,
      times_faster: Number((alone.ms / batched.ms).toFixed(1)),
    }),
  );
} finally {
  await proxy.close();
  service.stop();
}
