import assert from "node:assert/strict";
import { it } from "node:test";
import { PullError, PullStopped, pullEvents } from "../src/pull.js";
import { answer, error, fakeFetch, instantRetry, TOKEN, USER } from "./helpers.js";
import { localToken } from "./server.js";

const ev = (n: number) => ({
  id: `id-${n}`,
  type: "t",
  occurredAt: "2026-12-03T10:00:00Z",
  receivedAt: "2026-12-03T10:00:01.000Z",
  payload: { n },
});

/** A server of `stored` events whose pages hold `limit`: cursors are positions ("p" + the count read). */
function pagedServer(stored: ReturnType<typeof ev>[], onRequest: (cursor: string) => Response | undefined = () => undefined) {
  return fakeFetch((req) => {
    const url = new URL(req.url);
    assert.equal(url.pathname, "/api/v1/sync/events");
    const cursor = url.searchParams.get("cursor") ?? "p0";
    const injected = onRequest(cursor);
    if (injected) {
      return injected;
    }
    const from = Number(cursor.slice(1));
    const limit = Number(url.searchParams.get("limit") ?? 50);
    const events = stored.slice(from, from + limit);
    const hasMore = from + limit < stored.length;
    const next = `p${from + events.length}`;
    return answer(200, { events, cursor: next, hasMore, nextCursor: hasMore ? next : null });
  });
}

it("pullEvents yields every event page by page, retrying transient failures, and resumes where the last page ended", async () => {
  const stored = [1, 2, 3, 4, 5].map(ev);
  let failed = false;
  const api = pagedServer(stored, (cursor) => {
    if (cursor === "p2" && !failed) {
      failed = true;
      return error(503, "SERVICE_UNAVAILABLE");
    }
  });
  const common = { baseUrl: "https://api.example.com", getToken: () => TOKEN, limit: 2, fetch: api.fetch, retry: instantRetry().retry };
  const pull = pullEvents(common);
  const cursors: (string | undefined)[] = [];
  const got: unknown[] = [];
  for await (const e of pull) {
    got.push(e.payload.n);
    cursors.push(pull.cursor);
  }
  assert.deepEqual(got, [1, 2, 3, 4, 5]);
  assert.deepEqual(cursors, [undefined, undefined, "p2", "p2", "p4"], "the cursor moves when a page has been read whole");
  assert.equal(pull.cursor, "p5", "after the last page: the end of the events");
  assert.equal(api.seen.length, 4, "three pages and one retry");
  assert.ok(api.seen.every((s) => s.auth === `Bearer ${TOKEN}`));

  // Later: two more events; the next pull starts at the end, reads only them, and re-reads nothing.
  stored.push(ev(6), ev(7));
  const before = api.seen.length;
  const next = pullEvents({ ...common, cursor: pull.cursor });
  const more: unknown[] = [];
  for await (const e of next) {
    more.push(e.payload.n);
  }
  assert.deepEqual(more, [6, 7]);
  assert.equal(api.seen.length - before, 1, "one request");
  assert.equal(next.cursor, "p7");

  // Nothing new: one request, no event, the cursor stays.
  const idle = pullEvents({ ...common, cursor: next.cursor });
  for await (const _ of idle) {
    assert.fail("no event was stored");
  }
  assert.equal(idle.cursor, "p7");
});

it("pullEvents' pages carry the cursor to keep with the events they hold", async () => {
  const api = pagedServer([1, 2, 3].map(ev));
  const pages: [number[], string][] = [];
  for await (const page of pullEvents({ baseUrl: "https://api.example.com", getToken: () => TOKEN, limit: 2, fetch: api.fetch }).pages()) {
    pages.push([page.events.map((e) => e.payload.n as number), page.cursor]);
  }
  assert.deepEqual(pages, [
    [[1, 2], "p2"],
    [[3], "p3"],
  ]);
});

it("pullEvents asks for the largest pages unless told otherwise: a device catching up on 2,500 events makes 3 round trips, not 50", async () => {
  const stored = Array.from({ length: 2500 }, (_, i) => ev(i + 1));
  const api = pagedServer(stored);
  let pulled = 0;
  for await (const _ of pullEvents({ baseUrl: "https://api.example.com", getToken: () => TOKEN, fetch: api.fetch })) {
    pulled++;
  }
  assert.equal(pulled, 2500);
  assert.equal(api.seen.length, 3);
});

it("pullEvents throws the server's refusal", async () => {
  const api = fakeFetch(() => error(400, "VALIDATION_FAILED"));
  const pull = pullEvents({ baseUrl: "https://api.example.com", getToken: () => TOKEN, cursor: "bad", fetch: api.fetch });
  await assert.rejects(
    async () => {
      for await (const _ of pull) {
        // nothing is yielded
      }
    },
    (err: unknown) => err instanceof PullError && err.status === 400 && err.body?.message === "validation_failed",
  );
});

it("pullEvents for a user sends only that user's token: another's, or one with no sub, stops it before anything is sent", async () => {
  const api = pagedServer([ev(1), ev(2)]);
  const read = async (getToken: () => string) => {
    const pull = pullEvents({ baseUrl: "https://api.example.com", user: USER, getToken, fetch: api.fetch, retry: instantRetry().retry });
    const ids: string[] = [];
    for await (const e of pull) {
      ids.push(e.id);
    }
    return ids;
  };
  for (const [token, reason] of [
    [localToken("someone-else"), "wrong_user"],
    ["opaque", "unreadable_token"],
  ]) {
    await assert.rejects(
      read(() => token as string),
      (err: unknown) => err instanceof PullStopped && err.reason === reason,
      reason,
    );
  }
  assert.equal(api.seen.length, 0, "nothing sent");
  assert.deepEqual(await read(() => TOKEN), ["id-1", "id-2"], "the user's own token reads");
});

it("pullEvents with startOver: a 410 CURSOR_EXPIRED drops the copy and reads from the start; a floor that keeps rising under it stops it after 3", async () => {
  const stored = [ev(1), ev(2), ev(3)];
  // The floor is at p1: a cursor below it is refused; from the start, the stream begins at event 2.
  let floor = 1;
  const api = pagedServer(stored, (cursor) => {
    const at = Number(cursor.slice(1));
    if (cursor !== "p0" && at < floor) {
      return error(410, "CURSOR_EXPIRED");
    }
    if (cursor === "p0") {
      const events = stored.slice(floor, floor + 1);
      return answer(200, { events, cursor: `p${floor + 1}`, hasMore: true, nextCursor: `p${floor + 1}` });
    }
    return undefined;
  });
  const base = { baseUrl: "https://api.example.com", getToken: () => TOKEN, fetch: api.fetch, limit: 1 };
  let dropped = 0;
  const held: string[] = ["stale"];
  const pull = pullEvents({
    ...base,
    cursor: "p0000",
    startOver: () => {
      dropped++;
      held.length = 0;
    },
  });
  // "p0000" is a position below the floor (0 < 1) that is not the start.
  for await (const e of pull) {
    held.push(e.id);
  }
  assert.equal(dropped, 1);
  assert.deepEqual(held, ["id-2", "id-3"]);

  // A floor that rises past every page it hands out: 3 start-overs, then the 410.
  floor = 0;
  let starts = 0;
  const rising = pagedServer(stored, (cursor) => {
    if (cursor === "p0") {
      starts++;
      return answer(200, { events: [ev(1)], cursor: "p1", hasMore: true, nextCursor: "p1" });
    }
    return error(410, "CURSOR_EXPIRED");
  });
  let overs = 0;
  await assert.rejects(
    async () => {
      for await (const _ of pullEvents({ ...base, fetch: rising.fetch, cursor: "p1", startOver: () => void overs++ })) {
        // pages from the start, each followed by a 410
      }
    },
    (err: unknown) => err instanceof PullError && err.status === 410,
  );
  assert.equal(overs, 3);
  assert.equal(starts, 3);
});
