import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import { PullStopped, pullEvents } from "../src/pull.js";
import { SyncQueue } from "../src/queue.js";
import { answer, fakeFetch, hangUntilAborted, instantRetry, networkError, queueAt, queueOf, TOKEN } from "./helpers.js";

/** A loopback port that refuses connections: a server that is not running. */
function deadPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describe("a drain that cannot reach the server says why", () => {
  it("stops as unreachable when a real server is not there, the device online, leaving the queue whole", { timeout: 10_000 }, async () => {
    const storage = (await queueOf(3)).storage;
    const before = await storage.list();
    const report = await new SyncQueue({
      storage,
      baseUrl: `http://127.0.0.1:${await deadPort()}`,
      getToken: () => TOKEN,
      retry: instantRetry().retry,
    }).drain();
    assert.equal(report.stopped, "unreachable");
    assert.equal(report.retries, 3, "retry.unreachableAfter (4) attempts in all");
    assert.match(report.error ?? "", /^network: /);
    const pending = (await storage.list()).filter((e) => e.status === "pending");
    assert.deepEqual(
      pending.map((e) => [e.key, e.event]),
      before.map((e) => [e.key, e.event]),
    );
  });

  it("keeps retrying a flaky network: an answer in between resets the count", async () => {
    const storage = (await queueOf(1)).storage;
    // 3 network errors, a 503, 3 more, then the answer: never 4 in a row.
    const api = fakeFetch((req, n) =>
      n === 4 ? answer(503, null) : n < 8 ? networkError("Failed to fetch") : req.json().then((e) => answer(201, e)),
    );
    const report = await queueAt(storage, api.fetch).drain();
    assert.deepEqual(report, { sent: 1, replayed: 0, conflicts: 0, rejected: 0, retries: 7 });
  });

  it("does not count timeouts: a slow server is there", async () => {
    const storage = (await queueOf(1)).storage;
    const api = fakeFetch((req, n, signal) => (n <= 5 ? hangUntilAborted(signal) : req.json().then((e) => answer(201, e))));
    const report = await queueAt(storage, api.fetch, { retry: instantRetry({ timeoutMs: 20 }).retry }).drain();
    assert.deepEqual(report, { sent: 1, replayed: 0, conflicts: 0, rejected: 0, retries: 5 });
  });

  it("stops as offline, sending nothing, while the device says it is offline; then drains", async () => {
    const storage = (await queueOf(2)).storage;
    const api = fakeFetch((req) => req.json().then((e) => answer(201, e)));
    let online = false;
    const q = queueAt(storage, api.fetch, { online: () => online });
    assert.deepEqual(await q.drain(), {
      sent: 0,
      replayed: 0,
      conflicts: 0,
      rejected: 0,
      retries: 0,
      stopped: "offline",
      error: "the browser is offline",
    });
    assert.equal(api.seen.length, 0);
    online = true;
    assert.equal((await q.drain()).sent, 2);
  });

  it("stops as offline when the device goes offline during a failing request", async () => {
    const storage = (await queueOf(1)).storage;
    let online = true;
    const api = fakeFetch(() => {
      online = false;
      return networkError("Failed to fetch");
    });
    const q = queueAt(storage, api.fetch, { online: () => online });
    const report = await q.drain();
    assert.equal(report.stopped, "offline");
    assert.equal(api.seen.length, 1);
  });

  it("follows no redirect, so the token reaches no other server: it stops as unreachable at once", { timeout: 10_000 }, async () => {
    // Another origin, which would take the request and the token as the API would.
    const elsewhere: string[] = [];
    const other = await listen((req, res) => {
      elsewhere.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res.writeHead(201, { "content-type": "application/json" }).end("{}");
    });
    const api = await listen((req, res) => {
      res.writeHead(307, { location: `${other.url}${req.url}` }).end();
    });
    try {
      const storage = (await queueOf(2)).storage;
      const report = await queueAt(storage, globalThis.fetch, { baseUrl: api.url }).drain();
      assert.equal(report.stopped, "unreachable");
      assert.equal(report.retries, 0, "a redirect is not retried");
      assert.match(report.error ?? "", /redirect/);
      assert.equal((await storage.list()).length, 2);
      await assert.rejects(
        async () => {
          for await (const _ of pullEvents({ baseUrl: api.url, getToken: () => TOKEN, retry: instantRetry().retry })) {
            // nothing is read
          }
        },
        (err) => err instanceof PullStopped && err.reason === "unreachable",
      );
      assert.deepEqual(elsewhere, [], "no request reached the other origin");
    } finally {
      await api.close();
      await other.close();
    }
  });
});

/** A real HTTP server on a loopback port. */
async function listen(handler: Parameters<typeof createHttpServer>[1]) {
  const server: Server = createHttpServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
