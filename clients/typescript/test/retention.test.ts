import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { isCursorExpired, PullError, pullEvents } from "../src/pull.js";
import { uuidv4 } from "../src/uuid.js";
import { applyEvents } from "./helpers.js";
import { asUser, localToken, startService } from "./server.js";

/** make run with retention of one second: a stream is trimmed when it is next written to. */
const KEEP_MS = 1000;

let service: { url: string; stop: () => void };
before(async () => {
  service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0", EVENT_RETENTION: `${KEEP_MS}ms` });
});
after(() => service?.stop());

it("a device behind retention's floor is told CURSOR_EXPIRED, starts over from the floor, and then holds exactly what the server lists", async () => {
  const token = localToken(`retention-${crypto.randomUUID()}`);
  const call = asUser(service.url, token);
  const post = async (text: string) => {
    const id = uuidv4();
    const r = await call("POST", "/api/v1/sync/events", {
      id,
      type: "note.created",
      occurredAt: "2026-12-05T10:00:00Z",
      payload: { text },
    });
    assert.equal(r.status, 201);
    return id;
  };
  const common = { baseUrl: service.url, getToken: () => token };

  const old = [await post("a"), await post("b"), await post("c")];
  // A device that read all three, then went away.
  const device = new Map<string, unknown>();
  const firstPull = pullEvents(common);
  for await (const page of firstPull.pages()) {
    applyEvents(device, page.events);
  }
  const behind = firstPull.cursor;
  assert.equal(device.size, 3);
  // "b" is deleted meanwhile: its notice ages with the rest and goes, so
  // only starting over drops "b" from this device.
  assert.equal((await call("DELETE", `/api/v1/sync/events/${old[1]}`)).status, 200);

  await new Promise((r) => setTimeout(r, KEEP_MS + 200));
  const fresh = await post("d"); // its commit trims the stream

  // Retention trims after the answer: wait for the old cursor to be refused.
  let refused: unknown;
  for (let i = 0; i < 50 && refused === undefined; i++) {
    try {
      for await (const _ of pullEvents({ ...common, cursor: behind })) {
        // reading on while the trim has not happened yet
      }
      await new Promise((r) => setTimeout(r, 100));
    } catch (err) {
      refused = err;
    }
  }
  assert.ok(refused instanceof PullError && isCursorExpired(refused), `the old cursor is refused with 410 CURSOR_EXPIRED: ${refused}`);

  // With startOver, the pull drops the device's copy and reads from the start.
  let startedOver = 0;
  const resumed = pullEvents({
    ...common,
    cursor: behind,
    startOver: () => {
      startedOver++;
      device.clear();
    },
  });
  for await (const page of resumed.pages()) {
    applyEvents(device, page.events);
  }
  assert.equal(startedOver, 1);
  assert.deepEqual([...device.keys()], [fresh], "only the event younger than the retention stays");

  const listed: string[] = [];
  for await (const ev of pullEvents(common)) {
    listed.push(ev.id);
  }
  assert.deepEqual(listed, [fresh], "the server's listing from the start begins above the floor");
  // The kept cursor goes on from there.
  const next = await post("e");
  const onward: string[] = [];
  for await (const ev of pullEvents({ ...common, cursor: resumed.cursor })) {
    onward.push(ev.id);
  }
  assert.deepEqual(onward, [next]);
});
