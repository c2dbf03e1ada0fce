import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { after, before } from "node:test";
import { build } from "esbuild";
import { type Browser, chromium, type Page } from "playwright-core";
import { freePort, startService } from "../server.js";

/** Debian's Chromium, or CHROMIUM. Nothing here downloads a browser. */
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * A host name that is not localhost, resolved by Chromium to loopback: a
 * page served from it is on a plain-HTTP origin that is no secure context,
 * as a phone on the LAN or an HTTP staging host sees the app.
 */
export const INSECURE_HOST = "lan.test";

/**
 * Chromium as the tests run it: headless, as root (no sandbox), and kept
 * off the network it would reach at start (the machine's network is
 * closed); INSECURE_HOST resolves to 127.0.0.1. secureOrigins are treated
 * as secure contexts although they are plain HTTP, as an https site is.
 */
export function launch(secureOrigins: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--host-resolver-rules=MAP ${INSECURE_HOST} 127.0.0.1`,
      ...(secureOrigins.length > 0 ? [`--unsafely-treat-insecure-origin-as-secure=${secureOrigins.join(",")}`] : []),
    ],
  });
}

/** The client's parts (src/parts.ts) bundled for a page, as an ES module, with an inline source map. */
export async function clientBundle(): Promise<string> {
  const out = await build({
    entryPoints: [resolve(import.meta.dirname, "../../../src/parts.ts")],
    bundle: true,
    format: "esm",
    target: "es2022",
    sourcemap: "inline",
    write: false,
  });
  return out.outputFiles[0]?.text ?? "";
}

/**
 * The page the tests drive: it loads the client as /client.js and sets
 * window.client to it, then window.ready.
 */
const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>sync-events client</title>
<script type="module">
import * as client from "/client.js";
window.client = client;
window.ready = true;
</script>`;

/** A static server of the test page and the client bundle on a loopback port. */
export async function servePage(bundle: string, port = 0): Promise<{ port: number; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://page").pathname;
    if (path === "/client.js") {
      res.writeHead(200, { "content-type": "text/javascript", "cache-control": "no-store" });
      res.end(bundle);
      return;
    }
    if (path === "/") {
      res.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" });
      res.end(PAGE);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The ids of every event the user has on the server, read page by page with plain fetch. */
export async function storedIds(api: string, token: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const url = new URL("/api/v1/sync/events", api);
    url.searchParams.set("limit", "1000");
    if (cursor) {
      url.searchParams.set("cursor", cursor);
    }
    const r = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    if (r.status !== 200) {
      throw new Error(`GET events: ${r.status} ${await r.text()}`);
    }
    const page = (await r.json()) as { events: { id: string }[]; cursor: string; hasMore: boolean };
    ids.push(...page.events.map((e) => e.id));
    cursor = page.cursor;
    if (!page.hasMore) {
      return ids;
    }
  }
}

/**
 * examples/notes as `make example` serves it (its serve.mjs) against the
 * API at api, with token as its user's: its origin, and stop(). Without a
 * token, as `make example` after `make run`: each page is the user its
 * address names (?user=<name>), "notes-demo" if none.
 */
export async function startNotesExample(api: string, token?: string): Promise<{ origin: string; stop: () => void }> {
  const port = await freePort();
  const { SYNC_EVENTS_TOKEN: _, ...env } = process.env;
  const example: ChildProcess = spawn("node", [resolve(import.meta.dirname, "../../../../../examples/notes/serve.mjs")], {
    env: { ...env, PORT: String(port), SYNC_EVENTS_API: api, ...(token === undefined ? {} : { SYNC_EVENTS_TOKEN: token }) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((ok, fail) => {
    example.stdout?.once("data", () => ok());
    example.once("exit", (code) => fail(new Error(`examples/notes/serve.mjs exited ${code}`)));
  });
  return { origin: `http://localhost:${port}`, stop: () => example.kill() };
}

/** What a browser test of the notes example runs against, once its before hook has run. */
export interface NotesRig {
  service: { url: string; stop: () => void };
  example: { origin: string; stop: () => void };
  browser: Browser;
}

/**
 * make run's server (with env), the notes example against it (token as in
 * startNotesExample) and Chromium, started before the file's tests and
 * stopped after them.
 */
export function notesRig(env: Record<string, string> = {}, token?: string): NotesRig {
  const rig = {} as NotesRig;
  before(async () => {
    rig.service = await startService(env);
    rig.example = await startNotesExample(rig.service.url, token);
    rig.browser = await launch();
  });
  after(async () => {
    await rig.browser?.close();
    rig.example?.stop();
    rig.service?.stop();
  });
  return rig;
}

/**
 * Writes a personal note on the notes example's page, and waits until the
 * page has queued it (it empties the field then): a next fill before that
 * would be emptied by this note's turn, and its submit refused as empty.
 */
export async function addNote(page: Page, text: string): Promise<void> {
  await page.fill("#text", text);
  await page.click("button[type=submit]");
  await page.waitForFunction(() => (document.getElementById("text") as HTMLInputElement).value === "");
}
