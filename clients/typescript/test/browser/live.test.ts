import assert from "node:assert/strict";
import { it } from "node:test";
import type { BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { localToken } from "../server.js";
import { addNote, notesRig, storedIds } from "./harness.js";

/**
 * Live sync in Chromium, on the notes example against make run's server
 * (its Event API stand-in and its poke function): two profiles of one
 * user, one writing, the other showing each note within a second without
 * a reload; then the channel cut at the browser's network layer, the
 * second converging by polling and going live again when it returns; the
 * server and both views holding each note once.
 */

const token = localToken(`live-${crypto.randomUUID()}`);
// Rate limits off: the test writes faster than a person would.
const rig = notesRig({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" }, token);

const texts = (page: Page) => page.locator("#notes li > span:first-child").allTextContents();

/** A profile whose live channel the test can cut: each connection goes through a route it can close. */
async function profile(): Promise<{ context: BrowserContext; page: Page; cut: (on: boolean) => Promise<void> }> {
  const context = await rig.browser.newContext();
  let cut = false;
  const open = new Set<WebSocketRoute>();
  await context.routeWebSocket(/\/event\/realtime$/, (ws) => {
    if (cut) {
      void ws.close({ code: 1011, reason: "cut by the test" });
      return;
    }
    open.add(ws);
    ws.connectToServer();
    ws.onClose(() => open.delete(ws));
  });
  const page = await context.newPage();
  await page.goto(rig.example.origin);
  return {
    context,
    page,
    cut: async (on) => {
      cut = on;
      if (on) {
        await Promise.all([...open].map((ws) => ws.close({ code: 1011, reason: "cut by the test" })));
      }
    },
  };
}

const liveState = (page: Page) => page.locator("#live").getAttribute("data-state");

it("two profiles: a note written in one shows in the other within a second, by a poke; with the channel cut, by polling; live again when it returns", async () => {
  const writer = await profile();
  const reader = await profile();
  for (const p of [writer, reader]) {
    await p.page.waitForSelector("#live[data-state=live]");
  }

  const written: string[] = [];
  const latencies: number[] = [];
  for (let i = 0; i < 5; i++) {
    const text = `live note ${i}`;
    const t0 = Date.now();
    await addNote(writer.page, text);
    written.push(text);
    await reader.page.waitForSelector(`#notes li:has-text("${text}")`, { timeout: 1000 });
    latencies.push(Date.now() - t0);
  }
  console.log(`browser: written → shown in the other profile, ms: ${latencies.join(", ")}`);

  // The channel cut: the reader polls (every 10 s) and still converges.
  await reader.cut(true);
  await reader.page.waitForSelector("#live[data-state=polling]", { timeout: 20_000 });
  const cutText = "written while the channel is cut";
  await addNote(writer.page, cutText);
  written.push(cutText);
  await reader.page.waitForSelector(`#notes li:has-text("${cutText}")`, { timeout: 15_000 });
  assert.equal(await liveState(reader.page), "polling", "converged by polling, not live");

  // The channel back: live again (after the reconnection's backoff), and
  // pokes reach it again within a second.
  await reader.cut(false);
  await reader.page.waitForSelector("#live[data-state=live]", { timeout: 45_000 });
  const backText = "written once the channel is back";
  await addNote(writer.page, backText);
  written.push(backText);
  await reader.page.waitForSelector(`#notes li:has-text("${backText}")`, { timeout: 1000 });

  // Exactly the notes written, each once: on the server and in both views.
  await writer.page.waitForSelector("#waiting:has-text('0 waiting')");
  const stored = await storedIds(rig.service.url, token);
  assert.equal(stored.length, written.length, "each note stored once");
  assert.equal(new Set(stored).size, written.length);
  for (const p of [writer, reader]) {
    assert.deepEqual((await texts(p.page)).sort(), [...written].sort());
  }
});
