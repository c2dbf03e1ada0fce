import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { after, before, it } from "node:test";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { localToken, startService } from "../server.js";
import { launch } from "./harness.js";

/**
 * The React binding in Chromium: useSyncState over a SyncClient on the
 * browser's IndexedDB, against make run's server. A write shows at once
 * and settles; only the components whose slice changed re-render; a
 * reload with the API unreachable shows the last state from IndexedDB.
 */

let browser: Browser;
let service: { url: string; stop: () => void };
let page: { origin: string; close: () => void };

before(async () => {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, "../../../test/browser/react-page.ts")],
    bundle: true,
    format: "esm",
    target: "es2022",
    define: { "process.env.NODE_ENV": '"development"' },
    write: false,
  });
  const js = out.outputFiles[0]?.text ?? "";
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/app.js")) {
      res.writeHead(200, { "content-type": "text/javascript" }).end(js);
    } else {
      res
        .writeHead(200, { "content-type": "text/html" })
        .end('<!doctype html><div id="root"></div><script type="module" src="/app.js"></script>');
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  page = { origin: `http://localhost:${(server.address() as AddressInfo).port}`, close: () => server.close() };
  service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  service?.stop();
  page?.close();
});

interface AppWindow {
  app: { client: { write(t: string, p: unknown): Promise<unknown> }; renders: { notes: number; status: number; space: number } };
}

it("useSyncState in Chromium: a write shows at once, only the changed slices re-render, and a reload with the API unreachable shows the last state", async () => {
  const user = `react-${crypto.randomUUID()}`;
  const q = new URLSearchParams({ user, token: localToken(user), api: service.url });
  const context = await browser.newContext();
  const tab = await context.newPage();
  await tab.goto(`${page.origin}/?${q}`);
  await tab.waitForSelector("#status:has-text('synced')");
  const before = await tab.evaluate(() => ({ ...(window as unknown as AppWindow).app.renders }));

  await context.setOffline(true);
  await tab.evaluate(() => (window as unknown as AppWindow).app.client.write("note.created", { text: "from React" }));
  await tab.waitForSelector("#notes li:has-text('from React')");
  await tab.waitForSelector("#status:has-text('offline')");
  await context.setOffline(false);
  await tab.waitForSelector("#status:has-text('synced')");
  const afterWrite = await tab.evaluate(() => ({ ...(window as unknown as AppWindow).app.renders }));
  assert.ok(afterWrite.notes > before.notes, "the notes list re-rendered");
  assert.ok(afterWrite.status > before.status, "the status re-rendered");
  assert.equal(afterWrite.space, before.space, "a slice that did not change never re-rendered");
  // The note is confirmed now: the state object changed once more (confirmed + nothing pending), the text stays.
  assert.deepEqual(await tab.locator("#notes li").allTextContents(), ["from React"]);

  // Reloaded with the API unreachable (its requests held, never answered): the state shows from IndexedDB.
  await context.route(`${service.url}/**`, () => {});
  await tab.reload();
  await tab.waitForSelector("#notes li:has-text('from React')");
  assert.notEqual(await tab.locator("#status").textContent(), "synced", "shown before any answer");
  await context.close();
});
