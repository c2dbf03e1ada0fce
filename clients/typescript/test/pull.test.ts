import assert from "node:assert/strict";
import { it } from "node:test";
import { PullError, pullEvents } from "../src/pull.js";
import { answer, error, fakeFetch, instantRetry } from "./helpers.js";

const ev = (n: number) => ({
  id: `id-${n}`,
  type: "t",
  occurredAt: "2026-12-03T10:00:00Z",
  receivedAt: "2026-12-03T10:00:01.000Z",
  payload: { n },
});

it("pullEvents yields every event page by page, retrying transient failures, and exposes where to resume", async () => {
  const pages: Record<string, { events: ReturnType<typeof ev>[]; nextCursor: string | null }> = {
    "": { events: [ev(1), ev(2)], nextCursor: "c2" },
    c2: { events: [ev(3), ev(4)], nextCursor: "c3" },
    c3: { events: [ev(5)], nextCursor: null },
  };
  let failed = false;
  const api = fakeFetch((req) => {
    const url = new URL(req.url);
    assert.equal(url.pathname, "/api/v1/sync/events");
    assert.equal(url.searchParams.get("limit"), "2");
    const cursor = url.searchParams.get("cursor") ?? "";
    if (cursor === "c2" && !failed) {
      failed = true;
      return error(503, "SERVICE_UNAVAILABLE");
    }
    return answer(200, pages[cursor]);
  });
  const pull = pullEvents({
    baseUrl: "https://api.example.com",
    getToken: () => "t",
    limit: 2,
    fetch: api.fetch,
    retry: instantRetry().retry,
  });
  const cursors: (string | undefined)[] = [];
  const got: unknown[] = [];
  for await (const e of pull) {
    got.push(e.payload.n);
    cursors.push(pull.cursor);
  }
  assert.deepEqual(got, [1, 2, 3, 4, 5]);
  assert.deepEqual(cursors, [undefined, undefined, "c2", "c2", "c3"], "the cursor is the start of the page being read");
  assert.equal(pull.cursor, "c3", "after the last page: its start, to see what is stored later");
  assert.ok(api.seen.every((s) => s.auth === "Bearer t"));

  const resumed: unknown[] = [];
  for await (const e of pullEvents({ baseUrl: "https://api.example.com", getToken: () => "t", cursor: "c2", limit: 2, fetch: api.fetch })) {
    resumed.push(e.payload.n);
  }
  assert.deepEqual(resumed, [3, 4, 5]);
});

it("pullEvents throws the server's refusal", async () => {
  const api = fakeFetch(() => error(400, "VALIDATION_FAILED"));
  const pull = pullEvents({ baseUrl: "https://api.example.com", getToken: () => "t", cursor: "bad", fetch: api.fetch });
  await assert.rejects(
    async () => {
      for await (const _ of pull) {
        // nothing is yielded
      }
    },
    (err: unknown) => err instanceof PullError && err.status === 400 && err.body?.message === "validation_failed",
  );
});
