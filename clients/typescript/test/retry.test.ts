import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MAX_TIMER_MS, retrier, retryAfterMs } from "../src/retry.js";
import { EventWriter } from "../src/writer.js";
import { answer, error, fakeFetch, instantRetry, memory, queueAt } from "./helpers.js";

const NOW = Date.UTC(2026, 11, 3, 10, 0, 0); // Thu, 03 Dec 2026 10:00:00 GMT
const DAY_MS = 86_400_000;

describe("Retry-After", () => {
  it("reads delay-seconds and the three HTTP-date forms, and nothing else", () => {
    const cases: [string | null, number | undefined][] = [
      ["120", 120_000],
      ["0", 0],
      [" 7 ", 7000],
      ["007", 7000],
      ["Thu, 03 Dec 2026 10:00:30 GMT", 30_000], // IMF-fixdate
      ["Thursday, 03-Dec-26 10:01:00 GMT", 60_000], // RFC 850
      ["Thu Dec  3 10:00:05 2026", 5000], // asctime
      ["Thu, 03 Dec 2026 09:00:00 GMT", 0], // past: now
      ["Fri, 01 Jan 2100 00:00:00 GMT", Date.UTC(2100, 0, 1) - NOW], // far ahead: read as it is, bounded by the retrier
      ["99999999999999999999", 1e20 * 1000], // bounded by the retrier
      [null, undefined],
      ["", undefined],
      ["1.5", undefined], // Date.parse takes this for a date in 2001
      ["-1", undefined],
      ["+5", undefined],
      ["5, 6", undefined],
      ["soon", undefined],
      ["2026-12-03T10:00:30Z", undefined], // ISO 8601 is no HTTP date
      ["Thu, 30 Feb 2026 10:00:00 GMT", undefined],
      ["Thu, 03 Dec 2026 25:00:00 GMT", undefined],
      ["Thu, 03 Dez 2026 10:00:30 GMT", undefined],
      ["Thu, 03 Dec 2026 10:00:30 CET", undefined],
    ];
    for (const [header, want] of cases) {
      assert.equal(retryAfterMs(header, NOW), want, String(header));
    }
  });

  it("is a floor of the wait, bounded by retry.maxDelayMs", () => {
    const r = retrier({ baseDelayMs: 100, maxDelayMs: 30_000, random: () => 0.5 });
    assert.equal(r.delay(1, 2000), 2000, "a floor above the backoff");
    assert.equal(r.delay(1, 0), 50, "the backoff above the floor");
    for (const ms of [31_000, 30 * DAY_MS, MAX_TIMER_MS + 1, 1e23, Number.POSITIVE_INFINITY]) {
      assert.equal(r.delay(1, ms), 30_000, `Retry-After of ${ms} ms`);
    }
    assert.equal(retrier({ maxDelayMs: MAX_TIMER_MS }).delay(1, 30 * DAY_MS), MAX_TIMER_MS);
  });

  it("refuses a maxDelayMs that no timer keeps", () => {
    for (const maxDelayMs of [MAX_TIMER_MS + 1, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => retrier({ maxDelayMs }), RangeError, String(maxDelayMs));
    }
  });

  it("of 30 days waits the bound, on a real timer: not at once, again and again (setTimeout overflows past 24.8 days)", async () => {
    const storage = memory();
    await new EventWriter(storage).write("note.created", {});
    const api = fakeFetch(() => error(503, "SERVICE_UNAVAILABLE", { "retry-after": String(30 * 86_400) }));
    const stop = new AbortController();
    // The real sleep; a wait of 10 s, the bound, after the first 503.
    const { sleep: _, ...retry } = instantRetry({ maxDelayMs: 10_000 }).retry;
    const draining = queueAt(storage, api.fetch, { retry }).drain({ signal: stop.signal });
    await new Promise((r) => setTimeout(r, 200));
    const attempts = api.seen.length;
    stop.abort();
    assert.equal((await draining).stopped, "aborted");
    assert.equal(attempts, 1, "one attempt in 200 ms: the retry waits the 10 s bound");
  });

  it("of 30 days asks for a wait a timer can keep, on the drain's every retry", async () => {
    const storage = memory();
    await new EventWriter(storage).write("note.created", {});
    const api = fakeFetch((_, n) => (n <= 3 ? error(503, "SERVICE_UNAVAILABLE", { "retry-after": String(30 * 86_400) }) : answer(201, {})));
    const { retry, waits } = instantRetry({ maxDelayMs: 5000 });
    const report = await queueAt(storage, api.fetch, { retry }).drain();
    assert.equal(report.sent, 1);
    assert.deepEqual(waits, [5000, 5000, 5000]);
  });
});
