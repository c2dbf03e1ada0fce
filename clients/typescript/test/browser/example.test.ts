import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { it } from "node:test";
import type { Page } from "playwright-core";
import { localToken } from "../server.js";
import { addNote, notesRig, storedIds } from "./harness.js";

/**
 * examples/notes as a newcomer runs it (its serve.mjs, against make run's
 * server), used in Chromium as a person would: notes written offline, then
 * online; the server and a second device checked. Its screenshots, offline
 * and synced, go to build/, and to docs/images/ with UPDATE_SCREENSHOT=1.
 */

const root = resolve(import.meta.dirname, "../../../../..");
const token = localToken(`notes-${crypto.randomUUID()}`);
const rig = notesRig({}, token);

async function screenshot(page: Page, name: string) {
  const dirs = ["clients/typescript/build", ...(process.env.UPDATE_SCREENSHOT === "1" ? ["docs/images"] : [])];
  for (const dir of dirs) {
    mkdirSync(resolve(root, dir), { recursive: true });
    await page.screenshot({ path: resolve(root, dir, name) });
  }
}

const texts = (page: Page) => page.locator("#notes li > span:first-child").allTextContents();

it("the notes example: written offline, shown as waiting, sent when online, pulled by a second device", async () => {
  const context = await rig.browser.newContext({ viewport: { width: 720, height: 560 } });
  const page = await context.newPage();
  await page.goto(rig.example.origin);
  await page.waitForSelector("#sync:not(:has-text('not synced yet'))");

  await context.setOffline(true);
  const notes = ["Buy oat milk", "Call the plumber about the boiler", "Book train tickets to Lyon"];
  for (const n of notes) {
    await addNote(page, n);
  }
  await page.waitForSelector("#waiting:has-text('3 waiting')");
  assert.equal(await page.locator("#network").textContent(), "offline");
  assert.equal(await page.locator("#notes li.pending").count(), 3);
  assert.deepEqual(await storedIds(rig.service.url, token), [], "nothing reached the server while offline");
  await screenshot(page, "notes-offline.png");

  await context.setOffline(false); // the page drains on the online event
  await page.waitForSelector("#waiting:has-text('0 waiting')");
  await page.waitForSelector("#sync:has-text('synced')");
  assert.equal(await page.locator("#notes li.pending").count(), 0);
  const stored = await storedIds(rig.service.url, token);
  assert.equal(stored.length, 3, "each note stored once");
  assert.equal(new Set(stored).size, 3);
  assert.deepEqual((await texts(page)).sort(), [...notes].sort());

  await screenshot(page, "notes-synced.png");

  // Another device of the same user: a fresh browser profile, which has the
  // notes only by pulling them.
  const other = await (await rig.browser.newContext()).newPage();
  await other.goto(rig.example.origin);
  await other.waitForSelector("#notes li:nth-child(3)");
  assert.deepEqual((await texts(other)).sort(), [...notes].sort());
  assert.equal(await other.locator("#waiting").textContent(), "0 waiting");
});
