import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { PullError, pullEvents } from "../src/pull.js";
import { SyncQueue } from "../src/queue.js";
import type { RetryOptions } from "../src/retry.js";
import { addMember, createSpace, leaveSpace, listSpaces, removeMember, SpaceError } from "../src/spaces.js";
import { MemoryStorage } from "../src/storage.js";
import type { ListedEvent } from "../src/types.js";
import { uuidv4 } from "../src/uuid.js";
import { EventWriter } from "../src/writer.js";
import { FaultProxy } from "./fault-proxy.js";
import { localToken, startService } from "./server.js";

/**
 * Spaces against the service as make run serves it: a space created through
 * a network that loses the first answer, members with each role, a writer's
 * queue, a reader's refused queue, a member removed mid-way; the stream
 * read by each, with its authors and its membership events.
 */

let service: Awaited<ReturnType<typeof startService>>;
let proxy: FaultProxy;

before(async () => {
  service = await startService();
  proxy = await FaultProxy.start({
    upstream: service.url,
    seed: 1,
    rates: { reset_before_forwarding: 0, drop_after_answer: 0, delay_past_timeout: 0, answer_503: 0 },
    delayMs: 0,
    // The create's first answer is lost after the server committed it.
    first: { "POST /api/v1/spaces": ["drop_after_answer"] },
  });
});

after(async () => {
  await proxy?.close();
  service?.stop();
});

const retry: RetryOptions = { baseDelayMs: 20, maxDelayMs: 1000, timeoutMs: 5000 };

/** A user of the test: their token, their options for the spaces' calls and pulls, and a queue of their own for the space. */
function user(name: string) {
  const sub = `${name}-${uuidv4()}`;
  const token = localToken(sub);
  const api = { baseUrl: service.url, getToken: () => token, retry };
  return {
    sub,
    token,
    api,
    queue: (space: string) => {
      const storage = new MemoryStorage({ user: sub });
      return { storage, writer: new EventWriter(storage), queue: new SyncQueue({ ...api, storage, space }) };
    },
  };
}

async function pullAll(o: Parameters<typeof pullEvents>[0]): Promise<{ events: ListedEvent[]; cursor: string | undefined }> {
  const pull = pullEvents(o);
  const events: ListedEvent[] = [];
  for await (const e of pull) {
    events.push(e);
  }
  return { events, cursor: pull.cursor };
}

it("a space shared by an owner, a writer and a reader: each event once, with its author; refusals stop queues with nothing lost", async () => {
  const alice = user("alice");
  const bob = user("bob");
  const carol = user("carol");

  // Alice creates the space through the proxy, which drops the first answer
  // after the server committed it: the retry, under the same key, is
  // answered the same (a replay), and the space is created once.
  const sent: { key: string | null; body: string }[] = [];
  const replayed: (string | null)[] = [];
  const recording: typeof globalThis.fetch = async (input, init) => {
    const req = input as Request;
    sent.push({ key: req.headers.get("idempotency-key"), body: await req.clone().text() });
    const res = await globalThis.fetch(input, init);
    replayed.push(res.headers.get("idempotent-replayed"));
    return res;
  };
  const spaceId = uuidv4();
  const space = await createSpace({ ...alice.api, baseUrl: proxy.url, fetch: recording }, { id: spaceId, name: "Groceries" });
  assert.deepEqual(space, { id: spaceId, name: "Groceries", role: "owner" });
  assert.equal(proxy.received.get("POST /api/v1/spaces"), 2, "the lost answer's request was sent again");
  assert.equal(sent.length, 2);
  assert.ok(sent[0]?.key && sent.every((s) => s.key === sent[0]?.key && s.body === sent[0]?.body), "one key, one body");
  assert.deepEqual(replayed, ["true"], "the answer heard is a replay");
  // Sent again under its key, directly: the same answer. Under another key: the id is taken.
  assert.deepEqual(await createSpace(alice.api, { id: spaceId, name: "Groceries", key: sent[0]?.key ?? "" }), space);
  await assert.rejects(
    createSpace(alice.api, { id: spaceId, name: "Groceries" }),
    (err: unknown) => err instanceof SpaceError && err.status === 409 && err.code === "SPACE_ALREADY_EXISTS",
  );

  assert.deepEqual(await addMember(alice.api, spaceId, bob.sub, "writer"), { space: spaceId, member: bob.sub, role: "writer" });
  assert.deepEqual(await addMember(alice.api, spaceId, carol.sub, "reader"), { space: spaceId, member: carol.sub, role: "reader" });
  assert.deepEqual(await listSpaces(bob.api), [{ id: spaceId, name: "Groceries", role: "writer" }]);
  assert.deepEqual(await listSpaces(carol.api), [{ id: spaceId, name: "Groceries", role: "reader" }]);
  await assert.rejects(
    addMember(bob.api, spaceId, `dave-${uuidv4()}`, "writer"),
    (err: unknown) => err instanceof SpaceError && err.status === 403 && err.code === "SPACE_ROLE_FORBIDS",
  );

  // Bob writes through his queue of the space: a batch and a lone entry.
  const b = bob.queue(spaceId);
  const bobNotes: string[] = [];
  for (let i = 0; i < 5; i++) {
    bobNotes.push((await b.writer.write("note.created", { text: `bob ${i}` })).event.id);
  }
  assert.deepEqual(await b.queue.drain(), { sent: 5, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
  bobNotes.push((await b.writer.write("note.created", { text: "bob 5" })).event.id);
  assert.deepEqual(await b.queue.drain(), { sent: 1, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
  // Alice writes too; her own stream is another.
  const a = alice.queue(spaceId);
  const aliceNote = (await a.writer.write("note.created", { text: "alice 0" })).event.id;
  assert.equal((await a.queue.drain()).sent, 1);

  // Carol reads the space: the membership events, then the notes, each with its author.
  const carolRead = await pullAll({ ...carol.api, space: spaceId, limit: 3 });
  const summary = (events: ListedEvent[]) => events.map((e) => [e.type, e.author, e.type.startsWith("space.") ? e.payload : e.id]);
  assert.deepEqual(summary(carolRead.events), [
    ["space.created", alice.sub, { name: "Groceries" }],
    ["space.member_added", alice.sub, { member: bob.sub, role: "writer" }],
    ["space.member_added", alice.sub, { member: carol.sub, role: "reader" }],
    ...bobNotes.map((id) => ["note.created", bob.sub, id]),
    ["note.created", alice.sub, aliceNote],
  ]);
  // Alice's own stream holds none of it.
  assert.deepEqual((await pullAll(alice.api)).events, []);

  // Carol, a reader, writes: her drain stops "forbidden" and keeps every entry.
  const c = carol.queue(spaceId);
  for (let i = 0; i < 3; i++) {
    await c.writer.write("note.created", { text: `carol ${i}` });
  }
  const before = await c.storage.list();
  const refused = await c.queue.drain();
  assert.equal(refused.stopped, "forbidden");
  assert.match(refused.error ?? "", /^SPACE_ROLE_FORBIDS/);
  assert.deepEqual([refused.sent, refused.rejected], [0, 0]);
  assert.deepEqual(
    (await c.storage.list()).map(({ batch: _, ...e }) => e),
    before,
    "nothing lost",
  );

  // Alice removes Bob: his next pull is refused, and so is his next drain.
  assert.deepEqual(await removeMember(alice.api, spaceId, bob.sub), { space: spaceId, member: bob.sub, removed: true });
  await assert.rejects(
    pullAll({ ...bob.api, space: spaceId }),
    (err: unknown) =>
      err instanceof PullError && err.status === 403 && err.body !== null && "error" in err.body && err.body.error === "SPACE_NOT_MEMBER",
  );
  const late = await b.writer.write("note.created", { text: "bob, removed" });
  const bobRefused = await b.queue.drain();
  assert.equal(bobRefused.stopped, "forbidden");
  assert.match(bobRefused.error ?? "", /^SPACE_NOT_MEMBER/);
  assert.deepEqual(await b.storage.list(), [late], "kept, with its key");
  assert.deepEqual(await listSpaces(bob.api), []);

  // The last owner may not leave; Carol leaves.
  await assert.rejects(
    leaveSpace(alice.api, spaceId),
    (err: unknown) => err instanceof SpaceError && err.status === 409 && err.code === "SPACE_LAST_OWNER",
  );
  assert.deepEqual(await leaveSpace(carol.api, spaceId), { space: spaceId, member: carol.sub, removed: true });

  // Carol's reading went on from her cursor until she left... and then it is refused.
  await assert.rejects(
    pullAll({ ...carol.api, space: spaceId, cursor: carolRead.cursor }),
    (err: unknown) => err instanceof PullError && err.status === 403,
  );

  // What the space holds, as Alice reads it from its start: each note once, and the removals.
  const all = (await pullAll({ ...alice.api, space: spaceId })).events;
  const notes = all.filter((e) => e.type === "note.created").map((e) => e.id);
  assert.deepEqual(notes, [...bobNotes, aliceNote], "each note once, none of the refused");
  // The removals, by whom, of whom. The contract has the role they had in
  // the payload too: checked where the server fills it in.
  const removals = all.filter((e) => e.type === "space.member_removed");
  assert.deepEqual(
    removals.map((e) => [e.author, e.payload.member]),
    [
      [alice.sub, bob.sub],
      [carol.sub, carol.sub],
    ],
  );
  for (const [e, had] of [
    [removals[0], "writer"],
    [removals[1], "reader"],
  ] as const) {
    if (e?.payload.role !== undefined) {
      assert.equal(e.payload.role, had);
    }
  }
  assert.equal(all.filter((e) => e.type === "space.created").length, 1, "created once");
});
