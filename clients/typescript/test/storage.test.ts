import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { IDBFactory } from "fake-indexeddb";
import { IndexedDBStorage } from "../src/indexeddb.js";
import { MemoryStorage, type QueueStorage } from "../src/storage.js";
import type { QueueEntry } from "../src/types.js";

const entry = (n: number): QueueEntry => ({
  key: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
  event: { id: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`, type: "t", occurredAt: "2026-12-03T10:00:00Z", payload: { n } },
  status: "pending",
});

const payloads = async (s: QueueStorage) => (await s.list()).map((e) => e.event.payload.n);

/**
 * Each kind of storage on one device (a fresh device per test): open(user)
 * is what the app makes for a user; later(storage) is where the app finds
 * that user's entries next, after a reload: a new instance over what the
 * device kept (a MemoryStorage's store of serialised entries, the
 * IndexedDB databases), never the instance itself.
 */
interface Device {
  open: (user: string) => QueueStorage;
  later: (s: QueueStorage) => QueueStorage;
}
const kinds: { name: string; device: () => Device }[] = [
  {
    name: "MemoryStorage",
    device: () => {
      const store = new Map<string, string>();
      const open = (user: string) => new MemoryStorage({ user, store });
      return { open, later: (s) => open(s.user) };
    },
  },
  {
    name: "IndexedDBStorage",
    device: () => {
      const factory = new IDBFactory();
      const open = (user: string) => new IndexedDBStorage({ user, name: "queue", factory });
      return { open, later: (s) => open(s.user) };
    },
  },
];

for (const kind of kinds) {
  describe(kind.name, () => {
    it("lists entries in insertion order, updates in place, removes by key", async () => {
      const storage = kind.device().open("u");
      for (const n of [3, 1, 2]) {
        await storage.add(entry(n));
      }
      assert.deepEqual(await payloads(storage), [3, 1, 2]);
      await storage.update({ ...entry(1), status: "conflict" });
      assert.deepEqual(
        (await storage.list()).map((e) => [e.event.payload.n, e.status]),
        [
          [3, "pending"],
          [1, "conflict"],
          [2, "pending"],
        ],
      );
      await storage.remove(entry(3).key);
      await storage.remove(entry(9).key); // unknown: nothing happens
      assert.deepEqual(await payloads(storage), [1, 2]);
    });

    it("a new storage of the user, as after a reload of the app, finds the entries kept, in order, updates and all", async () => {
      const { open, later } = kind.device();
      const first = open("user-a");
      for (const n of [1, 2, 3]) {
        await first.add(entry(n));
      }
      await first.remove(entry(2).key);
      await first.updateAll([{ ...entry(3), status: "pending", batch: "b-1" }]);
      const again = later(first);
      assert.notEqual(again, first, "a reload makes a new storage");
      assert.deepEqual(await again.list(), [entry(1), { ...entry(3), batch: "b-1" }]);
      assert.deepEqual(await open("user-b").list(), [], "another user's queue is another");
      await again.add(entry(4));
      assert.deepEqual(await payloads(later(again)), [1, 3, 4]);
    });

    it("refuses a second entry with the same key, and an update of none", async () => {
      const storage = kind.device().open("u");
      await storage.add(entry(1));
      await assert.rejects(storage.add({ ...entry(1), event: entry(2).event }));
      await assert.rejects(storage.update(entry(7)));
      assert.deepEqual(await storage.list(), [entry(1)]);
    });

    it("hands out copies: changing a listed entry changes nothing stored", async () => {
      const storage = kind.device().open("u");
      await storage.add(entry(1));
      const [listed] = await storage.list();
      assert.ok(listed);
      listed.status = "rejected";
      assert.equal((await storage.list())[0]?.status, "pending");
    });

    it("is made for one user, and refuses to be made for none", () => {
      const { open } = kind.device();
      assert.equal(open("user-a").user, "user-a");
      for (const user of [undefined, "", 7]) {
        assert.throws(() => open(user as unknown as string), TypeError, `user ${user}`);
      }
    });

    it("keeps each user's entries apart on one device, and clear() removes one user's, every one", async () => {
      const { open, later } = kind.device();
      const a = open("user-a");
      const b = open("user-b");
      await a.add(entry(1));
      await a.add({ ...entry(2), status: "rejected", error: { status: 400, body: null } });
      await b.add(entry(3));
      assert.deepEqual(await payloads(a), [1, 2]);
      assert.deepEqual(await payloads(b), [3]);
      await a.clear();
      assert.deepEqual(await payloads(later(a)), [], "none of a's entries is left, whatever its status");
      assert.deepEqual(await payloads(b), [3], "b's are untouched");
    });
  });
}

describe("MemoryStorage without a store", () => {
  it("persists nothing: a new one, as after a reload of the app, starts empty, even for the same user", async () => {
    const storage = new MemoryStorage({ user: "u" });
    await storage.add(entry(1));
    assert.deepEqual(await payloads(storage), [1]);
    assert.deepEqual(await new MemoryStorage({ user: "u" }).list(), []);
  });
});

describe("MemoryStorage over a store", () => {
  it("keeps each entry in it as JSON, under a key of its user's, and nothing else", async () => {
    const store = new Map<string, string>();
    const storage = new MemoryStorage({ user: "auth0|a", store });
    await storage.add(entry(1));
    assert.deepEqual(
      [...store.values()].map((json) => JSON.parse(json)),
      [entry(1)],
    );
    await storage.clear();
    assert.equal(store.size, 0);
  });
});

describe("IndexedDBStorage: users, reloads, clear()", () => {
  it("keeps a user's entries across a reload of the app, in that user's database alone", async () => {
    const factory = new IDBFactory();
    const first = new IndexedDBStorage({ user: "user-a", name: "queue", factory });
    for (const n of [1, 2, 3]) {
      await first.add(entry(n));
    }
    await first.remove(entry(2).key);
    await first.close();
    const again = new IndexedDBStorage({ user: "user-a", name: "queue", factory });
    assert.deepEqual(await again.list(), [entry(1), entry(3)]);
    assert.deepEqual(
      await new IndexedDBStorage({ user: "user-b", name: "queue", factory }).list(),
      [],
      "another user's is another database",
    );
    assert.deepEqual((await factory.databases()).map((d) => d.name).sort(), ["queue:user-a", "queue:user-b"]);
  });

  it("names its database for the queue and the user, the user URI-encoded", () => {
    const s = new IndexedDBStorage({ user: "auth0|a:b/c", factory: new IDBFactory() });
    assert.equal(s.database, "sync-events-queue:auth0%7Ca%3Ab%2Fc");
  });

  it("clear() deletes the user's database, closing it in every tab, and a new storage of the user starts empty", async () => {
    const factory = new IDBFactory();
    const tab1 = new IndexedDBStorage({ user: "user-a", factory });
    const tab2 = new IndexedDBStorage({ user: "user-a", factory });
    const other = new IndexedDBStorage({ user: "user-b", factory });
    await tab1.add(entry(1));
    await other.add(entry(2));
    assert.deepEqual(await payloads(tab2), [1], "the tabs share the user's queue");
    await tab1.clear();
    assert.deepEqual(
      (await factory.databases()).map((d) => d.name),
      [other.database],
    );
    await assert.rejects(tab1.list(), /deleted \(clear\(\)\)/);
    await assert.rejects(tab2.add(entry(3)), /deleted by another tab/);
    assert.deepEqual(await payloads(new IndexedDBStorage({ user: "user-a", factory })), []);
    assert.deepEqual(await payloads(other), [2]);
  });

  it("never opens a database of the unpartitioned queue an older version wrote", async () => {
    const factory = new IDBFactory();
    // The older version's database: its default name, rows of { entry }, no user.
    await new Promise<void>((resolve, reject) => {
      const open = factory.open("sync-events-queue", 1);
      open.onupgradeneeded = () => {
        open.result.createObjectStore("entries", { keyPath: "seq", autoIncrement: true }).add({ entry: entry(1) });
      };
      open.onsuccess = () => {
        open.result.close();
        resolve();
      };
      open.onerror = () => reject(open.error);
    });
    const storage = new IndexedDBStorage({ user: "user-a", factory });
    assert.deepEqual(await storage.list(), []);
    await storage.clear();
    assert.deepEqual(
      (await factory.databases()).map((d) => d.name),
      ["sync-events-queue"],
      "the old database is left for the app to delete or move (see the README)",
    );
  });
});
