// Serves the notes example on http://localhost:5173 (PORT): index.html, and
// app.ts bundled by esbuild with @sync-events/client taken from the
// repository's source. The page calls SYNC_EVENTS_API (make run's
// http://127.0.0.1:3000 by default) with SYNC_EVENTS_TOKEN as its bearer
// token; without one, an unsigned token for the user the page's address
// names (?user=alice: letters, digits and dashes), "notes-demo" if none,
// which only make run accepts; the live channel beside make run's API, or
// SYNC_EVENTS_LIVE_URL and SYNC_EVENTS_LIVE_HOST (the stack's outputs).
// Run by `make example`.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
// The example uses the client's own pinned esbuild (clients/typescript's lockfile).
const { build } = createRequire(here("../../clients/typescript/package.json"))("esbuild");

const port = Number(process.env.PORT ?? 5173);
const apiUrl = process.env.SYNC_EVENTS_API ?? "http://127.0.0.1:3000";
const unsigned = (sub) => `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify({ sub })).toString("base64url")}.unsigned`;
const fixedToken = process.env.SYNC_EVENTS_TOKEN;
/** The token for a page that asked for ?user=<name> (only without SYNC_EVENTS_TOKEN); undefined for a name that is none. */
const tokenFor = (url) => {
  if (fixedToken) {
    return fixedToken;
  }
  const user = url.searchParams.get("user") ?? "notes-demo";
  return /^[A-Za-z0-9-]{1,64}$/.test(user) ? unsigned(user) : undefined;
};
// The live channel: the stack's LiveRealtimeUrl and LiveHttpHost outputs;
// make run serves its stand-in beside the API.
const api = new URL(apiUrl);
const live = process.env.SYNC_EVENTS_LIVE_URL
  ? { realtimeUrl: process.env.SYNC_EVENTS_LIVE_URL, httpHost: process.env.SYNC_EVENTS_LIVE_HOST ?? "" }
  : { realtimeUrl: `${api.protocol === "https:" ? "wss" : "ws"}://${api.host}/event/realtime`, httpHost: api.host };

const bundle = async () =>
  (
    await build({
      entryPoints: [here("app.ts")],
      bundle: true,
      format: "esm",
      target: "es2022",
      sourcemap: "inline",
      alias: { "@sync-events/client": here("../../clients/typescript/src/index.ts") },
      write: false,
      logLevel: "warning",
    })
  ).outputFiles[0].text;

// app.js is bundled at each request, so that an edit to app.ts shows on reload.
const files = {
  "/": () => ["text/html", readFileSync(here("index.html"))],
  "/app.js": async () => ["text/javascript", await bundle()],
  "/sw.js": () => ["text/javascript", readFileSync(here("sw.js"))],
  "/config.json": (url) => {
    const token = tokenFor(url);
    if (token === undefined) {
      throw new RangeError("?user= takes letters, digits and dashes (64 at most)");
    }
    return ["application/json", JSON.stringify({ apiUrl, token, live })];
  },
};

await bundle(); // fail now, not at the first page view, if app.ts does not build
createServer(async (req, res) => {
  const url = new URL(req.url ?? "/", "http://x");
  const file = files[url.pathname];
  if (!file) {
    res.writeHead(404).end();
    return;
  }
  try {
    const [type, body] = await file(url);
    res.writeHead(200, { "content-type": type, "cache-control": "no-store" }).end(body);
  } catch (err) {
    res.writeHead(err instanceof RangeError ? 400 : 500, { "content-type": "text/plain" }).end(String(err));
  }
}).listen(port, "127.0.0.1", () => {
  console.log(`notes example: http://localhost:${port}  (API ${apiUrl})`);
});
