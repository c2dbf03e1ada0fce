import assert from "node:assert/strict";
import { it } from "node:test";
import { asUser, localToken } from "../server.js";
import { addNote, notesRig } from "./harness.js";

/**
 * Retention in Chromium, on the notes example against make run keeping
 * events one second: a device that pulled its notes goes away; meanwhile
 * the event that made one of them is deleted and everything but the
 * newest note is trimmed, the deletion's notice with it. Back, the page's
 * pull is told CURSOR_EXPIRED, starts over, and shows exactly what the
 * server lists: not the note whose event was deleted, which only starting
 * over could drop (records change by record events, not by deletions).
 */

const KEEP_MS = 1000;
const token = localToken(`retention-${crypto.randomUUID()}`);
const rig = notesRig({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0", EVENT_RETENTION: `${KEEP_MS}ms` }, token);

/** The notes' record.put events the server lists: [event id, the note's id]. */
async function puts(): Promise<[string, string][]> {
  const r = await asUser(rig.service.url, token)("GET", "/api/v1/sync/events?limit=1000");
  assert.equal(r.status, 200);
  const page = (await r.json()) as { events: { id: string; type: string; payload: { id?: string } }[] };
  return page.events.filter((e) => e.type === "record.put").map((e) => [e.id, e.payload.id ?? ""]);
}

it("a page behind the retention floor starts over and shows exactly what the server lists", async () => {
  const context = await rig.browser.newContext();
  let page = await context.newPage();
  await page.goto(rig.example.origin);
  for (const n of ["oat milk", "bread"]) {
    await addNote(page, n);
  }
  await page.waitForSelector("#waiting:has-text('0 waiting')");
  await page.waitForSelector("#notes li:not(.pending) >> nth=1");
  const milk = await page.locator("#notes li:has-text('oat milk')").getAttribute("data-id");
  assert.ok(milk);
  await page.close(); // the device goes away, its notes and cursor kept

  const call = asUser(rig.service.url, token);
  const made = (await puts()).find(([, note]) => note === milk)?.[0];
  assert.equal((await call("DELETE", `/api/v1/sync/events/${made}`)).status, 200);
  await new Promise((r) => setTimeout(r, KEEP_MS + 200));
  const kept = crypto.randomUUID();
  const posted = await call("POST", "/api/v1/sync/events", {
    id: crypto.randomUUID(),
    type: "record.put",
    occurredAt: new Date().toISOString(),
    payload: { collection: "note", id: kept, fields: { text: "eggs", done: false } },
  });
  assert.equal(posted.status, 201); // its commit trims the rest

  page = await context.newPage();
  await page.goto(rig.example.origin);
  await page.waitForFunction(
    () => {
      const items = [...document.querySelectorAll("#notes li")];
      return items.length === 1 && items[0]?.textContent?.includes("eggs");
    },
    undefined,
    { timeout: 15_000 },
  );
  const shown = await page.locator("#notes li").evaluateAll((lis) => lis.map((li) => (li as HTMLElement).dataset.id));
  assert.deepEqual(
    shown,
    (await puts()).map(([, note]) => note),
    "the page holds what the server lists",
  );
  assert.deepEqual(shown, [kept]);
  await context.close();
});
