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

// Each kind of storage, and how the app "reloads" over it: a new instance
// over the same data.
const kinds: { name: string; open: () => { storage: QueueStorage; reload: () => Promise<QueueStorage> } }[] = [
  {
    name: "MemoryStorage",
    open: () => {
      const storage = new MemoryStorage();
      return { storage, reload: async () => storage };
    },
  },
  {
    name: "IndexedDBStorage",
    open: () => {
      const factory = new IDBFactory();
      const storage = new IndexedDBStorage("queue", factory);
      return {
        storage,
        reload: async () => {
          await storage.close();
          return new IndexedDBStorage("queue", factory);
        },
      };
    },
  },
];

for (const kind of kinds) {
  describe(kind.name, () => {
    it("lists entries in insertion order, updates in place, removes by key", async () => {
      const { storage } = kind.open();
      for (const n of [3, 1, 2]) {
        await storage.add(entry(n));
      }
      assert.deepEqual(
        (await storage.list()).map((e) => e.event.payload.n),
        [3, 1, 2],
      );
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
      assert.deepEqual(
        (await storage.list()).map((e) => e.event.payload.n),
        [1, 2],
      );
    });

    it("refuses a second entry with the same key, and an update of none", async () => {
      const { storage } = kind.open();
      await storage.add(entry(1));
      await assert.rejects(storage.add({ ...entry(1), event: entry(2).event }));
      await assert.rejects(storage.update(entry(7)));
      assert.deepEqual(await storage.list(), [entry(1)]);
    });

    it("keeps its entries across a reload of the app", async () => {
      const { storage, reload } = kind.open();
      for (const n of [1, 2, 3]) {
        await storage.add(entry(n));
      }
      await storage.remove(entry(2).key);
      const again = await reload();
      assert.deepEqual(await again.list(), [entry(1), entry(3)]);
    });

    it("hands out copies: changing a listed entry changes nothing stored", async () => {
      const { storage } = kind.open();
      await storage.add(entry(1));
      const [listed] = await storage.list();
      assert.ok(listed);
      listed.status = "rejected";
      assert.equal((await storage.list())[0]?.status, "pending");
    });
  });
}
