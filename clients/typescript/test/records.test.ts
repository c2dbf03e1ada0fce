import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { IDBFactory } from "fake-indexeddb";
import { createElement as h } from "react";
import { renderToString } from "react-dom/server";
import { createSyncClient, type SyncClient, type SyncClientOptions } from "../src/client.js";
import { indexedDBStorage } from "../src/indexeddb.js";
import { useRecords } from "../src/react.js";
import { foldRecords, type KeptRecords, listRecords, NO_RECORDS, type RecordEvent } from "../src/records.js";
import { memoryStorage, type SyncStorage } from "../src/storage.js";
import type { ListedEvent } from "../src/types.js";
import { asUser, localToken, startService, until } from "./server.js";

/**
 * The record model: the fold alone (commit order, last writer per field,
 * a delete final, copy on write), then the client's records() against the
 * service as make run serves it: offline changes shown at once and kept
 * across a reload (memory and IndexedDB), sent as one batch of ordinary
 * events, merged with another device's, live by a poke, and a React list.
 */

type Todo = { title: string; done: boolean };

let at = 0;
const ev = (type: string, id: string, fields?: object, extra: Partial<RecordEvent> = {}): RecordEvent => ({
  type,
  payload: { collection: "todo", id, ...(fields && { fields }) },
  occurredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, at++)).toISOString(),
  ...extra,
});
const fields = (r: KeptRecords, id: string) => r.live.todo?.[id]?.fields;

describe("foldRecords", () => {
  it("puts, patches per field and deletes in the order given; a delete is final", () => {
    const r = foldRecords(NO_RECORDS, [
      ev("record.put", "a", { title: "milk", done: false, note: "oat" }),
      ev("record.patch", "a", { done: true }),
      ev("record.put", "b", { title: "bread", done: false }),
      ev("record.patch", "b", { title: "rye bread" }),
      ev("record.delete", "b"),
      ev("record.put", "b", { title: "again", done: false }), // after the delete: ignored
      ev("record.patch", "b", { done: true }),
      ev("record.patch", "c", { title: "a patch makes it" }),
      ev("record.put", "a", { title: "milk", done: false }), // a put sets exactly its fields
    ]);
    assert.deepEqual(fields(r, "a"), { title: "milk", done: false });
    assert.equal(r.live.todo?.b, undefined);
    assert.deepEqual(fields(r, "c"), { title: "a patch makes it" });
    assert.deepEqual(r.deleted, { todo: { b: 1 } });
    assert.equal(r.live.todo?.a?.createdAt, "2026-01-01T00:00:00.000Z", "made by its first put");
    assert.equal(r.live.todo?.a?.updatedAt, "2026-01-01T00:00:08.000Z");
    assert.deepEqual(
      listRecords(r.live.todo).map((x) => x.id),
      ["a", "c"],
    );
  });

  it("keeps what no event touched by reference, and ignores other types and malformed record events", () => {
    const base = foldRecords(NO_RECORDS, [
      ev("record.put", "a", { title: "a" }),
      { type: "record.put", payload: { collection: "list", id: "x", fields: { name: "x" } }, occurredAt: "t" },
    ]);
    const same = foldRecords(base, [
      { type: "note.created", payload: { text: "x" }, occurredAt: "t" },
      { type: "record.put", payload: { collection: "todo", id: "" }, occurredAt: "t" },
      { type: "record.put", payload: { collection: "todo", id: "z", fields: [1] }, occurredAt: "t" },
      { type: "record.patch", payload: {}, occurredAt: "t" }, // a deleted event's tombstone: payload {}
    ]);
    assert.equal(same, base);
    const next = foldRecords(base, [ev("record.patch", "b", { title: "b" }, { pending: true })]);
    assert.notEqual(next.live.todo, base.live.todo);
    assert.equal(next.live.todo?.a, base.live.todo?.a, "record a untouched");
    assert.equal(next.live.list, base.live.list, "collection list untouched");
    assert.equal(next.live.todo?.b?.pending, true);
    const emptied = foldRecords(base, [{ type: "record.delete", payload: { collection: "list", id: "x" }, occurredAt: "t" }]);
    assert.equal(emptied.live.list, undefined, "a collection with no record is absent");
    assert.equal(base.live.list?.x?.fields.name, "x", "the base is never changed");
  });
});

let service: { url: string; stop: () => void };
before(async () => {
  service = await startService({ CHANGES_PER_SECOND: "0", READS_PER_SECOND: "0" });
});
after(() => service?.stop());

/** A device of user's: its network switch and storage; client() opens the app on it (no reduce: records only). */
function device(user: string, storage: SyncStorage = memoryStorage()) {
  const events = new EventTarget();
  let online = true;
  const opened: SyncClient[] = [];
  after(() => {
    for (const c of opened) {
      c.close();
    }
  });
  return {
    setOnline(on: boolean) {
      online = on;
      events.dispatchEvent(new Event(on ? "online" : "offline"));
    },
    client(extra: Partial<SyncClientOptions> = {}) {
      const c = createSyncClient({
        baseUrl: service.url,
        user,
        getToken: () => localToken(user),
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

async function listed(user: string): Promise<ListedEvent[]> {
  const r = await asUser(service.url, localToken(user))("GET", "/api/v1/sync/events?limit=1000");
  assert.equal(r.status, 200);
  return ((await r.json()) as { events: ListedEvent[] }).events;
}

const shown = (c: SyncClient) =>
  c
    .records<Todo>("todo")
    .list()
    .map((r) => [r.fields.title, r.fields.done, r.pending] as const);

/** A React list of a client's todos, keyed by id. */
function TodoList({ client }: { client: SyncClient }) {
  const todos = useRecords<Todo>(client, "todo");
  return h(
    "ul",
    null,
    todos.map((t) => h("li", { key: t.id, "data-id": t.id }, t.fields.title)),
  );
}

describe("SyncClient.records against make run", () => {
  for (const [name, storage] of [
    ["memory", () => memoryStorage(new Map())],
    ["IndexedDB", () => indexedDBStorage({ factory: new IDBFactory() })],
  ] as const) {
    it(`offline: a put, a tick and a delete show at once, survive a reload (${name}), and go as one batch of ordinary events`, async () => {
      const user = `records-${crypto.randomUUID()}`;
      const phone = device(user, storage());
      const first = phone.client();
      await until(first, (s) => s.status.kind === "synced", "synced at start");
      phone.setOnline(false);
      const todos = first.records<Todo>("todo");
      const milk = await todos.add({ title: "milk", done: false });
      const bread = await todos.add({ title: "bread", done: false });
      await todos.patch(milk, { done: true });
      await todos.delete(bread);
      assert.deepEqual(shown(first), [["milk", true, true]], "shown at once, pending");
      assert.equal(todos.get(bread), undefined);
      first.close();

      const posts: string[] = [];
      const fetch: typeof globalThis.fetch = (input, init) => {
        const req = input as Request;
        if (req.method === "POST") {
          posts.push(new URL(req.url).pathname);
        }
        return globalThis.fetch(input, init);
      };
      const reloaded = phone.client({ fetch });
      await until(reloaded, (s) => s.mine.loaded, "loaded");
      assert.deepEqual(shown(reloaded), [["milk", true, true]], "the same after a reload offline");

      phone.setOnline(true);
      await until(reloaded, (s) => s.status.kind === "synced", "synced");
      assert.deepEqual(shown(reloaded), [["milk", true, false]]);
      const events = await listed(user);
      assert.deepEqual(
        events.map((e) => [e.type, e.payload.id]),
        [
          ["record.put", milk],
          ["record.put", bread],
          ["record.patch", milk],
          ["record.delete", bread],
        ],
      );
      assert.deepEqual(posts, ["/api/v1/sync/events/batch"], "the offline burst in one request");
    });
  }

  it("two devices: last writer per field, a delete final on both; live by a poke; a React list keyed by id", async () => {
    const user = `records-${crypto.randomUUID()}`;
    const host = new URL(service.url).host;
    const live = { realtimeUrl: `ws://${host}/event/realtime`, httpHost: host };
    const a = device(user).client({ live, pollIntervalMs: 60_000 });
    const b = device(user).client({ live, pollIntervalMs: 60_000 });
    for (const c of [a, b]) {
      await until(c, (s) => s.mine.channel === "live", "live");
    }
    const id = await a.records<Todo>("todo").add({ title: "milk", done: false });
    await until(b, (s) => s.mine.records.todo?.[id] !== undefined, "b has it by a poke (polling every minute)");

    await Promise.all([a.records<Todo>("todo").patch(id, { done: true }), b.records<Todo>("todo").patch(id, { title: "oat milk" })]);
    for (const c of [a, b]) {
      await until(
        c,
        (s) =>
          s.status.kind === "synced" &&
          s.mine.records.todo?.[id]?.fields.done === true &&
          s.mine.records.todo?.[id]?.fields.title === "oat milk",
        "both fields merged",
      );
    }

    await b.records("todo").delete(id);
    await until(a, (s) => s.mine.records.todo === undefined, "a sees the delete");
    await a.records<Todo>("todo").put(id, { title: "back?", done: false }); // after the delete: ignored
    assert.equal(a.records("todo").get(id), undefined, "a delete is final, for pending changes too");
    await until(a, (s) => s.status.kind === "synced", "synced");
    assert.equal(a.records("todo").get(id), undefined);
    assert.equal(b.records("todo").get(id), undefined);

    const other = await a.records<Todo>("todo").add({ title: "eggs", done: false });
    await until(a, (s) => s.status.kind === "synced", "synced");
    assert.equal(renderToString(h(TodoList, { client: a })), `<ul><li data-id="${other}">eggs</li></ul>`);
    assert.equal(a.state.mine.state, undefined, "no reduce: no state of the app's");
  });
});
