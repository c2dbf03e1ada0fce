import assert from "node:assert/strict";
import { it } from "node:test";
import type { Page } from "playwright-core";
import { localToken } from "../server.js";
import { notesRig } from "./harness.js";

/**
 * The notes example's shared list in Chromium, as `make run` and `make
 * example` serve it, each page the user its address names: alice creates a
 * list and adds bob; each sees the other's notes, with their author; the
 * server and both views hold exactly the notes written, each once. Then
 * alice removes bob (through the API), and bob's page says he is no longer
 * a member and forgets the list.
 */

// Rate limits off: the pages poll faster than the default read rate allows.
const rig = notesRig({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });

async function open(user: string): Promise<Page> {
  const page = await (await rig.browser.newContext()).newPage();
  await page.goto(`${rig.example.origin}/?user=${user}`);
  await page.waitForSelector(`#me:has-text("${user}")`);
  return page;
}

async function addShared(page: Page, text: string): Promise<void> {
  await page.fill("#shared-text", text);
  await page.click("#shared-add");
}

/** The shared notes a page shows: [text, author] of each, sorted; none waiting. */
async function shown(page: Page): Promise<[string, string][]> {
  await page.waitForSelector("#shared-notes li.pending", { state: "detached" });
  const items = page.locator("#shared-notes li");
  const out: [string, string][] = [];
  for (let i = 0; i < (await items.count()); i++) {
    const li = items.nth(i);
    out.push([(await li.locator("span:first-child").textContent()) ?? "", (await li.getAttribute("data-author")) ?? ""]);
  }
  return out.sort();
}

/** The space's notes as stored, record.put events read by alice with plain fetch: [the note's id, text, author]. */
async function stored(space: string, token: string): Promise<[string, string, string][]> {
  const r = await fetch(`${rig.service.url}/api/v1/spaces/${space}/events?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(r.status, 200);
  type Put = { id: string; type: string; author: string; payload: { collection?: string; id?: string; fields?: { text?: string } } };
  const page = (await r.json()) as { events: Put[]; hasMore: boolean };
  assert.equal(page.hasMore, false);
  return page.events
    .filter((e) => e.type === "record.put" && e.payload.collection === "note")
    .map((e) => [e.payload.id ?? "", e.payload.fields?.text ?? "", e.author]);
}

it("a shared list between two users: each sees the other's notes with their author, each note stored once; a removed member forgets it", async () => {
  const alice = `alice-${crypto.randomUUID()}`;
  const bob = `bob-${crypto.randomUUID()}`;
  const a = await open(alice);
  const b = await open(bob);

  // Alice creates the list, adds bob as a writer, and writes to it.
  await a.fill("#space-name", "Groceries");
  await a.click("#create-space button[type=submit]");
  await a.waitForSelector("#spaces option:has-text('Groceries (owner)')", { state: "attached" });
  const space = await a.locator("#spaces").inputValue();
  assert.match(space, /^[0-9a-f-]{36}$/);
  await a.fill("#member", bob);
  // The answer to the add, not the status line: the list's next sync
  // writes over "added …" at once.
  const added = a.waitForResponse((r) => r.url().endsWith(`/api/v1/spaces/${space}/members`) && r.request().method() === "POST");
  await a.click("#member-add");
  assert.equal((await added).status(), 201);
  await addShared(a, "oat milk");

  // Bob's page finds the list by polling, and alice's note in it.
  await b.waitForSelector("#spaces option:has-text('Groceries (writer)')", { state: "attached", timeout: 15_000 });
  await b.waitForSelector(`#shared-notes li[data-author="${alice}"]:has-text("oat milk")`, { timeout: 15_000 });

  // Both follow the list's live channel: the members-only subscription
  // was accepted for each.
  for (const p of [a, b]) {
    await p.waitForSelector("#shared-live[data-state=live]", { timeout: 15_000 });
  }

  // Bob writes; alice sees it, by bob.
  await addShared(b, "bread");
  await a.waitForSelector(`#shared-notes li[data-author="${bob}"]:has-text("bread")`, { timeout: 15_000 });
  await b.waitForSelector(`#shared-notes li[data-author="${bob}"]:has-text("bread"):not(.pending)`, { timeout: 15_000 });

  // Exactly the notes written, each once: on the server and in both views.
  const expected: [string, string][] = [
    ["bread", bob],
    ["oat milk", alice],
  ];
  const server = await stored(space, localToken(alice));
  assert.equal(server.length, 2, "each note stored once");
  assert.equal(new Set(server.map(([id]) => id)).size, 2);
  assert.deepEqual(server.map(([, text, author]) => [text, author]).sort(), expected);
  for (const p of [a, b]) {
    assert.deepEqual(await shown(p), expected);
    const ids = await p.locator("#shared-notes li").evaluateAll((lis) => lis.map((li) => (li as HTMLElement).dataset.id));
    assert.deepEqual(ids.sort(), server.map(([id]) => id).sort(), "the very notes the server holds");
  }

  // Alice removes bob: his page's next pull is refused, and it forgets the list.
  const removed = await fetch(`${rig.service.url}/api/v1/spaces/${space}/members/${encodeURIComponent(bob)}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${localToken(alice)}`, "idempotency-key": crypto.randomUUID() },
  });
  assert.equal(removed.status, 200);
  await b.waitForSelector("#shared-status:has-text('you are no longer a member')", { timeout: 15_000 });
  assert.equal(await b.locator("#shared-notes li").count(), 0);
  assert.equal(await b.locator("#spaces option").count(), 0);
  // The client kept the list in an IndexedDB database named for it: gone, its notes and queue with it.
  await b.waitForFunction(async (id) => !(await indexedDB.databases()).some((d) => d.name?.includes(id)), space);
  assert.ok(
    (await b.evaluate(() => indexedDB.databases())).some((d) => d.name?.startsWith("notes:")),
    "bob's own notes stay",
  );
  assert.deepEqual(await shown(a), expected, "alice keeps the list");
});
