import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { IDBFactory } from "fake-indexeddb";
import { createSyncClient, type SyncClient, type SyncClientOptions, type SyncEvent, type SyncState } from "../src/client.js";
import { indexedDBStorage } from "../src/indexeddb.js";
import { SpaceStopped } from "../src/spaces.js";
import { memoryStorage, type SyncStorage } from "../src/storage.js";
import { tokenSubject } from "../src/token.js";
import type { ListedEvent } from "../src/types.js";
import { asUser, localToken, startService, until } from "./server.js";

/**
 * The storage's user against another user's token, on the one client, at
 * the service as make run serves it (its Event API stand-in included):
 * carol's storage with getToken giving alice's token, on every path that
 * sends or keeps anything (a pull with nothing queued, writes queued, the
 * live channel, a space followed, a reload over IndexedDB). Each stops
 * the stream with wrong_user before anything is sent: no request, no
 * socket, nothing stored, no cursor moved; carol's own token then syncs
 * from where carol was.
 */

type Notes = Record<string, string>;
const reduce = (s: Notes, e: SyncEvent): Notes => {
  if (e.kind === "deleted") {
    const { [e.id]: _, ...rest } = s;
    return rest;
  }
  return { ...s, [e.id]: String(e.payload.text) };
};

let service: { url: string; stop: () => void };
let live: { realtimeUrl: string; httpHost: string };
before(async () => {
  service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
  const host = new URL(service.url).host;
  live = { realtimeUrl: `ws://${host}/event/realtime`, httpHost: host };
});
after(() => service?.stop());

/** Two users of a test, alice with notes of her own on the server. */
async function users() {
  const carol = `carol-${crypto.randomUUID()}`;
  const alice = `alice-${crypto.randomUUID()}`;
  for (const text of ["alice 1", "alice 2", "alice 3"]) {
    await post(alice, text);
  }
  return { carol, alice };
}

/** Writes a note as user, straight to the API (another device of theirs). */
async function post(user: string, text: string, space?: string): Promise<string> {
  const id = crypto.randomUUID();
  const path = space === undefined ? "/api/v1/sync/events" : `/api/v1/spaces/${space}/events`;
  const r = await asUser(service.url, localToken(user))("POST", path, {
    id,
    type: "note.created",
    occurredAt: "2026-12-07T10:00:00Z",
    payload: { text },
  });
  assert.equal(r.status, 201, await r.text());
  return id;
}

/** The user's stream as the server lists it. */
async function listed(user: string): Promise<ListedEvent[]> {
  const r = await asUser(service.url, localToken(user))("GET", "/api/v1/sync/events?limit=1000");
  assert.equal(r.status, 200);
  return ((await r.json()) as { events: ListedEvent[] }).events;
}

/** Every request and WebSocket a client made, with the `sub` of the token it carried. */
function recorder() {
  const requests: string[] = [];
  const sockets: string[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const req = new Request(input, init);
    const token = req.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
    requests.push(`${req.method} ${new URL(req.url).pathname} as ${tokenSubject(token)}`);
    return globalThis.fetch(req, init);
  };
  const Real = globalThis.WebSocket;
  assert.equal(typeof Real, "function", "a WebSocket (Node.js 20: run with --experimental-websocket, as npm test does)");
  class Recorded extends Real {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      sockets.push(String(url));
    }
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
      sockets.push(String(data));
      super.send(data);
    }
  }
  return { requests, sockets, fetch, WebSocket: Recorded as typeof WebSocket };
}

const opened: SyncClient<Notes>[] = [];
after(() => {
  for (const c of opened) {
    c.close();
  }
});

/** The app on a device of carol's: her storage, whatever token getToken gives. */
function app(user: string, storage: SyncStorage, tokenOf: string, extra: Partial<SyncClientOptions<Notes>> = {}): SyncClient<Notes> {
  const c = createSyncClient<Notes>({
    baseUrl: service.url,
    user,
    getToken: () => localToken(tokenOf),
    initial: {},
    reduce,
    storage,
    pollIntervalMs: 60_000,
    retry: { baseDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 },
    ...extra,
  });
  opened.push(c);
  return c;
}

const texts = (s: Notes | undefined) => Object.values(s ?? {}).sort();
const stoppedFor = (status: SyncState<Notes>["status"] | undefined) => (status?.kind === "stopped" ? status.reason : undefined);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** carol's device after a sync of her own: her note pulled, her cursor kept in store. */
async function carolsDevice(carol: string, store: Map<string, string>) {
  const own = app(carol, memoryStorage(store), carol);
  await own.write("note.created", { text: "carol's" });
  await until(own, (s) => s.status.kind === "synced", "carol synced");
  own.close();
  return new Map(store);
}

describe("another user's token on the storage's user's client", () => {
  it("with nothing queued: the pull stops with wrong_user, nothing sent, nothing stored, the cursor where it was", async () => {
    const { carol, alice } = await users();
    const store = new Map<string, string>();
    const kept = await carolsDevice(carol, store);

    const rec = recorder();
    const c = app(carol, memoryStorage(store), alice, { fetch: rec.fetch });
    await c.sync();
    const st = await until(c, (s) => s.status.kind === "stopped", "stopped");
    assert.equal(stoppedFor(st.status), "wrong_user");
    assert.deepEqual(texts(st.mine.state), ["carol's"], "carol's state, none of alice's notes");
    assert.deepEqual(rec.requests, [], "nothing sent");
    assert.deepEqual(store, kept, "the storage as carol left it: her state and cursor");
    await c.sync(); // sync() tries again: stopped again, nothing sent
    assert.equal(stoppedFor(c.state.status), "wrong_user");
    assert.deepEqual(rec.requests, []);
    c.close();

    // Back on carol's token, a note written meanwhile on another device of hers comes.
    await post(carol, "carol's laptop");
    const back = app(carol, memoryStorage(store), carol);
    const synced = await until(back, (s) => s.status.kind === "synced", "carol synced again");
    assert.deepEqual(texts(synced.mine.state), ["carol's", "carol's laptop"]);
  });

  it("with writes queued: stopped with wrong_user before any pull or send, the writes kept for carol's token", async () => {
    const { carol, alice } = await users();
    const store = new Map<string, string>();
    const rec = recorder();
    const c = app(carol, memoryStorage(store), alice, { fetch: rec.fetch });
    const w = await c.write("note.created", { text: "carol's, offline" });
    const st = await until(c, (s) => s.status.kind === "stopped", "stopped");
    assert.equal(stoppedFor(st.status), "wrong_user");
    await c.sync();
    assert.deepEqual(rec.requests, [], "nothing sent: no pull, no write");
    assert.deepEqual(texts(c.state.mine.state), ["carol's, offline"], "the pending write alone, none of alice's notes");
    assert.deepEqual(
      c.state.mine.writes.map((x) => [x.key, x.fate]),
      [[w.key, "pending"]],
    );
    assert.equal((await listed(alice)).length, 3, "alice's stream holds her own three");
    c.close();

    const back = app(carol, memoryStorage(store), carol);
    const synced = await until(back, (s) => s.status.kind === "synced", "carol synced");
    assert.deepEqual(texts(synced.mine.confirmed), ["carol's, offline"]);
    assert.deepEqual(
      (await listed(carol)).map((e) => e.id),
      [w.id],
      "sent once, to carol's stream",
    );
  });

  it("with the live channel: subscribes to no channel, opens no socket, and alice's writes poke nothing", async () => {
    const { carol, alice } = await users();
    const store = new Map<string, string>();
    const kept = await carolsDevice(carol, store);

    const rec = recorder();
    const c = app(carol, memoryStorage(store), alice, { fetch: rec.fetch, live, WebSocket: rec.WebSocket });
    const st = await until(c, (s) => s.status.kind === "stopped", "stopped");
    assert.equal(stoppedFor(st.status), "wrong_user");
    await post(alice, "alice 4"); // a poke on alice's channel
    await sleep(500);
    assert.deepEqual(rec.sockets, [], "no socket, no subscription");
    assert.deepEqual(rec.requests, [], "nothing sent");
    assert.deepEqual(texts(c.state.mine.state), ["carol's"]);
    assert.deepEqual(store, kept);
    c.close();

    // The same settings with carol's token go live on carol's channel: a poke of hers pulls.
    const own = recorder();
    const back = app(carol, memoryStorage(store), carol, { live, WebSocket: own.WebSocket });
    await until(back, (s) => s.mine.channel === "live" && s.status.kind === "synced", "carol live");
    assert.ok(
      own.sockets.some((m) => m.includes(`"channel":"/users/${carol}"`)),
      `subscribed to carol's channel: ${own.sockets.join(" | ")}`,
    );
    await post(carol, "carol's laptop");
    const poked = await until(back, (s) => texts(s.mine.state).includes("carol's laptop"), "carol's poke pulled");
    assert.deepEqual(texts(poked.mine.state), ["carol's", "carol's laptop"]);
  });

  it("on a space followed: the space's stream stops with wrong_user, nothing pulled, subscribed or stored; space calls refused", async () => {
    const { carol, alice } = await users();
    const r = await asUser(service.url, localToken(alice))("POST", "/api/v1/spaces", { id: crypto.randomUUID(), name: "alice's" });
    assert.equal(r.status, 201);
    const space = ((await r.json()) as { id: string }).id;
    await post(alice, "in alice's space", space);

    const store = new Map<string, string>();
    const rec = recorder();
    const c = app(carol, memoryStorage(store), alice, { fetch: rec.fetch, live, WebSocket: rec.WebSocket });
    c.follow(space);
    const st = await until(c, (s) => s.spaces[space]?.status.kind === "stopped" && s.status.kind === "stopped", "both stopped");
    assert.equal(stoppedFor(st.spaces[space]?.status), "wrong_user");
    assert.equal(stoppedFor(st.status), "wrong_user");
    await c.sync();
    assert.deepEqual(st.spaces[space]?.state, {}, "none of the space's notes");
    await assert.rejects(c.createSpace("as alice"), (err) => err instanceof SpaceStopped && err.reason === "wrong_user");
    await assert.rejects(c.listSpaces(), (err) => err instanceof SpaceStopped && err.reason === "wrong_user");
    await assert.rejects(c.addMember(space, carol, "writer"), (err) => err instanceof SpaceStopped && err.reason === "wrong_user");
    assert.deepEqual(rec.requests, [], "nothing sent");
    assert.deepEqual(rec.sockets, [], "no socket, no subscription");
    const ownView = store.get(`\u0001${encodeURIComponent(carol)}\t${encodeURIComponent("me")}\n`);
    assert.deepEqual(
      JSON.parse(ownView ?? "null"),
      { state: {}, spaces: [space] },
      "carol's own view: the space she follows, no cursor, no state",
    );
    const ofSpace = [...store.keys()].filter((k) => k.includes(encodeURIComponent(`space:${space}`)));
    assert.deepEqual(ofSpace, [], "nothing kept of the space's stream");
  });

  it("on a reload over IndexedDB: the kept state shows, nothing of alice's is pulled into it, and carol's token carries on from her cursor", async () => {
    const { carol, alice } = await users();
    const factory = new IDBFactory();
    const storage = () => indexedDBStorage({ factory });
    const own = app(carol, storage(), carol);
    await own.write("note.created", { text: "carol's" });
    await until(own, (s) => s.status.kind === "synced", "carol synced");
    own.close();
    const view = await storage().open(carol, "me").loadView();
    assert.ok(view?.cursor !== undefined, "a cursor kept");

    const rec = recorder();
    const reloaded = app(carol, storage(), alice, { fetch: rec.fetch });
    const st = await until(reloaded, (s) => s.status.kind === "stopped", "stopped");
    assert.equal(stoppedFor(st.status), "wrong_user");
    assert.deepEqual(texts(st.mine.state), ["carol's"], "what carol kept, none of alice's");
    await reloaded.sync();
    assert.deepEqual(rec.requests, [], "nothing sent");
    assert.deepEqual(await storage().open(carol, "me").loadView(), view, "the kept state and cursor unchanged");
    reloaded.close();

    await post(carol, "carol's laptop");
    const back = app(carol, storage(), carol);
    const synced = await until(back, (s) => s.status.kind === "synced", "carol synced again");
    assert.deepEqual(texts(synced.mine.state), ["carol's", "carol's laptop"], "carol's note of the meantime pulled, none of alice's");
  });
});
