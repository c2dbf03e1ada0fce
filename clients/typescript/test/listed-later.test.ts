import assert from "node:assert/strict";
import { afterEach, describe, it, mock } from "node:test";
import { createSyncClient, type SyncClient, type SyncEvent, type SyncState } from "../src/client.js";
import { memoryStorage } from "../src/storage.js";
import type { ListedEvent, NewEvent } from "../src/types.js";
import { answer, fakeFetch, instantRetry, TOKEN, USER } from "./helpers.js";

/**
 * A write to a busy space, as the server is to answer it: accepted (201,
 * stored exactly once) but listed by pulls only once the sequencer places
 * it, a moment later. The client keeps it in its view, sent and not yet
 * listed, and says "synced" only once a pull lists it: across a reload
 * too, and not for ever if it is never listed.
 */

/** A list, so that a write folded twice shows twice. */
type Notes = { id: string; text: string }[];
const reduce = (s: Notes, e: SyncEvent): Notes =>
  e.kind === "deleted" ? s.filter((n) => n.id !== e.id) : [...s, { id: e.id, text: String(e.payload.text) }];

/** The user's stream on a server that accepts each write and lists it only at sequence(). */
function acceptingServer() {
  const listed: ListedEvent[] = [];
  const accepted: ListedEvent[] = [];
  let pulls = 0;
  const api = fakeFetch(async (req) => {
    const url = new URL(req.url);
    if (req.method === "POST") {
      assert.equal(url.pathname, "/api/v1/sync/events");
      const e = (await req.json()) as NewEvent;
      const stored = { id: e.id, type: e.type, occurredAt: e.occurredAt ?? "", receivedAt: new Date().toISOString() };
      accepted.push({ ...stored, payload: e.payload });
      return answer(201, stored);
    }
    assert.equal(`${req.method} ${url.pathname}`, "GET /api/v1/sync/events");
    pulls++;
    const from = Number((url.searchParams.get("cursor") ?? "p0").slice(1));
    return answer(200, { events: listed.slice(from), cursor: `p${listed.length}`, hasMore: false, nextCursor: null });
  });
  return {
    fetch: api.fetch,
    accepted,
    pulls: () => pulls,
    /** The sequencer's pass: every accepted event listed, in the order accepted. */
    sequence: () => listed.push(...accepted.splice(0)),
    /** Another device deletes an accepted event: it turns into a tombstone in place, and a notice follows. */
    deleteAccepted(id: string) {
      const i = accepted.findIndex((e) => e.id === id);
      const e = accepted[i] as ListedEvent;
      accepted[i] = { ...e, payload: {}, deleted: true };
      accepted.push({ ...e, id: crypto.randomUUID(), type: "event.deleted", payload: { id } });
    },
  };
}

const opened: SyncClient<Notes>[] = [];
afterEach(() => {
  for (const c of opened.splice(0)) {
    c.close();
  }
  mock.restoreAll();
});

/** A client over store at the server, online, pulling only on its own (a write's drain, sync()): no poll comes in a test. */
function open(api: ReturnType<typeof acceptingServer>, store: Map<string, string>): SyncClient<Notes> {
  const c = createSyncClient<Notes>({
    baseUrl: "https://api.example.com",
    user: USER,
    getToken: () => TOKEN,
    initial: [],
    reduce,
    storage: memoryStorage(store),
    fetch: api.fetch,
    retry: instantRetry().retry,
    online: () => true,
    events: new EventTarget(),
    pollIntervalMs: 3_600_000,
  });
  opened.push(c);
  return c;
}

/** Resolves once ok(state) holds, or fails after 5 s. */
function until<S>(c: SyncClient<S>, ok: (s: SyncState<S>) => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`not within 5 s: ${what}; state: ${JSON.stringify(c.state)}`));
    }, 5000);
    const check = () => {
      if (ok(c.state)) {
        clearTimeout(timer);
        stop();
        resolve();
      }
    };
    const stop = c.subscribe(check);
    check();
  });
}

/** Writes a note and waits for its 201 and a pull after it, which does not list it. */
async function writeAnsweredUnlisted(c: SyncClient<Notes>, api: ReturnType<typeof acceptingServer>, text: string) {
  await until(c, (s) => s.mine.status.kind === "synced", "the first pull");
  const w = await c.write("note.created", { text });
  await until(c, (s) => api.accepted.length === 1 && s.mine.writes.length === 0, "the write answered");
  const pulls = api.pulls();
  await c.sync();
  assert.ok(api.pulls() > pulls, "a pull came after the 201");
  return w;
}

describe("a write answered 201 and listed a moment later (a busy space)", () => {
  it("stays in the state, not as pending, and the status is not synced until a pull lists it; then it is there once", async () => {
    const api = acceptingServer();
    const c = open(api, new Map());
    const w = await writeAnsweredUnlisted(c, api, "oat milk");
    const note = { id: w.id, text: "oat milk" };
    for (const pull of ["the pull after the 201", "one more pull"]) {
      assert.deepEqual(c.state.mine.state, [note], `${pull}: still in the view`);
      assert.deepEqual(c.state.mine.confirmed, [], `${pull}: no pull listed it`);
      assert.deepEqual(c.state.mine.writes, [], `${pull}: not shown as waiting to be sent`);
      assert.equal(c.state.mine.status.kind, "online", `${pull}: not synced`);
      assert.equal(c.state.status.kind, "online", `${pull}: nor is the app`);
      await c.sync();
    }

    api.sequence();
    await c.sync();
    assert.deepEqual(c.state.mine.confirmed, [note]);
    assert.deepEqual(c.state.mine.state, [note], "once, not twice");
    assert.equal(c.state.mine.status.kind, "synced");
  });

  it("survives a reload: a new client over the same storage shows it, not synced, until a pull lists it", async () => {
    const api = acceptingServer();
    const store = new Map<string, string>();
    const first = open(api, store);
    const w = await writeAnsweredUnlisted(first, api, "bins");
    const note = { id: w.id, text: "bins" };
    first.close();

    const again = open(api, store);
    await until(again, (s) => s.mine.loaded, "loaded");
    assert.deepEqual(again.state.mine.state, [note], "the reload still shows it");
    assert.deepEqual(again.state.mine.writes, []);
    await again.sync();
    assert.equal(again.state.mine.status.kind, "online", "not synced: it is still unlisted");
    assert.deepEqual(again.state.mine.state, [note]);

    api.sequence();
    await again.sync();
    assert.equal(again.state.mine.status.kind, "synced");
    assert.deepEqual(again.state.mine.state, [note]);
    again.close();

    // What was kept with the state that holds it: a third start folds it once, offline.
    const third = open(api, store);
    await until(third, (s) => s.mine.loaded, "loaded");
    assert.deepEqual(third.state.mine.state, [note], "once after a reload too");
  });

  it("deleted by another device before it is listed: its tombstone lists it, and it leaves the state", async () => {
    const api = acceptingServer();
    const c = open(api, new Map());
    const w = await writeAnsweredUnlisted(c, api, "to go");
    api.deleteAccepted(w.id);
    api.sequence();
    await c.sync();
    assert.deepEqual(c.state.mine.state, []);
    assert.equal(c.state.mine.status.kind, "synced");
  });

  it("never listed: dropped from the state 10 minutes after its answer, and the status synced", async () => {
    let later = 0; // what the clock is moved on by
    const now = Date.now.bind(Date);
    mock.method(Date, "now", () => now() + later);
    const api = acceptingServer();
    const c = open(api, new Map());
    const w = await writeAnsweredUnlisted(c, api, "lost");
    later = 9 * 60_000;
    await c.sync();
    assert.deepEqual(c.state.mine.state, [{ id: w.id, text: "lost" }], "9 minutes on: still waited for");
    assert.equal(c.state.mine.status.kind, "online");
    later = 10 * 60_000;
    await c.sync();
    assert.deepEqual(c.state.mine.state, [], "10 minutes on: given up");
    assert.equal(c.state.mine.status.kind, "synced");
  });
});
