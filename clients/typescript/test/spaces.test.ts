import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PullError, pullEvents } from "../src/pull.js";
import { MAX_SPACE_BATCH_EVENTS } from "../src/queue.js";
import { addMember, createSpace, deleteEvent, leaveSpace, listSpaces, removeMember, SpaceError, SpaceStopped } from "../src/spaces.js";
import type { NewEvent } from "../src/types.js";
import { answer, error, fakeFetch, instantRetry, networkError, queueAt, queueOf, TOKEN, USER, UUID_V4 } from "./helpers.js";
import { localToken } from "./server.js";

const BASE = "https://api.example.com";
const SPACE = "5d0c7f2a-8e41-4b6d-9f3a-1c2b7e6d4a90";

/** A space's events endpoints: stored events, in order; refuse answers instead while it returns a Response. */
function spaceServer(refuse: () => Response | undefined = () => undefined) {
  const stored: string[] = [];
  const api = fakeFetch(async (req) => {
    const path = new URL(req.url).pathname;
    assert.ok(path === `/api/v1/spaces/${SPACE}/events` || path === `/api/v1/spaces/${SPACE}/events/batch`, path);
    const refused = refuse();
    if (refused) {
      return refused;
    }
    const body = JSON.parse(await req.text());
    const events: NewEvent[] = path.endsWith("/batch") ? body.events : [body];
    assert.ok(events.length <= MAX_SPACE_BATCH_EVENTS, `${events.length} events in one request`);
    stored.push(...events.map((e) => e.id));
    return answer(201, path.endsWith("/batch") ? { events: [] } : {});
  });
  return { api, stored };
}

describe("a space's queue", () => {
  it("sends to the space's endpoints, in batches of at most 97", async () => {
    const { storage, entries } = await queueOf(200);
    const { api, stored } = spaceServer();
    const report = await queueAt(storage, api.fetch, { space: SPACE }).drain();
    assert.deepEqual(report, { sent: 200, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
    assert.deepEqual(
      api.seen.map((s) => (JSON.parse(s.body).events as unknown[]).length),
      [97, 97, 6],
    );
    assert.deepEqual(
      stored,
      entries.map((e) => e.event.id),
    );
    assert.deepEqual(await storage.list(), []);
  });

  it("sends a lone entry to the space's single endpoint under its own key", async () => {
    const { storage, entries } = await queueOf(1);
    const { api } = spaceServer();
    await queueAt(storage, api.fetch, { space: SPACE }).drain();
    assert.deepEqual(
      api.seen.map((s) => s.key),
      [entries[0]?.key],
    );
  });

  for (const code of ["SPACE_ROLE_FORBIDS", "SPACE_NOT_MEMBER"]) {
    it(`stops "forbidden" on 403 ${code}, keeping every entry with its keys, and sends the same batch when allowed again`, async () => {
      const { storage, entries } = await queueOf(5);
      let allowed = false;
      const { api, stored } = spaceServer(() => (allowed ? undefined : error(403, code)));
      const q = queueAt(storage, api.fetch, { space: SPACE });
      const report = await q.drain();
      assert.equal(report.stopped, "forbidden");
      assert.equal(report.error, `${code}: ${code.toLowerCase()}`);
      assert.deepEqual([report.sent, report.rejected, report.retries], [0, 0, 0]);
      assert.equal(api.seen.length, 1, "a 403 is not retried, and the drain goes no further");
      const kept = await storage.list();
      assert.deepEqual(
        kept.map(({ batch: _, ...e }) => e),
        entries,
        "nothing lost, nothing marked rejected",
      );
      const batchKey = kept[0]?.batch;
      assert.ok(batchKey !== undefined && kept.every((e) => e.batch === batchKey));
      allowed = true;
      assert.deepEqual(await q.drain(), { sent: 5, replayed: 0, conflicts: 0, rejected: 0, retries: 0 });
      assert.equal(api.seen[1]?.key, batchKey, "the very same batch, under its key");
      assert.equal(api.seen[1]?.body, api.seen[0]?.body);
      assert.deepEqual(
        stored,
        entries.map((e) => e.event.id),
      );
    });
  }

  it("a user's own queue still rejects other 403s entry by entry, as before", async () => {
    const { storage } = await queueOf(2);
    const api = fakeFetch(() => error(403, "CALLER_ID_UNSUPPORTED"));
    const q = queueAt(storage, api.fetch, { batch: { maxEvents: 1 } });
    assert.deepEqual(await q.drain(), { sent: 0, replayed: 0, conflicts: 0, rejected: 2, retries: 0 });
    assert.ok(api.seen.every((s) => s.body.startsWith("{") && !s.body.startsWith('{"events"')));
  });
});

describe("a space's pull", () => {
  it("reads the space's events, and throws PullError 403 for a caller no longer a member", async () => {
    let member = true;
    const api = fakeFetch((req) => {
      const url = new URL(req.url);
      assert.equal(url.pathname, `/api/v1/spaces/${SPACE}/events`);
      if (!member) {
        return error(403, "SPACE_NOT_MEMBER");
      }
      const ev = {
        id: "e1",
        type: "note.created",
        occurredAt: "2026-12-03T10:00:00Z",
        receivedAt: "2026-12-03T10:00:01Z",
        author: "bob",
        payload: {},
      };
      return answer(200, { events: [ev], cursor: "p1", hasMore: false, nextCursor: null });
    });
    const common = { baseUrl: BASE, getToken: () => TOKEN, fetch: api.fetch, retry: instantRetry().retry, space: SPACE };
    const authors: (string | undefined)[] = [];
    for await (const e of pullEvents(common)) {
      authors.push(e.author);
    }
    assert.deepEqual(authors, ["bob"]);
    member = false;
    await assert.rejects(
      async () => {
        for await (const _ of pullEvents({ ...common, cursor: "p1" })) {
          // nothing
        }
      },
      (err: unknown) =>
        err instanceof PullError && err.status === 403 && err.body !== null && "error" in err.body && err.body.error === "SPACE_NOT_MEMBER",
    );
  });
});

describe("spaces: create, list, members", () => {
  const options = (fetch: typeof globalThis.fetch, extra = {}) => ({
    baseUrl: BASE,
    getToken: () => TOKEN,
    fetch,
    retry: instantRetry().retry,
    ...extra,
  });

  it("createSpace sends one key with every retry until answered, and resolves to the space", async () => {
    const api = fakeFetch(async (req, n) => {
      if (n < 3) {
        return n === 1 ? networkError() : error(503, "SERVICE_UNAVAILABLE");
      }
      assert.equal(new URL(req.url).pathname, "/api/v1/spaces");
      assert.equal(req.headers.get("content-type"), "application/json");
      const b = await req.json();
      return answer(201, { ...b, role: "owner" });
    });
    const space = await createSpace(options(api.fetch), { name: "Groceries" });
    assert.match(space.id, UUID_V4, "a lowercase UUID v4 chosen by the client");
    assert.deepEqual(space, { id: space.id, name: "Groceries", role: "owner" });
    assert.equal(api.seen.length, 3);
    assert.ok(api.seen[0]?.key && UUID_V4.test(api.seen[0].key));
    assert.ok(api.seen.every((s) => s.method === "POST" && s.key === api.seen[0]?.key && s.body === api.seen[0]?.body));
  });

  it("throws SpaceError with the server's error for a refusal, and SpaceStopped with the key when given up", async () => {
    const refused = fakeFetch(() => error(409, "SPACE_ALREADY_EXISTS"));
    await assert.rejects(
      createSpace(options(refused.fetch), { id: SPACE, name: "x" }),
      (err: unknown) => err instanceof SpaceError && err.status === 409 && err.code === "SPACE_ALREADY_EXISTS",
    );

    const down = fakeFetch(() => networkError());
    let stopped: SpaceStopped | undefined;
    await createSpace(options(down.fetch), { id: SPACE, name: "x" }).catch((err) => {
      stopped = err;
    });
    assert.ok(stopped instanceof SpaceStopped);
    assert.equal(stopped.reason, "unreachable");
    assert.equal(stopped.key, down.seen[0]?.key);

    // Tried again under that key: had the server stored it, it answers the same.
    const up = fakeFetch(async (req) => answer(201, { ...(await req.json()), role: "owner" }, { "idempotent-replayed": "true" }));
    await createSpace(options(up.fetch), { id: SPACE, name: "x", key: stopped.key });
    assert.equal(up.seen[0]?.key, stopped.key);
    assert.equal(up.seen[0]?.body, down.seen[0]?.body);

    const offline = fakeFetch(() => answer(201, {}));
    await assert.rejects(
      addMember(options(offline.fetch, { online: () => false }), SPACE, "bob", "writer"),
      (err: unknown) => err instanceof SpaceStopped && err.reason === "offline",
    );
    assert.equal(offline.seen.length, 0);
  });

  it("listSpaces, addMember and removeMember send what the API takes", async () => {
    const api = fakeFetch(async (req) => {
      const url = new URL(req.url);
      if (req.method === "GET") {
        assert.equal(req.headers.get("idempotency-key"), null);
        return answer(200, { spaces: [{ id: SPACE, name: "n", role: "owner" }] });
      }
      if (req.method === "POST") {
        assert.equal(url.pathname, `/api/v1/spaces/${SPACE}/members`);
        return answer(201, { space: SPACE, ...(await req.json()) });
      }
      assert.equal(req.method, "DELETE");
      assert.equal(req.headers.get("content-type"), null, "no body, no Content-Type");
      return answer(200, { space: SPACE, member: decodeURIComponent(url.pathname.split("/").pop() ?? ""), removed: true });
    });
    const o = options(api.fetch);
    assert.deepEqual(await listSpaces(o), [{ id: SPACE, name: "n", role: "owner" }]);
    assert.deepEqual(await addMember(o, SPACE, "bob@example.com", "writer"), { space: SPACE, member: "bob@example.com", role: "writer" });
    assert.deepEqual(await removeMember(o, SPACE, "a/b c"), { space: SPACE, member: "a/b c", removed: true });
    assert.ok(api.seen[2]?.body === "" && api.seen[2].method === "DELETE");
    const [add, remove] = [api.seen[1]?.key, api.seen[2]?.key];
    assert.ok(add && remove && UUID_V4.test(add) && add !== remove, "a key of its own for each mutation");
  });

  it("deleteEvent sends a DELETE with no body under a key, to the user's stream or the space's", async () => {
    const paths: string[] = [];
    const api = fakeFetch((req) => {
      paths.push(new URL(req.url).pathname);
      return answer(200, { id: new URL(req.url).pathname.split("/").pop(), deleted: true });
    });
    const id = "6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31";
    const key = "0b6f5a52-8c1e-4d7a-9f3b-2e4c6a8d0f12";
    assert.deepEqual(await deleteEvent(options(api.fetch), id), { id, deleted: true });
    assert.deepEqual(await deleteEvent({ ...options(api.fetch), space: SPACE }, id, { key }), { id, deleted: true });
    assert.deepEqual(paths, [`/api/v1/sync/events/${id}`, `/api/v1/spaces/${SPACE}/events/${id}`]);
    assert.deepEqual(
      api.seen.map((r) => [r.method, r.body]),
      [
        ["DELETE", ""],
        ["DELETE", ""],
      ],
    );
    assert.ok(UUID_V4.test(api.seen[0]?.key ?? ""));
    assert.equal(api.seen[1]?.key, key, "the key given, for a retry of one that stopped");
  });

  it("removeMember percent-encodes the member; leaveSpace removes the token's own sub", async () => {
    const paths: string[] = [];
    const api = fakeFetch((req) => {
      paths.push(new URL(req.url).pathname);
      return answer(200, { space: SPACE, member: USER, removed: true });
    });
    await removeMember(options(api.fetch), SPACE, "a/b c");
    await leaveSpace(options(api.fetch), SPACE);
    assert.deepEqual(paths, [`/api/v1/spaces/${SPACE}/members/a%2Fb%20c`, `/api/v1/spaces/${SPACE}/members/${USER}`]);
  });

  it("with options.user, every call sends only that user's token: another's stops it, nothing sent", async () => {
    const api = fakeFetch(() => answer(200, { spaces: [] }));
    const as = (token: string) => options(api.fetch, { user: USER, getToken: () => token });
    const wrong = as(localToken("someone-else"));
    const refused = (err: unknown) => err instanceof SpaceStopped && err.reason === "wrong_user";
    await assert.rejects(createSpace(wrong, { name: "x" }), refused);
    await assert.rejects(listSpaces(wrong), refused);
    await assert.rejects(addMember(wrong, SPACE, "m", "reader"), refused);
    await assert.rejects(removeMember(wrong, SPACE, "m"), refused);
    await assert.rejects(leaveSpace(wrong, SPACE), refused);
    await assert.rejects(deleteEvent(wrong, "e"), refused);
    await assert.rejects(listSpaces(as("opaque")), (err: unknown) => err instanceof SpaceStopped && err.reason === "unreadable_token");
    assert.equal(api.seen.length, 0, "nothing sent");
    assert.deepEqual(await listSpaces(as(TOKEN)), []);
    assert.equal(api.seen.length, 1);
  });

  it("leaveSpace checks every attempt's token is still the leaving user's", async () => {
    let token = TOKEN;
    const api = fakeFetch(() => {
      token = localToken("someone-else");
      return error(503, "SERVICE_UNAVAILABLE");
    });
    await assert.rejects(leaveSpace(options(api.fetch, { getToken: () => token }), SPACE), (err: unknown) => {
      return err instanceof SpaceStopped && err.reason === "wrong_user";
    });
    assert.equal(api.seen.length, 1, "nothing sent with the other user's token");
    await assert.rejects(
      leaveSpace(options(api.fetch, { getToken: () => "opaque" }), SPACE),
      (err: unknown) => err instanceof SpaceStopped && err.reason === "unreadable_token",
    );
  });
});
