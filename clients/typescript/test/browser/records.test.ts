import assert from "node:assert/strict";
import { it } from "node:test";
import type { Page } from "playwright-core";
import { localToken } from "../server.js";
import { addNote, notesRig } from "./harness.js";

/**
 * The notes example's records in Chromium, against make run: offline, a
 * tick, a rename and a delete show at once; the page reloaded offline
 * (from its service worker) shows them again from IndexedDB; online, each
 * change is stored once as an ordinary event, and a second profile shows
 * the same notes.
 */

const user = `records-${crypto.randomUUID()}`;
const token = localToken(user);
const rig = notesRig({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" }, token);

/** The personal notes a page shows: [text, done, pending] of each, newest first. */
const notes = (page: Page) =>
  page
    .locator("#notes li")
    .evaluateAll((lis) =>
      lis.map((li) => [
        li.querySelector("span")?.textContent ?? "",
        (li.querySelector("input[data-action=tick]") as HTMLInputElement).checked,
        li.classList.contains("pending"),
      ]),
    );

/** The user's events as the server lists them: [type, the note's id, fields]. */
async function stored(): Promise<[string, string, unknown][]> {
  const r = await fetch(`${rig.service.url}/api/v1/sync/events?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(r.status, 200);
  const page = (await r.json()) as { events: { type: string; payload: { id: string; fields?: unknown } }[] };
  return page.events.map((e) => [e.type, e.payload.id, e.payload.fields]);
}

it("the notes example's records: a tick, a rename and a delete shown at once offline, kept across a reload offline, each stored once", async () => {
  const context = await rig.browser.newContext();
  const page = await context.newPage();
  await page.goto(rig.example.origin);
  for (const text of ["oat milk", "bread"]) {
    await addNote(page, text);
    await page.waitForSelector(`#notes li:has-text("${text}")`);
  }
  await page.waitForSelector("#sync:has-text('synced')").catch(async (err: Error) => {
    // What the page said instead, so that a failure here explains itself.
    const said = await Promise.all(["#sync", "#network", "#waiting", "#live"].map((s) => page.locator(s).textContent()));
    throw new Error(`${err.message}\nthe page said: sync ${said[0]}, network ${said[1]}, ${said[2]}, live ${said[3]}`);
  });
  await page.waitForSelector("#notes li:nth-child(2):not(.pending)");
  const [bread, milk] = await page.locator("#notes li").evaluateAll((lis) => lis.map((li) => (li as HTMLElement).dataset.id ?? ""));
  assert.deepEqual(await notes(page), [
    ["bread", false, false],
    ["oat milk", false, false],
  ]);
  // The page's service worker, which lets it open offline, has taken it over.
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);

  await context.setOffline(true);
  const item = (id: string | undefined) => page.locator(`#notes li[data-id="${id}"]`);
  await item(milk).locator("[data-action=tick]").click();
  page.once("dialog", (d) => void d.accept("oat milk, 2 l"));
  await item(milk).locator("[data-action=rename]").click();
  await item(bread).locator("[data-action=delete]").click();
  await page.waitForSelector("#waiting:has-text('3 waiting')");
  assert.deepEqual(await notes(page), [["oat milk, 2 l", true, true]], "all three shown at once, offline");
  assert.equal(await item(bread).count(), 0);

  await page.reload(); // offline: the page from its service worker, the notes from IndexedDB
  await page.waitForSelector("#waiting:has-text('3 waiting')");
  assert.deepEqual(await notes(page), [["oat milk, 2 l", true, true]], "the same after a reload offline");
  assert.equal(await page.locator("#network").textContent(), "offline");
  assert.equal((await stored()).length, 2, "nothing more reached the server while offline");

  await context.setOffline(false);
  await page.waitForSelector("#waiting:has-text('0 waiting')");
  await page.waitForSelector("#sync:has-text('synced')");
  assert.deepEqual(await notes(page), [["oat milk, 2 l", true, false]]);
  assert.deepEqual(await stored(), [
    ["record.put", milk, { text: "oat milk", done: false }],
    ["record.put", bread, { text: "bread", done: false }],
    ["record.patch", milk, { done: true }],
    ["record.patch", milk, { text: "oat milk, 2 l" }],
    ["record.delete", bread, undefined],
  ]);

  // Another device of the user: a fresh profile, which has the notes only by pulling them.
  const other = await (await rig.browser.newContext()).newPage();
  await other.goto(rig.example.origin);
  await other.waitForSelector("#sync:has-text('synced')");
  assert.deepEqual(await notes(other), [["oat milk, 2 l", true, false]]);
});
