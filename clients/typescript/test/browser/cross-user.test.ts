import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { after, before, it } from "node:test";
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import type * as Sync from "../../src/index.js";
import { asUser, localToken, startService } from "../server.js";
import { launch } from "./harness.js";

/**
 * Another user's token in Chromium: carol's client over the browser's
 * IndexedDB, with the live channel of make run's Event API stand-in, is
 * reloaded while getToken gives alice's token (a sign-in as alice with
 * carol's client still made). It stops with wrong_user before any request
 * or WebSocket: carol's kept state and cursor stay as they were, none of
 * alice's notes shows, and alice's writes poke nothing. Reloaded with
 * carol's token, it goes live and pulls carol's note of the meantime.
 */

declare global {
  interface Window {
    sync: typeof Sync;
  }
}

let browser: Browser;
let service: { url: string; stop: () => void };
let origin: string;
let closePage: () => void;

before(async () => {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, "../../../src/index.ts")],
    bundle: true,
    format: "esm",
    target: "es2022",
    write: false,
  });
  const js = out.outputFiles[0]?.text ?? "";
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/client.js")) {
      res.writeHead(200, { "content-type": "text/javascript", "cache-control": "no-store" }).end(js);
    } else {
      res
        .writeHead(200, { "content-type": "text/html", "cache-control": "no-store" })
        .end('<!doctype html><script type="module">import * as sync from "/client.js"; window.sync = sync;</script>');
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://localhost:${(server.address() as AddressInfo).port}`;
  closePage = () => server.close();
  service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  service?.stop();
  closePage?.();
});

async function post(user: string, text: string): Promise<void> {
  const r = await asUser(service.url, localToken(user))("POST", "/api/v1/sync/events", {
    id: crypto.randomUUID(),
    type: "note.created",
    occurredAt: "2026-12-07T10:00:00Z",
    payload: { text },
  });
  assert.equal(r.status, 201);
}

interface Opened {
  status: Sync.SyncStatus;
  channel: string;
  texts: string[];
  view: Sync.KeptView | undefined;
}

/**
 * Loads the page, makes carol's client with `token` (write: a note first),
 * waits until `until` holds of its state (a status kind, or a channel
 * "live" with "synced"), and tells its status, channel, notes and kept view.
 */
async function open(
  page: Page,
  o: { user: string; token: string; until: "stopped" | "live"; write?: string; wait?: number },
): Promise<Opened> {
  await page.goto(origin);
  await page.waitForFunction(() => window.sync !== undefined);
  const host = new URL(service.url).host;
  return page.evaluate(
    async ({ o, api, host }) => {
      const c = window.sync.createSyncClient<Record<string, string>>({
        baseUrl: api,
        user: o.user,
        getToken: () => o.token,
        initial: {},
        reduce: (s, e) => (e.kind === "event" ? { ...s, [e.id]: String(e.payload.text) } : s),
        live: { realtimeUrl: `ws://${host}/event/realtime`, httpHost: host },
        pollIntervalMs: 60_000,
      });
      if (o.write !== undefined) {
        await c.write("note.created", { text: o.write });
      }
      const done = (s: typeof c.state) =>
        o.until === "stopped" ? s.status.kind === "stopped" : s.mine.channel === "live" && s.status.kind === "synced";
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`not ${o.until}: ${JSON.stringify(c.state)}`)), 10_000);
        const check = () => {
          if (done(c.state)) {
            clearTimeout(timer);
            ok();
          }
        };
        c.subscribe(check);
        check();
      });
      await new Promise((r) => setTimeout(r, o.wait ?? 0));
      const s = c.state;
      c.close();
      const view = await window.sync.indexedDBStorage().open(o.user, "me").loadView();
      return { status: s.status, channel: s.mine.channel, texts: Object.values(s.mine.state).sort(), view };
    },
    { o, api: service.url, host },
  );
}

it("carol's client reloaded with alice's token: stopped, wrong_user; no request, no socket, nothing of alice's kept; carol's token carries on", async () => {
  const carol = `carol-${crypto.randomUUID()}`;
  const alice = `alice-${crypto.randomUUID()}`;
  for (const text of ["alice 1", "alice 2", "alice 3"]) {
    await post(alice, text);
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  const first = await open(page, { user: carol, token: localToken(carol), until: "live", write: "carol's" });
  assert.deepEqual(first.texts, ["carol's"]);
  assert.ok(first.view?.cursor !== undefined, "carol's cursor kept in IndexedDB");

  // Each request to the API and each WebSocket the page makes from here, as alice's token is given.
  const seen: string[] = [];
  page.on("request", (r) => {
    if (r.url().startsWith(service.url)) {
      seen.push(`${r.method()} ${r.url()}`);
    }
  });
  page.on("websocket", (ws) => seen.push(`websocket ${ws.url()}`));
  // alice writes while the page runs: a poke on her channel, had it been subscribed.
  const poke = setTimeout(() => void post(alice, "alice 4"), 200);
  const wrong = await open(page, { user: carol, token: localToken(alice), until: "stopped", wait: 800 });
  clearTimeout(poke);
  assert.equal(wrong.status.kind === "stopped" && wrong.status.reason, "wrong_user");
  assert.deepEqual(wrong.texts, ["carol's"], "none of alice's notes");
  assert.deepEqual(seen, [], "no request, no socket");
  assert.deepEqual(wrong.view, first.view, "carol's kept state and cursor unchanged");

  await post(carol, "carol's laptop");
  const back = await open(page, { user: carol, token: localToken(carol), until: "live" });
  assert.deepEqual(back.texts, ["carol's", "carol's laptop"], "carol's note of the meantime pulled, none of alice's");
  await context.close();
});
