import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { SyncStorage } from "../src/storage.js";
import type { QueueEntry } from "../src/types.js";

/**
 * The contract every SyncStorage passes, written once: run it with a
 * device() that makes a fresh device, whose storage() is what the app
 * opens, and again after a reload or a crash (a new storage over what the
 * device kept, never the same object).
 */
export interface ContractDevice {
  storage: () => SyncStorage;
}

export const entry = (n: number, extra: Partial<QueueEntry> = {}): QueueEntry => ({
  key: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
  event: { id: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`, type: "t", occurredAt: "2026-12-03T10:00:00Z", payload: { n } },
  status: "pending",
  ...extra,
});

const ns = async (s: { list(): Promise<QueueEntry[]> }) => (await s.list()).map((e) => e.event.payload.n);

export function storageContract(name: string, device: () => ContractDevice | Promise<ContractDevice>): void {
  describe(`${name}: the storage contract`, () => {
    it("lists a queue in the order written, updates in place, removes by key", async () => {
      const q = (await device()).storage().open("u", "me");
      for (const n of [3, 1, 2, 5, 4]) {
        await q.add(entry(n));
      }
      await q.update(entry(1, { status: "conflict" }));
      await q.remove(entry(2).key);
      await q.remove(entry(9).key); // none: nothing happens
      assert.deepEqual(
        (await q.list()).map((e) => [e.event.payload.n, e.status]),
        [
          [3, "pending"],
          [1, "conflict"],
          [5, "pending"],
          [4, "pending"],
        ],
      );
    });

    it("holds one entry per key: a second add of a key is refused, and so is an update of none", async () => {
      const q = (await device()).storage().open("u", "me");
      await q.add(entry(1));
      await assert.rejects(q.add({ ...entry(1), event: entry(2).event }));
      await assert.rejects(q.update(entry(7)));
      await assert.rejects(q.updateAll([entry(1, { batch: "b" }), entry(7)]), "all or none");
      assert.deepEqual(await q.list(), [entry(1)]);
    });

    it("keeps users and streams apart, and clear() removes one user's stream whole, view and all", async () => {
      const d = await device();
      const s = d.storage();
      const a = s.open("user-a", "me");
      const aSpace = s.open("user-a", "space:s1");
      const b = s.open("user-b", "me");
      await a.add(entry(1));
      await aSpace.add(entry(2));
      await b.add(entry(3));
      await a.saveView({ state: { a: 1 }, cursor: "p01" });
      await b.saveView({ state: { b: 1 } });
      assert.deepEqual(await ns(a), [1]);
      assert.deepEqual(await ns(aSpace), [2]);
      assert.deepEqual(await ns(b), [3]);
      await a.clear();
      const again = d.storage();
      assert.deepEqual(await ns(again.open("user-a", "me")), []);
      assert.equal(await again.open("user-a", "me").loadView(), undefined);
      assert.deepEqual(await ns(again.open("user-a", "space:s1")), [2], "the user's other stream stays");
      assert.deepEqual(await again.open("user-b", "me").loadView(), { state: { b: 1 } }, "another user's view stays");
    });

    it("keeps the state and its cursor together across a reload, the last saved whole", async () => {
      const d = await device();
      const v = d.storage().open("u", "me");
      assert.equal(await v.loadView(), undefined, "none before the first save");
      await v.saveView({ state: { notes: ["x"] }, cursor: "p0000000000000001", sent: [{ entry: entry(1), answeredAt: 1 }] });
      const sent = [{ entry: entry(2), answeredAt: 1_780_000_000_000 }];
      await v.saveView({ state: { notes: ["x", "é 🚀"] }, cursor: "p0000000000000002", spaces: ["s1"], sent });
      assert.deepEqual(await d.storage().open("u", "me").loadView(), {
        state: { notes: ["x", "é 🚀"] },
        cursor: "p0000000000000002",
        spaces: ["s1"],
        sent,
      });
    });

    it("after a crash between write and send, a new storage finds each entry with its key and its batch", async () => {
      const d = await device();
      const q = d.storage().open("u", "me");
      for (const n of [1, 2, 3]) {
        await q.add(entry(n));
      }
      await q.updateAll([entry(1, { batch: "b-1" }), entry(2, { batch: "b-1" })]); // the batch formed, then the crash
      const after = d.storage().open("u", "me");
      assert.deepEqual(await after.list(), [entry(1, { batch: "b-1" }), entry(2, { batch: "b-1" }), entry(3)]);
      await after.removeAll([entry(1).key, entry(2).key]);
      assert.deepEqual(await ns(d.storage().open("u", "me")), [3]);
    });

    it("hands out copies: changing what was listed or loaded changes nothing kept", async () => {
      const q = (await device()).storage().open("u", "me");
      await q.add(entry(1));
      await q.saveView({ state: { n: 1 } });
      const [listed] = await q.list();
      assert.ok(listed);
      listed.status = "rejected";
      const view = await q.loadView();
      (view?.state as { n: number }).n = 2;
      assert.equal((await q.list())[0]?.status, "pending");
      assert.deepEqual(await q.loadView(), { state: { n: 1 } });
    });
  });
}
