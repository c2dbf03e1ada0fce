import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type * as Client from "../../src/index.js";
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
  service = await startService({ CORS_ALLOW_ORIGINS: `http://${INSECURE_HOST}:${allowed.port}` });
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

/** Writes n events into the page's IndexedDB queue db; returns their ids. */
function write(page: Page, db: string, n: number, from = 0): Promise<string[]> {
  return page.evaluate(
    async ({ db, n, from }) => {
      const writer = new window.client.EventWriter(new window.client.IndexedDBStorage(db));
      const ids: string[] = [];
      for (let i = from; i < from + n; i++) {
        ids.push((await writer.write("note.created", { i, title: `note ${i}` })).event.id);
      }
      return ids;
    },
    { db, n, from },
  );
}

interface DrainSettings {
  db: string;
  api: string;
  token: string;
  maxEvents?: number;
  /** Drain again after a stop, up to this many drains in all (1: once). */
  drains?: number;
}

/**
 * Drains the page's queue; the last drain's report, with how many drains it
 * took. Each drain has a signal, aborted after a minute: a drain that does
 * not end by itself fails the test as "aborted".
 */
function drain(page: Page, s: DrainSettings) {
  return page.evaluate(async (s) => {
    const q = new window.client.SyncQueue({
      storage: new window.client.IndexedDBStorage(s.db),
      baseUrl: s.api,
      getToken: () => s.token,
      retry: { baseDelayMs: 20, maxDelayMs: 200, timeoutMs: 1000 },
      ...(s.maxEvents ? { batch: { maxEvents: s.maxEvents } } : {}),
    });
    let report: Client.DrainReport | undefined;
    let drains = 0;
    do {
      drains++;
      const give = new AbortController();
      const timer = setTimeout(() => give.abort(), 60_000);
      report = await q.drain({ signal: give.signal });
      clearTimeout(timer);
    } while (report.stopped && drains < (s.drains ?? 1));
    return { ...report, drains };
  }, s);
}

function pending(page: Page, db: string): Promise<number> {
  return page.evaluate(
    async (db) => (await new window.client.IndexedDBStorage(db).list()).filter((e) => e.status === "pending").length,
    db,
  );
}

/** The server holds exactly the written events, each once. */
async function assertStoredExactly(token: string, written: string[]) {
  const ids = await storedIds(service.url, token);
  assert.equal(ids.length, written.length, `stored ${ids.length} events, wrote ${written.length}`);
  assert.equal(new Set(ids).size, ids.length, "no event stored twice");
  assert.deepEqual([...ids].sort(), [...written].sort());
}

const user = (name: string) => localToken(`browser-${name}-${crypto.randomUUID()}`);

describe("in Chromium", () => {
  it("50 events written offline survive closing and reopening the page, then are stored once, cross-origin against make run", async () => {
    const token = user("offline");
    const context = await browser.newContext();
    const page = await open(context, `http://localhost:${secure.port}`);
    await context.setOffline(true);
    const written = await write(page, "offline", 50);
    const offline = await drain(page, { db: "offline", api: service.url, token });
    assert.equal(offline.stopped, "offline");
    assert.equal(offline.sent, 0);
    await page.close(); // the app closed while offline

    await context.setOffline(false);
    const reopened = await open(context, `http://localhost:${secure.port}`);
    assert.equal(await pending(reopened, "offline"), 50);
    await reopened.reload();
    await reopened.waitForFunction(() => window.ready === true);
    assert.equal(await pending(reopened, "offline"), 50, "the queue survives a reload");
    const online = await drain(reopened, { db: "offline", api: service.url, token });
    assert.equal(online.stopped, undefined);
    assert.equal(online.sent, 50);
    assert.equal(await pending(reopened, "offline"), 0);
    await assertStoredExactly(token, written);
    await context.close();
  });

  it("100 events through seeded faults, the page reloaded while a request is held, are stored once", async () => {
    const token = user("faults");
    const p = await proxy({
      seed: 20261203,
      rates: { reset_before_forwarding: 0.05, drop_after_answer: 0.05, delay_past_timeout: 0.05, answer_503: 0.04 },
      delayMs: 1200,
      latencyMs: 100,
    });
    const context = await browser.newContext();
    const page = await open(context, `http://localhost:${secure.port}`);
    const written = await write(page, "faults", 100);
    const settings = { db: "faults", api: p.url, token, maxEvents: 10, drains: 50 };
    const first = drain(page, settings).catch((err: Error) => err); // cut short by the reload
    for (let i = 0; i < 200 && !((p.received.get("POST /api/v1/sync/events/batch") ?? 0) >= 3 && p.inFlight > 0); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(p.inFlight > 0, "a request is held when the page reloads");
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    assert.ok((await first) instanceof Error, "the reload cut the first drain short");
    const rest = await drain(page, settings);
    assert.equal(rest.stopped, undefined, `drains after the reload: ${JSON.stringify(rest)}`);
    assert.equal(await pending(page, "faults"), 0);
    console.log(`# faults injected: ${JSON.stringify(p.injected)}; requests: ${JSON.stringify(Object.fromEntries(p.received))}`);
    await assertStoredExactly(token, written);
    await context.close();
  });

  it("two tabs draining one queue send each of 120 events once (one drains, under the Web Lock)", async () => {
    const token = user("tabs");
    const p = await proxy({ seed: 1, rates: NO_FAULTS, delayMs: 0, latencyMs: 5 });
    const context = await browser.newContext();
    const a = await open(context, `http://localhost:${secure.port}`);
    const b = await open(context, `http://localhost:${secure.port}`);
    const written = [...(await write(a, "tabs", 60)), ...(await write(b, "tabs", 60, 60))];
    const settings = { db: "tabs", api: p.url, token, maxEvents: 1 };
    const [ra, rb] = await Promise.all([drain(a, settings), drain(b, settings)]);
    assert.equal(p.received.get("POST /api/v1/sync/events"), 120, "one POST per event");
    assert.equal(ra.sent + rb.sent, 120, `tab reports ${JSON.stringify([ra, rb])}`);
    assert.equal(ra.replayed + rb.replayed, 0);
    await assertStoredExactly(token, written);
    await context.close();
  });

  it("a page of an origin make run does not allow: the drain stops as unreachable, nothing lost, nothing stored", async () => {
    const token = user("refused");
    const context = await browser.newContext();
    const page = await open(context, `http://${INSECURE_HOST}:${secure.port}`);
    assert.equal(await page.evaluate(() => window.isSecureContext), true);
    await write(page, "refused", 5);
    const report = await drain(page, { db: "refused", api: service.url, token });
    assert.equal(report.stopped, "unreachable");
    assert.match(report.error ?? "", /^network: /);
    assert.equal(await pending(page, "refused"), 5);
    await assertStoredExactly(token, []);
    await context.close();
  });

  it("on a plain-HTTP origin that is not localhost (no randomUUID, no Web Locks), 30 events are stored once, and a replay is readable", async () => {
    const token = user("insecure");
    const context = await browser.newContext();
    const page = await open(context, `http://${INSECURE_HOST}:${allowed.port}`);
    const here = await page.evaluate(() => ({
      secure: window.isSecureContext,
      randomUUID: typeof crypto.randomUUID,
      locks: typeof navigator.locks,
    }));
    assert.deepEqual(here, { secure: false, randomUUID: "undefined", locks: "undefined" });
    const written = await write(page, "insecure", 30);
    const report = await drain(page, { db: "insecure", api: service.url, token });
    assert.equal(report.sent, 30);
    await assertStoredExactly(token, written);

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
      { api: service.url, token },
    );
    assert.deepEqual(replayed, [201, null, 201, "true"]);
    await context.close();
  });

  it("below the newest APIs (no AbortSignal.any or .timeout, structuredClone, randomUUID, Web Locks), 40 events through faults are stored once", async () => {
    const token = user("floor");
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
    const written = await write(page, "floor", 40);
    const report = await drain(page, { db: "floor", api: p.url, token, maxEvents: 5, drains: 20 });
    assert.equal(report.stopped, undefined, JSON.stringify(report));
    await assertStoredExactly(token, written);
    await context.close();
  });
});
