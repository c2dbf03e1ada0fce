import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { IDBFactory } from "fake-indexeddb";
import { createSyncClient, type SyncClient, type SyncClientOptions, type SyncEvent } from "../src/client.js";
import { indexedDBStorage } from "../src/indexeddb.js";
import { memoryStorage, type SyncStorage } from "../src/storage.js";
import type { ListedEvent } from "../src/types.js";
import { asUser, localToken, startService, until } from "./server.js";

/**
 * The one client against the service as make run serves it: two devices
 * of a user (each its own storage), offline writes and deletes, reloads,
 * a crash before sending, a reducer that throws, a storage that refuses,
 * another user's token, spaces with a member removed, and 410 start-over.
 */

type Notes = Record<string, string>;
const reduce = (s: Notes, e: SyncEvent): Notes => {
  if (e.kind === "deleted") {
    const { [e.id]: _, ...rest } = s;
    return rest;
  }
  return e.type === "note.created" ? { ...s, [e.id]: String(e.payload.text) } : s;
};

let service: { url: string; stop: () => void };
before(async () => {
  service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0", EVENT_RETENTION: "1s" });
});
after(() => service?.stop());

/** A device: its network switch (online and its events) and its storage; client() opens the app on it. */
function device(user: string, storage: SyncStorage = memoryStorage()) {
  const events = new EventTarget();
  let online = true;
  const opened: SyncClient<Notes>[] = [];
  after(() => {
    for (const c of opened) {
      c.close();
    }
  });
  return {
    storage,
    setOnline(on: boolean) {
      online = on;
      events.dispatchEvent(new Event(on ? "online" : "offline"));
    },
    client(extra: Partial<SyncClientOptions<Notes>> = {}) {
      const c = createSyncClient<Notes>({
        baseUrl: service.url,
        user,
        getToken: () => localToken(user),
        initial: {},
        reduce,
        storage,
        online: () => online,
        events,
        pollIntervalMs: 100,
        retry: { baseDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 },
        ...extra,
      });
      opened.push(c);
      return c;
    },
  };
}

/** The user's stream as the server lists it. */
async function listed(user: string, space?: string): Promise<ListedEvent[]> {
  const path = space ? `/api/v1/spaces/${space}/events?limit=1000` : "/api/v1/sync/events?limit=1000";
  const r = await asUser(service.url, localToken(user))("GET", path);
  assert.equal(r.status, 200);
  return ((await r.json()) as { events: ListedEvent[] }).events;
}

const texts = (s: Notes) => Object.values(s).sort();

describe("createSyncClient where the browser's APIs are missing (Node.js: no IndexedDB, no Web Locks)", () => {
  it("without crypto.randomUUID, keys come from getRandomValues; without a storage given, it keeps memory", async () => {
    const user = `bare-${crypto.randomUUID()}`;
    assert.equal(typeof (globalThis as { indexedDB?: unknown }).indexedDB, "undefined");
    assert.equal((globalThis as { navigator?: { locks?: unknown } }).navigator?.locks, undefined);
    const randomUUID = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(crypto), "randomUUID");
    Object.defineProperty(crypto, "randomUUID", { value: undefined, configurable: true });
    try {
      const app = createSyncClient<Notes>({
        baseUrl: service.url,
        user,
        getToken: () => localToken(user),
        initial: {},
        reduce,
        pollIntervalMs: 100,
      });
      after(() => app.close());
      const w = await app.write("note.created", { text: "bare" });
      assert.match(w.key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      await until(app, (s) => s.status.kind === "synced" && w.id in s.mine.confirmed, "synced");
    } finally {
      delete (crypto as { randomUUID?: unknown }).randomUUID;
      assert.equal(typeof crypto.randomUUID, "function", `restored ${randomUUID ? "from the prototype" : ""}`);
    }
    assert.equal((await listed(user)).length, 1);
  });

  it("without crypto.getRandomValues (React Native as it comes), refuses to start, saying what to add", () => {
    const original = globalThis.crypto;
    Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true });
    try {
      assert.throws(
        () =>
          createSyncClient<Notes>({ baseUrl: service.url, user: "u", getToken: () => "", initial: {}, reduce, storage: memoryStorage() }),
        /react-native-get-random-values/,
      );
    } finally {
      Object.defineProperty(globalThis, "crypto", { value: original, configurable: true });
    }
  });
});

describe("createSyncClient", () => {
  it("shows writes made offline at once, sends each once when online, and another device's state gets them", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const phone = device(user);
    phone.setOnline(false);
    const app = phone.client();
    for (const text of ["a", "b", "c"]) {
      await app.write("note.created", { text });
    }
    assert.deepEqual(texts(app.state.mine.state), ["a", "b", "c"], "the optimistic view holds them at once");
    assert.deepEqual(app.state.mine.confirmed, {});
    assert.equal(app.state.status.kind, "offline");
    assert.equal(app.state.mine.writes.length, 3);
    assert.deepEqual(await listed(user), [], "nothing sent while offline");

    phone.setOnline(true);
    const synced = await until(app, (s) => s.status.kind === "synced", "synced");
    assert.deepEqual(texts(synced.mine.confirmed), ["a", "b", "c"]);
    assert.equal(synced.mine.writes.length, 0);
    assert.equal((await listed(user)).length, 3, "each stored once");

    const laptop = device(user).client();
    const there = await until(laptop, (s) => Object.keys(s.mine.state).length === 3, "the other device has the three");
    assert.deepEqual(texts(there.mine.confirmed), ["a", "b", "c"]);
  });

  it("queues a delete made offline, hides the note at once, and sends it later, exactly once", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const phone = device(user);
    const app = phone.client();
    const w = await app.write("note.created", { text: "to go" });
    await until(app, (s) => s.status.kind === "synced" && w.id in s.mine.confirmed, "the note confirmed");

    phone.setOnline(false);
    const d = await app.delete(w.id);
    assert.equal(d.delete, true);
    assert.deepEqual(app.state.mine.state, {}, "gone from the view at once");
    assert.equal(app.state.mine.confirmed[w.id], "to go", "but not from the confirmed state");

    // The app restarts offline: the delete is still queued.
    const reopened = phone.client();
    await until(reopened, (s) => s.mine.loaded && s.mine.writes.length === 1, "the queued delete after the restart");
    assert.deepEqual(reopened.state.mine.state, {});
    app.close();

    phone.setOnline(true);
    await until(reopened, (s) => s.status.kind === "synced" && !(w.id in s.mine.confirmed), "the delete confirmed");
    const events = await listed(user);
    assert.deepEqual(
      events.map((e) => [e.type, e.deleted ?? false]),
      [
        ["note.created", true],
        ["event.deleted", false],
      ],
      "one tombstone and one notice: deleted once",
    );
    const other = device(user).client();
    await until(other, (s) => s.status.kind === "synced", "the other device synced");
    assert.deepEqual(other.state.mine.state, {});
  });

  it("shows the last state at once after a reload offline, and sends what a crash left unsent exactly once", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const phone = device(user, indexedDBStorage({ factory: new IDBFactory() }));
    const first = phone.client();
    await first.write("note.created", { text: "kept" });
    await until(first, (s) => s.status.kind === "synced", "synced");
    first.close();

    phone.setOnline(false);
    const crashed = phone.client();
    await until(crashed, (s) => s.mine.loaded, "loaded");
    assert.deepEqual(texts(crashed.state.mine.state), ["kept"], "offline, the last state shows");
    await crashed.write("note.created", { text: "written, never sent" });
    crashed.close(); // the app dies before going online

    phone.setOnline(true);
    const again = phone.client();
    await until(again, (s) => s.status.kind === "synced" && Object.keys(s.mine.confirmed).length === 2, "both confirmed");
    assert.deepEqual(
      (await listed(user)).map((e) => e.payload.text),
      ["kept", "written, never sent"],
    );
  });

  it("a reduce that changes the state in place changes only its copy: the confirmed state never holds a pending write", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const phone = device(user);
    const inPlace = (s: Notes, e: SyncEvent): Notes => {
      if (e.kind === "event") {
        s[e.id] = String(e.payload.text);
      }
      return s;
    };
    const app = phone.client({ reduce: inPlace });
    await app.write("note.created", { text: "sent" });
    await until(app, (s) => s.status.kind === "synced", "synced");
    const confirmed = app.state.mine.confirmed;
    phone.setOnline(false);
    await app.write("note.created", { text: "pending" });
    await app.write("note.created", { text: "pending too" });
    assert.deepEqual(texts(app.state.mine.state), ["pending", "pending too", "sent"]);
    assert.deepEqual(texts(app.state.mine.confirmed), ["sent"]);
    assert.equal(app.state.mine.confirmed, confirmed, "the very object, unchanged");
  });

  it("a reducer that throws stops the stream's view with reducer_failed and loses no queued write", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const phone = device(user);
    phone.setOnline(false);
    const app = phone.client({
      reduce: (s, e) => {
        if (e.kind === "event" && e.payload.text === "poison") {
          throw new Error("the app's bug");
        }
        return reduce(s, e);
      },
    });
    await app.write("note.created", { text: "poison" });
    const st = await until(app, (s) => s.status.kind === "stopped", "stopped");
    assert.deepEqual(st.status, { kind: "stopped", reason: "reducer_failed", error: "Error: the app's bug" });
    phone.setOnline(true);
    assert.equal(app.state.mine.writes.length, 1, "the write is still queued");
    const fixed = phone.client();
    await until(fixed, (s) => s.status.kind === "synced", "a fixed app sends it");
    assert.equal((await listed(user)).length, 1);
  });

  it("a storage that fails a write refuses write(): the app knows it was not queued", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const inner = memoryStorage();
    const failing: SyncStorage = {
      open: (u, stream) => {
        const s = inner.open(u, stream);
        s.add = async () => {
          throw new Error("quota exceeded");
        };
        return s;
      },
    };
    const app = device(user, failing).client();
    await assert.rejects(app.write("note.created", { text: "x" }), /quota exceeded/);
    assert.equal(app.state.mine.writes.length, 0);
    assert.deepEqual(app.state.mine.state, {});
  });

  it("refuses another user's token before sending: stopped, wrong_user, the write kept", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const app = device(user).client({ getToken: () => localToken("someone-else") });
    await app.write("note.created", { text: "mine" });
    const st = await until(app, (s) => s.status.kind === "stopped", "stopped");
    assert.equal(st.status.kind === "stopped" && st.status.reason, "wrong_user");
    assert.equal(st.mine.writes.length, 1);
    assert.deepEqual(await listed(user), []);
    assert.deepEqual(await listed("someone-else"), []);
  });

  it("spaces: a shared list followed by two users, authors shown, and a removed member stopped as forbidden", async () => {
    const owner = `owner-${crypto.randomUUID()}`;
    const member = `member-${crypto.randomUUID()}`;
    const a = device(owner).client();
    const b = device(member).client();
    const space = await a.createSpace("groceries");
    await a.addMember(space.id, member, "writer");
    b.follow(space.id);
    await b.write("note.created", { text: "from b" }, { space: space.id });
    await a.write("note.created", { text: "from a" }, { space: space.id });
    const seen = await until(a, (s) => Object.keys(s.spaces[space.id]?.confirmed ?? {}).length === 2, "both notes at a");
    assert.deepEqual(texts(seen.spaces[space.id]?.confirmed ?? {}), ["from a", "from b"]);
    await until(b, (s) => Object.keys(s.spaces[space.id]?.confirmed ?? {}).length === 2, "both notes at b");
    const authors = (await listed(owner, space.id)).filter((e) => e.type === "note.created").map((e) => e.author);
    assert.deepEqual(authors.sort(), [member, owner].sort());

    await a.removeMember(space.id, member);
    const st = await until(b, (s) => s.spaces[space.id]?.status.kind === "stopped", "b stopped on the space");
    const status = st.spaces[space.id]?.status;
    assert.equal(status?.kind === "stopped" && status.reason, "forbidden");
    assert.equal(st.mine.status.kind, "synced", "the own stream goes on");
    await b.unfollow(space.id);
    assert.equal(b.state.spaces[space.id], undefined);
  });

  it("follows the same spaces after a restart, and signOut() leaves nothing of the user", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const store = new Map<string, string>();
    const phone = device(user, memoryStorage(store));
    const app = phone.client();
    const space = await app.createSpace("kept");
    await app.write("note.created", { text: "in space" }, { space: space.id });
    await until(app, (s) => s.spaces[space.id]?.status.kind === "synced" && s.status.kind === "synced", "space synced");
    app.close();
    phone.setOnline(false);
    const again = phone.client();
    const st = await until(again, (s) => Object.keys(s.spaces[space.id]?.state ?? {}).length === 1, "the space's state after a restart");
    assert.deepEqual(texts(st.spaces[space.id]?.state ?? {}), ["in space"]);
    await again.signOut();
    assert.equal(store.size, 0, "nothing kept");
  });

  it("starts over on 410: the state dropped and folded again from the floor", async () => {
    const user = `client-${crypto.randomUUID()}`;
    const call = asUser(service.url, localToken(user));
    const post = async (text: string) => {
      const id = crypto.randomUUID();
      const r = await call("POST", "/api/v1/sync/events", {
        id,
        type: "note.created",
        occurredAt: "2026-12-05T10:00:00Z",
        payload: { text },
      });
      assert.equal(r.status, 201);
      return id;
    };
    const phone = device(user);
    const app = phone.client();
    const old = await post("old");
    await until(app, (s) => old in s.mine.confirmed, "old pulled");
    app.close();
    await call("DELETE", `/api/v1/sync/events/${old}`);
    await new Promise((r) => setTimeout(r, 1200));
    await post("new"); // its commit trims the stream: the kept cursor is behind the floor
    // Wait for the trim, then open the app again over the same device.
    for (let i = 0; i < 50 && (await listed(user)).length !== 1; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal((await listed(user)).length, 1, "the deletion's notice is trimmed: only starting over drops the old note");
    const again = phone.client();
    const st = await until(again, (s) => s.status.kind === "synced" && texts(s.mine.confirmed).includes("new"), "started over");
    assert.deepEqual(texts(st.mine.confirmed), ["new"]);
  });
});
