import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type * as Client from "../../src/parts.js";
import { FaultProxy, type FaultProxyOptions } from "../fault-proxy.js";
import { localToken, startService } from "../server.js";
import { clientBundle, INSECURE_HOST, launch, servePage, storedIds } from "./harness.js";

declare global {
  interface Window {
    client: typeof Client;
    ready: boolean;
  }
}

/**
 * The client in a real browser (Debian's Chromium) against make run's
 * server, from pages on other origins: each scenario counts the events the
 * server stored, which must be exactly the events written, each once.
 */

let browser: Browser;
let service: { url: string; stop: () => void };
let secure: Awaited<ReturnType<typeof servePage>>; // http://localhost:P; also http://lan.test:P, a secure context make run does not allow
let allowed: Awaited<ReturnType<typeof servePage>>; // http://lan.test:Q, not a secure context, allowed by CORS_ALLOW_ORIGINS
const proxies: FaultProxy[] = [];

before(async () => {
  const bundle = await clientBundle();
  secure = await servePage(bundle);
  allowed = await servePage(bundle);
  // Each user's rate limits off: these tests send one event a request, at
  // machine speed, and count the POSTs; a 429 resent would count twice.
  service = await startService({
    CORS_ALLOW_ORIGINS: `http://${INSECURE_HOST}:${allowed.port}`,
    CHANGES_PER_SECOND: "0",
    READS_PER_SECOND: "0",
  });
  // An https site of another origin than make run allows, as far as the
  // page can tell: a secure context, refused by CORS.
  browser = await launch([`http://${INSECURE_HOST}:${secure.port}`]);
  console.log(`# ${browser.browserType().name()} ${browser.version()}`);
});

after(async () => {
  await browser?.close();
  for (const p of proxies) {
    await p.close();
  }
  service?.stop();
  await secure?.close();
  await allowed?.close();
});

const NO_FAULTS = { reset_before_forwarding: 0, drop_after_answer: 0, delay_past_timeout: 0, answer_503: 0 };

async function proxy(o: Omit<FaultProxyOptions, "upstream">) {
  const p = await FaultProxy.start({ upstream: service.url, ...o });
  proxies.push(p);
  return p;
}

async function open(context: BrowserContext, origin: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => window.ready === true);
  return page;
}

/** Writes n events into the page's IndexedDB queue of user; returns their ids. */
function write(page: Page, user: string, n: number, from = 0): Promise<string[]> {
  return page.evaluate(
    async ({ user, n, from }) => {
      const writer = new window.client.EventWriter(new window.client.IndexedDBStorage({ user }));
      const ids: string[] = [];
      for (let i = from; i < from + n; i++) {
        ids.push((await writer.write("note.created", { i, title: `note ${i}` })).event.id);
      }
      return ids;
    },
    { user, n, from },
  );
}

interface DrainSettings {
  /** Whose queue: the storage's user. */
  user: string;
  api: string;
  /** The token sent; the queue's user's by default. */
  token?: string;
  maxEvents?: number;
  /** Drain again after a stop, up to this many drains in all (1: once). */
  drains?: number;
}

/**
 * Drains the page's queue of s.user: what the drains sent, replayed and
 * retried in all, with the last drain's stop and how many drains it took.
 * Each drain has a signal, aborted after a minute: a drain that does not
 * end by itself fails the test as "aborted".
 */
function drain(page: Page, s: DrainSettings) {
  return page.evaluate(
    async ({ s, token }) => {
      const q = new window.client.SyncQueue({
        storage: new window.client.IndexedDBStorage({ user: s.user }),
        baseUrl: s.api,
        getToken: () => token,
        retry: { baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 1000 },
        ...(s.maxEvents ? { batch: { maxEvents: s.maxEvents } } : {}),
      });
      const total = { sent: 0, replayed: 0, retries: 0 };
      let report: Client.DrainReport;
      let drains = 0;
      do {
        drains++;
        const give = new AbortController();
        const timer = setTimeout(() => give.abort(), 60_000);
        report = await q.drain({ signal: give.signal });
        clearTimeout(timer);
        total.sent += report.sent;
        total.replayed += report.replayed;
        total.retries += report.retries;
      } while (report.stopped && drains < (s.drains ?? 1));
      return { ...report, ...total, drains };
    },
    { s, token: s.token ?? tokenOf(s.user) },
  );
}

function pending(page: Page, user: string): Promise<number> {
  return page.evaluate(
    async (user) => (await new window.client.IndexedDBStorage({ user }).list()).filter((e) => e.status === "pending").length,
    user,
  );
}

/** The server holds exactly the written events, each once. */
async function assertStoredExactly(user: string, written: string[]) {
  const ids = await storedIds(service.url, tokenOf(user));
  assert.equal(ids.length, written.length, `stored ${ids.length} events, wrote ${written.length}`);
  assert.equal(new Set(ids).size, ids.length, "no event stored twice");
  assert.deepEqual([...ids].sort(), [...written].sort());
}

/** A fresh user of make run's: their sub. tokenOf(sub) is a token of theirs. */
const newUser = (name: string) => `browser-${name}-${crypto.randomUUID()}`;
const tokenOf = (sub: string) => localToken(sub);

/** Resolves as p does, or fails after ms saying what did not happen. */
function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe("in Chromium", () => {
  it("50 events written offline survive closing and reopening the page, then are stored once, cross-origin against make run", async () => {
    const user = newUser("offline");
    const context = await browser.newContext();
    const page = await open(context, `http://localhost:${secure.port}`);
    await context.setOffline(true);
    const written = await write(page, user, 50);
    const offline = await drain(page, { user, api: service.url });
    assert.equal(offline.stopped, "offline");
    assert.equal(offline.sent, 0);
    await page.close(); // the app closed while offline

    await context.setOffline(false);
    const reopened = await open(context, `http://localhost:${secure.port}`);
    assert.equal(await pending(reopened, user), 50);
    await reopened.reload();
    await reopened.waitForFunction(() => window.ready === true);
    assert.equal(await pending(reopened, user), 50, "the queue survives a reload");
    const online = await drain(reopened, { user, api: service.url });
    assert.equal(online.stopped, undefined);
    assert.equal(online.sent, 50);
    assert.equal(await pending(reopened, user), 0);
    await assertStoredExactly(user, written);
    await context.close();
  });

  it("a shared device: A writes offline and logs out, B logs in; nothing of A's reaches B's account, and clear() leaves nothing of A's", async () => {
    const a = newUser("shared-a");
    const b = newUser("shared-b");
    const context = await browser.newContext(); // one browser profile: the device
    const page = await open(context, `http://localhost:${secure.port}`);
    await context.setOffline(true);
    const writtenA = await write(page, a, 3);
    assert.equal((await drain(page, { user: a, api: service.url })).stopped, "offline");

    // A logs out, the app keeping A's notes for A's return; B logs in, online, and writes.
    await context.setOffline(false);
    const writtenB = await write(page, b, 2);
    const drainedB = await drain(page, { user: b, api: service.url });
    const inB = await storedIds(service.url, tokenOf(b));
    assert.deepEqual(
      writtenA.filter((id) => inB.includes(id)),
      [],
      "none of A's events is in B's account",
    );
    await assertStoredExactly(b, writtenB);
    await assertStoredExactly(a, []);
    assert.deepEqual([drainedB.sent, drainedB.stopped], [2, undefined]);
    assert.equal(await pending(page, a), 3, "A's notes wait for A");

    // An app that kept A's queue after the switch drains it with B's token: nothing is sent.
    const wrong = await drain(page, { user: a, api: service.url, token: tokenOf(b) });
    assert.deepEqual([wrong.stopped, wrong.sent, wrong.retries], ["wrong_user", 0, 0]);
    await assertStoredExactly(b, writtenB);
    await assertStoredExactly(a, []);

    // A logs out for good: the app calls clear(), and A's database is gone, payloads and all.
    const databases = await page.evaluate(async (a) => {
      const storage = new window.client.IndexedDBStorage({ user: a });
      await storage.clear();
      return { gone: storage.database, left: (await indexedDB.databases()).map((d) => d.name) };
    }, a);
    assert.ok(!databases.left.includes(databases.gone), `A's database ${databases.gone} is gone: ${databases.left}`);
    assert.equal(databases.left.length, 1, "B's database is left");
    assert.equal(await pending(page, a), 0);
    const again = await drain(page, { user: a, api: service.url });
    assert.deepEqual([again.sent, again.stopped], [0, undefined]);
    await assertStoredExactly(a, []);
    await context.close();
  });

  it("100 events through seeded faults, the page reloaded while a request is held, are stored once", async () => {
    const user = newUser("faults");
    const BATCH = "POST /api/v1/sync/events/batch";
    const p = await proxy({
      seed: 20261203,
      rates: { reset_before_forwarding: 0.05, drop_after_answer: 0.05, delay_past_timeout: 0.05, answer_503: 0.04 },
      // Each fault once, whatever the draw, on the first batch requests.
      first: { [BATCH]: ["reset_before_forwarding", "drop_after_answer", "delay_past_timeout", "answer_503"] },
      delayMs: 1200,
      latencyMs: 100,
    });
    // The 6th batch request is held, unforwarded, while the page reloads.
    const hold = p.hold(BATCH, 6);
    const context = await browser.newContext();
    const page = await open(context, `http://localhost:${secure.port}`);
    const written = await write(page, user, 100);
    const settings = { user, api: p.url, maxEvents: 10, drains: 50 };
    const first = drain(page, settings).catch((err: Error) => err); // cut short by the reload
    // About 2 s of faults and retries before it (the 1.2 s delay the most):
    // 30 s is a bound that only a broken run reaches.
    await within(30_000, "the 6th batch request held", hold.held);
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    assert.ok((await first) instanceof Error, "the reload cut the first drain short");
    await hold.release(); // now the server stores that batch, and its answer finds no page
    const rest = await drain(page, settings);
    assert.equal(rest.stopped, undefined, `drains after the reload: ${JSON.stringify(rest)}`);
    assert.equal(await pending(page, user), 0);
    console.log(`# faults injected: ${JSON.stringify(p.injected)}; requests: ${JSON.stringify(Object.fromEntries(p.received))}`);
    for (const [fault, n] of Object.entries(p.injected)) {
      assert.ok(n >= 1, `fault ${fault} injected ${n} times`);
    }
    assert.ok(rest.replayed >= 10, `the held batch, stored after the reload, is answered as a replay: ${JSON.stringify(rest)}`);
    await assertStoredExactly(user, written);
    await context.close();
  });

  it("two tabs draining one queue send each of 120 events once (one drains, under the Web Lock)", async () => {
    const user = newUser("tabs");
    const p = await proxy({ seed: 1, rates: NO_FAULTS, delayMs: 0, latencyMs: 5 });
    const context = await browser.newContext();
    const a = await open(context, `http://localhost:${secure.port}`);
    const b = await open(context, `http://localhost:${secure.port}`);
    const written = [...(await write(a, user, 60)), ...(await write(b, user, 60, 60))];
    const settings = { user, api: p.url, maxEvents: 1 };
    const [ra, rb] = await Promise.all([drain(a, settings), drain(b, settings)]);
    assert.deepEqual(
      [ra.sent, rb.sent].sort((x, y) => x - y),
      [0, 120],
      `one tab drains it all, the other waits for the lock and finds it empty: ${JSON.stringify([ra, rb])}`,
    );
    assert.equal(p.received.get("POST /api/v1/sync/events"), 120, "one POST per event");
    assert.equal(ra.sent + rb.sent, 120, `tab reports ${JSON.stringify([ra, rb])}`);
    assert.equal(ra.replayed + rb.replayed, 0);
    await assertStoredExactly(user, written);
    await context.close();
  });

  it("a page of an origin make run does not allow: the drain stops as unreachable, nothing lost, nothing stored", async () => {
    const user = newUser("refused");
    const context = await browser.newContext();
    const page = await open(context, `http://${INSECURE_HOST}:${secure.port}`);
    assert.equal(await page.evaluate(() => window.isSecureContext), true);
    await write(page, user, 5);
    const report = await drain(page, { user, api: service.url });
    assert.equal(report.stopped, "unreachable");
    assert.match(report.error ?? "", /^network: /);
    assert.equal(await pending(page, user), 5);
    await assertStoredExactly(user, []);
    await context.close();
  });

  it("on a plain-HTTP origin that is not localhost (no randomUUID, no Web Locks), 30 events are stored once, and a replay is readable", async () => {
    const user = newUser("insecure");
    const context = await browser.newContext();
    const page = await open(context, `http://${INSECURE_HOST}:${allowed.port}`);
    const here = await page.evaluate(() => ({
      secure: window.isSecureContext,
      randomUUID: typeof crypto.randomUUID,
      locks: typeof navigator.locks,
    }));
    assert.deepEqual(here, { secure: false, randomUUID: "undefined", locks: "undefined" });
    const written = await write(page, user, 30);
    const report = await drain(page, { user, api: service.url });
    assert.equal(report.sent, 30);
    await assertStoredExactly(user, written);

    // A cross-origin page reads Idempotent-Replayed only if it is exposed.
    const replayed = await page.evaluate(
      async ({ api, token }) => {
        const id = window.client.uuidv4();
        const send = () =>
          fetch(`${api}/api/v1/sync/events`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": id },
            body: JSON.stringify({ id, type: "note.created", occurredAt: new Date(0).toISOString(), payload: {} }),
          });
        const first = await send();
        const again = await send();
        return [first.status, first.headers.get("idempotent-replayed"), again.status, again.headers.get("idempotent-replayed")];
      },
      { api: service.url, token: tokenOf(user) },
    );
    assert.deepEqual(replayed, [201, null, 201, "true"]);
    await context.close();
  });

  it("below the newest APIs (no AbortSignal.any or .timeout, structuredClone, randomUUID, Web Locks), 40 events through faults are stored once", async () => {
    const user = newUser("floor");
    const p = await proxy({
      seed: 7,
      rates: { reset_before_forwarding: 0.05, drop_after_answer: 0.05, delay_past_timeout: 0.1, answer_503: 0.05 },
      delayMs: 1200,
    });
    const context = await browser.newContext();
    await context.addInitScript(() => {
      for (const [owner, name] of [
        [AbortSignal, "any"],
        [AbortSignal, "timeout"],
        [globalThis, "structuredClone"],
        [Crypto.prototype, "randomUUID"],
        [Navigator.prototype, "locks"],
      ] as const) {
        Reflect.deleteProperty(owner, name);
      }
    });
    const page = await open(context, `http://localhost:${secure.port}`);
    const gone = await page.evaluate(() => [
      typeof AbortSignal.any,
      typeof AbortSignal.timeout,
      typeof structuredClone,
      typeof crypto.randomUUID,
      typeof navigator.locks,
    ]);
    assert.deepEqual(gone, ["undefined", "undefined", "undefined", "undefined", "undefined"]);
    const written = await write(page, user, 40);
    const report = await drain(page, { user, api: p.url, maxEvents: 5, drains: 20 });
    assert.equal(report.stopped, undefined, JSON.stringify(report));
    await assertStoredExactly(user, written);
    await context.close();
  });
});
