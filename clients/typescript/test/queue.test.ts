import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SyncQueue } from "../src/queue.js";
import { retrier } from "../src/retry.js";
import type { QueueEntry } from "../src/types.js";
import { EventWriter } from "../src/writer.js";
import { answer, error, fakeFetch, hangUntilAborted, instantRetry, networkError, queueAt, queueOf, TOKEN, USER } from "./helpers.js";
import { localToken } from "./server.js";

const BASE = "https://api.example.com";
/** Every entry alone, under its own key: the single endpoint's path. */
const ALONE = { maxEvents: 1 };

const created = (req: Request, replayed = false) =>
  req
    .json()
    .then((e: { id: string; type: string; occurredAt: string }) =>
      answer(
        201,
        { id: e.id, type: e.type, occurredAt: e.occurredAt, receivedAt: "2026-12-03T10:00:00.000Z" },
        replayed ? { "idempotent-replayed": "true" } : {},
      ),
    );

describe("SyncQueue.drain, one entry per request (batch.maxEvents 1)", () => {
  it("sends every entry once, in order, with its stored key, the token and JSON, and empties the queue", async () => {
    const { storage, entries } = await queueOf(3);
    const api = fakeFetch((req) => created(req));
    const q = new SyncQueue({
      batch: ALONE,
      storage,
      baseUrl: `${BASE}/`,
      getToken: () => TOKEN,
      fetch: api.fetch,
      retry: instantRetry().retry,
    });
    const report = await q.drain();
    assert.deepEqual(report, { sent: 3, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
    assert.deepEqual(
      api.seen.map((s) => [s.method, s.key, s.auth, JSON.parse(s.body)]),
      entries.map((e) => ["POST", e.key, `Bearer ${TOKEN}`, e.event]),
    );
    assert.deepEqual(await storage.list(), []);
  });

  it("retries network errors, timeouts, 429 and 5xx with the same key and body, honouring Retry-After", async () => {
    const { storage, entries } = await queueOf(1);
    const faults = [
      () => networkError("fetch failed"),
      (_: Request, signal?: AbortSignal) => hangUntilAborted(signal),
      () => error(429, "TOO_MANY", { "retry-after": "2" }),
      () => error(503, "SERVICE_UNAVAILABLE", { "retry-after": "1" }),
      () => error(500, "INTERNAL"),
      () => answer(502, { message: "Internal Server Error" }),
    ];
    const api = fakeFetch((req, n, signal) => faults[n - 1]?.(req, signal) ?? created(req));
    const { retry, waits } = instantRetry({ timeoutMs: 50, maxDelayMs: 5000 });
    const report = await new SyncQueue({ batch: ALONE, storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch, retry }).drain();
    assert.deepEqual(report, { sent: 1, replayed: 0, conflicts: 0, rejected: 0, retries: faults.length });
    assert.equal(api.seen.length, faults.length + 1);
    assert.ok(
      api.seen.every((s) => s.key === entries[0]?.key && s.body === api.seen[0]?.body),
      "never a new key or body",
    );
    assert.ok((waits[2] ?? 0) >= 2000 && (waits[3] ?? 0) >= 1000, `Retry-After is a floor: waits ${waits}`);
  });

  it("stops on 401 with the entry still queued, and sends it under its key after the token is refreshed", async () => {
    const { storage, entries } = await queueOf(2);
    const fresh = localToken(USER, { fresh: true });
    let token = localToken(USER, { expired: true });
    const api = fakeFetch((req) =>
      req.headers.get("authorization") === `Bearer ${fresh}` ? created(req) : answer(401, { message: "Unauthorized" }),
    );
    const q = new SyncQueue({ batch: ALONE, storage, baseUrl: BASE, getToken: () => token, fetch: api.fetch, retry: instantRetry().retry });
    assert.deepEqual(await q.drain(), { sent: 0, replayed: 0, conflicts: 0, rejected: 0, retries: 0, stopped: "unauthorized" });
    assert.equal(api.seen.length, 1, "a 401 is not retried");
    assert.deepEqual(await storage.list(), entries);
    token = fresh;
    assert.deepEqual(await q.drain(), { sent: 2, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
    assert.deepEqual(
      api.seen.slice(1).map((s) => s.key),
      entries.map((e) => e.key),
    );
  });

  it("keeps a key-reuse conflict untouched, drops an event already stored, keeps other 4xx with the error, and goes on", async () => {
    const { storage, entries } = await queueOf(5);
    const answers = [
      (req: Request) => created(req, true),
      () => error(409, "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD"),
      () => error(409, "EVENT_ALREADY_EXISTS"),
      () => error(400, "VALIDATION_FAILED"),
      (req: Request) => created(req),
    ];
    const api = fakeFetch((req, n) => (answers[n - 1] as (r: Request) => Response | Promise<Response>)(req));
    const q = new SyncQueue({ batch: ALONE, storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch, retry: instantRetry().retry });
    assert.deepEqual(await q.drain(), { sent: 1, replayed: 2, conflicts: 1, rejected: 1, retries: 0 });
    assert.deepEqual(await q.conflicts(), [{ ...entries[1], status: "conflict" }], "the conflicting entry, as written");
    assert.deepEqual(await q.rejected(), [
      { ...entries[3], status: "rejected", error: { status: 400, body: { error: "VALIDATION_FAILED", message: "validation_failed" } } },
    ]);
    assert.equal((await storage.list()).length, 2);
    assert.deepEqual(await q.drain(), { sent: 0, replayed: 0, conflicts: 0, rejected: 0, retries: 0 }, "kept entries are not sent again");
    assert.equal(api.seen.length, 5);
  });

  it("sends entries written while it drains, after those it found", async () => {
    const { storage, entries } = await queueOf(2);
    const writer = new EventWriter(storage);
    const late: QueueEntry[] = [];
    const api = fakeFetch(async (req, n) => {
      if (n === 1) {
        late.push(await writer.write("note.created", { late: true }));
      }
      return created(req);
    });
    const report = await new SyncQueue({
      batch: ALONE,
      storage,
      baseUrl: BASE,
      getToken: () => TOKEN,
      fetch: api.fetch,
      retry: instantRetry().retry,
    }).drain();
    assert.equal(report.sent, 3);
    assert.deepEqual(
      api.seen.map((s) => s.key),
      [...entries, ...late].map((e) => e.key),
    );
  });

  it("never has an entry in flight twice when drain is called concurrently", async () => {
    const { storage, entries } = await queueOf(20);
    const api = fakeFetch(async (req) => {
      await new Promise((r) => setTimeout(r, 1));
      return created(req);
    });
    const q = new SyncQueue({ batch: ALONE, storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch, retry: instantRetry().retry });
    const reports = await Promise.all([q.drain(), q.drain(), q.drain()]);
    assert.equal(api.maxInFlight(), 1);
    assert.deepEqual(
      api.seen.map((s) => s.key),
      entries.map((e) => e.key),
      "each entry sent once, in order",
    );
    assert.equal(
      reports.reduce((n, r) => n + r.sent, 0),
      20,
    );
  });

  it("stops when its signal is aborted, mid-request, leaving the entry queued", async () => {
    const { storage, entries } = await queueOf(2);
    const stop = new AbortController();
    const api = fakeFetch((_, __, signal) => {
      setTimeout(() => stop.abort(), 5);
      return hangUntilAborted(signal);
    });
    const { retry } = instantRetry({ timeoutMs: 10_000 });
    const report = await new SyncQueue({ batch: ALONE, storage, baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch, retry }).drain({
      signal: stop.signal,
    });
    assert.equal(report.stopped, "aborted");
    assert.deepEqual(await storage.list(), entries);
  });

  it("gives up after retry.maxAttempts, leaving the entry queued", async () => {
    const { storage, entries } = await queueOf(1);
    const api = fakeFetch(() => error(503, "SERVICE_UNAVAILABLE"));
    const report = await new SyncQueue({
      batch: ALONE,
      storage,
      baseUrl: BASE,
      getToken: () => TOKEN,
      fetch: api.fetch,
      retry: instantRetry({ maxAttempts: 4 }).retry,
    }).drain();
    assert.deepEqual(report, {
      sent: 0,
      replayed: 0,
      conflicts: 0,
      rejected: 0,
      retries: 3,
      stopped: "retries_exhausted",
      error: "status 503",
    });
    assert.deepEqual(await storage.list(), entries);
  });
});

describe("backoff", () => {
  it("is full jitter under an exponential cap, and Retry-After is a floor", () => {
    for (const [random, attempt, want] of [
      [0.999999, 1, 100],
      [0.999999, 3, 400],
      [0.999999, 30, 5000],
      [0, 5, 0],
      [0.5, 2, 100],
    ] as const) {
      const got = retrier({ baseDelayMs: 100, maxDelayMs: 5000, random: () => random }).delay(attempt);
      assert.ok(Math.abs(got - want) < 0.01, `random ${random}, attempt ${attempt}: ${got}, want ${want}`);
    }
    assert.equal(retrier({ random: () => 0 }).delay(1, 3000), 3000);
  });
});

describe("a queue is its user's: sent only with a token whose sub is the storage's user", () => {
  it("sends nothing with another user's token, and says so", async () => {
    const { storage, entries } = await queueOf(2);
    const api = fakeFetch((req) => created(req));
    const report = await queueAt(storage, api.fetch, { getToken: () => localToken("someone-else") }).drain();
    assert.deepEqual(report, {
      sent: 0,
      replayed: 0,
      conflicts: 0,
      rejected: 0,
      retries: 0,
      stopped: "wrong_user",
      error: "the token is another user's: nothing is sent with it",
    });
    assert.equal(api.seen.length, 0);
    assert.deepEqual(
      (await storage.list()).map(({ batch: _, ...e }) => e),
      entries,
      "the queue is kept as it was",
    );
  });

  it("sends nothing with a token whose sub it cannot read, rather than guess", async () => {
    const { storage } = await queueOf(1);
    const api = fakeFetch((req) => created(req));
    for (const token of ["opaque-access-token", `h.${Buffer.from('{"aud":"x"}').toString("base64url")}.s`]) {
      const report = await queueAt(storage, api.fetch, { getToken: () => token }).drain();
      assert.equal(report.stopped, "unreadable_token", token);
    }
    assert.equal(api.seen.length, 0);
    assert.equal((await storage.list()).length, 1);
  });

  it("checks the token before every attempt: a login as another user during a backoff stops the retries", async () => {
    const { storage } = await queueOf(1);
    let token = TOKEN;
    const api = fakeFetch(() => {
      token = localToken("user-b"); // user-1 logs out and user-b logs in while the queue waits to retry
      return error(503, "SERVICE_UNAVAILABLE");
    });
    const report = await queueAt(storage, api.fetch, { getToken: () => token, batch: ALONE }).drain();
    assert.equal(report.stopped, "wrong_user");
    assert.deepEqual(
      api.seen.map((s) => s.auth),
      [`Bearer ${TOKEN}`],
      "one attempt, with the queue's user's token",
    );
  });

  it("sends with the storage's user's token, whichever claims the token has besides", async () => {
    const { storage } = await queueOf(3);
    const api = fakeFetch((req) => req.json().then((b: { events: unknown[] }) => answer(201, { events: b.events })));
    const report = await queueAt(storage, api.fetch, { getToken: () => localToken(USER, { aud: "app", exp: 1 }) }).drain();
    assert.equal(report.sent, 3);
  });
});
