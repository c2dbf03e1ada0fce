import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { EventWriter } from "../src/writer.js";
import { answer, fakeFetch, hangUntilAborted, instantRetry, memory, queueAt, UUID_V4 } from "./helpers.js";

/**
 * The client on the oldest browsers it supports (see the README's floor),
 * here by removing what those lack: crypto.randomUUID (secure contexts
 * only, and Chrome 92, Safari 15.4), AbortSignal.any (Chrome 116, Safari
 * 17.4), AbortSignal.timeout (Chrome 103, Safari 16) and structuredClone
 * (Chrome 98, Safari 15.4). The browser tests do the same in Chromium.
 */
const removed: [object, string, PropertyDescriptor | undefined][] = [];

function remove(owner: object, name: string) {
  removed.push([owner, name, Object.getOwnPropertyDescriptor(owner, name)]);
  Object.defineProperty(owner, name, { value: undefined, configurable: true, writable: true });
}

afterEach(() => {
  for (const [owner, name, d] of removed.splice(0).reverse()) {
    if (d === undefined) {
      delete (owner as Record<string, unknown>)[name];
    } else {
      Object.defineProperty(owner, name, d);
    }
  }
});

describe("below the newest APIs", () => {
  it("writes events with UUID v4 ids and keys without crypto.randomUUID, as on a plain-HTTP origin", async () => {
    remove(globalThis.crypto, "randomUUID");
    assert.equal(typeof globalThis.crypto.randomUUID, "undefined");
    const storage = memory();
    const writer = new EventWriter(storage);
    const written = await Promise.all(Array.from({ length: 50 }, (_, i) => writer.write("note.created", { i })));
    const ids = written.flatMap((e) => [e.key, e.event.id]);
    for (const id of ids) {
      assert.match(id, UUID_V4);
    }
    assert.equal(new Set(ids).size, 100);
  });

  it("drains with a signal, batches included, without AbortSignal.any, AbortSignal.timeout or structuredClone", async () => {
    remove(AbortSignal, "any");
    remove(AbortSignal, "timeout");
    remove(globalThis, "structuredClone");
    remove(globalThis.crypto, "randomUUID");
    const storage = memory();
    const writer = new EventWriter(storage);
    for (let i = 0; i < 5; i++) {
      await writer.write("note.created", { i });
    }
    // The first attempt hangs past the timeout; the retry is answered.
    const api = fakeFetch((req, n, signal) =>
      n === 1 ? hangUntilAborted(signal) : req.json().then((b: { events: unknown[] }) => answer(201, { events: b.events })),
    );
    const report = await queueAt(storage, api.fetch).drain({ signal: new AbortController().signal });
    assert.deepEqual(report, { sent: 5, replayed: 0, conflicts: 0, rejected: 0, retries: 1 });
    assert.deepEqual(await storage.list(), []);
  });

  it("stops a drain whose signal aborts mid-request without AbortSignal.any", async () => {
    remove(AbortSignal, "any");
    remove(AbortSignal, "timeout");
    const storage = memory();
    await new EventWriter(storage).write("note.created", {});
    const stop = new AbortController();
    const api = fakeFetch((_, __, signal) => {
      setTimeout(() => stop.abort(), 5);
      return hangUntilAborted(signal);
    });
    const report = await queueAt(storage, api.fetch, { retry: instantRetry({ timeoutMs: 10_000 }).retry }).drain({ signal: stop.signal });
    assert.equal(report.stopped, "aborted");
    assert.equal((await storage.list()).length, 1);
  });
});
