import { afterEach } from "node:test";
import { deletedId } from "../src/pull.js";
import { SyncQueue, type SyncQueueOptions } from "../src/queue.js";
import type { RetryOptions } from "../src/retry.js";
import { MemoryStorage, type QueueStorage } from "../src/storage.js";
import type { ListedEvent, QueueEntry } from "../src/types.js";
import { EventWriter } from "../src/writer.js";
import { localToken } from "./server.js";

/** The user of the fake API's tests, and a token of theirs. */
export const USER = "user-1";
export const TOKEN = localToken(USER);

/** A MemoryStorage of USER's. */
export const memory = () => new MemoryStorage({ user: USER });

/** A JSON answer of the API. */
export function answer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

export const error = (status: number, code: string, headers: Record<string, string> = {}) =>
  answer(status, { error: code, message: code.toLowerCase() }, headers);

/** What the fake API saw: method, Idempotency-Key, body, for each attempt. */
export interface Seen {
  method: string;
  key: string | null;
  auth: string | null;
  body: string;
}

/** The network error a fake server means to give: rejected with, it is a failed request, not a failed test. */
export class SimulatedNetworkError extends TypeError {}

export const networkError = (message = "fetch failed") => Promise.reject(new SimulatedNetworkError(message));

/**
 * What went wrong inside fake servers during the running test: a failed
 * assertion, or any other error a handler threw but a network error it
 * meant. The client would take such an error for a network error and
 * retry it; instead the fake answers 400 (which the client never retries:
 * the drain or pull ends) and the test fails after it, whatever it made of
 * the answer. Each is printed too, since node:test reports only the first
 * failure of a test, and the test's own may come first.
 */
const fakeServerFailures: unknown[] = [];

afterEach(() => {
  const failures = fakeServerFailures.splice(0);
  for (const f of failures) {
    console.error("# a fake server failed:", f);
  }
  if (failures.length > 0) {
    throw failures.length === 1 ? failures[0] : new AggregateError(failures, `${failures.length} failures inside a fake server`);
  }
});

/**
 * A fetch that answers with handler, recording every request. handler runs
 * once per attempt; it may reject with networkError() (a network error) or
 * wait for the signal (a timeout, hangUntilAborted). Anything else it
 * throws (a failed assertion, a bug) fails the test (fakeServerFailures).
 */
export function fakeFetch(handler: (req: Request, n: number, signal?: AbortSignal) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const body = await req.clone().text();
    seen.push({ method: req.method, key: req.headers.get("idempotency-key"), auth: req.headers.get("authorization"), body });
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const signal = init?.signal ?? undefined;
    try {
      return await handler(req, seen.length, signal);
    } catch (err) {
      if (err instanceof SimulatedNetworkError || (signal?.aborted && err === signal.reason)) {
        throw err;
      }
      fakeServerFailures.push(err);
      return answer(400, { error: "FAKE_SERVER_FAILED", message: String(err) });
    } finally {
      inFlight--;
    }
  };
  return { fetch: fetch as typeof globalThis.fetch, seen, maxInFlight: () => maxInFlight };
}

/** Retries without waiting, recording each wait asked for. */
export function instantRetry(extra: RetryOptions = {}) {
  const waits: number[] = [];
  const retry: RetryOptions = {
    baseDelayMs: 10,
    maxDelayMs: 100,
    timeoutMs: 200,
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...extra,
  };
  return { retry, waits };
}

/**
 * An answer that never comes: the request fails when its signal aborts. A
 * timer holds the event loop open meanwhile, as a real socket would
 * (AbortSignal.timeout's own timer does not).
 */
export const hangUntilAborted = (signal?: AbortSignal) =>
  new Promise<Response>((_, reject) => {
    const keepAlive = setInterval(() => {}, 1000);
    signal?.addEventListener(
      "abort",
      () => {
        clearInterval(keepAlive);
        reject(signal.reason);
      },
      { once: true },
    );
  });

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A SyncQueue over storage and fetch at a fake API, retrying without waiting; options override. */
export function queueAt(storage: QueueStorage, fetch: typeof globalThis.fetch, options: Partial<SyncQueueOptions> = {}): SyncQueue {
  return new SyncQueue({
    storage,
    baseUrl: "https://api.example.com",
    getToken: () => TOKEN,
    fetch,
    retry: instantRetry().retry,
    ...options,
  });
}

/** What a device holds after applying pages: each event once, none deleted. */
export function applyEvents(held: Map<string, unknown>, events: ListedEvent[]) {
  for (const e of events) {
    const gone = deletedId(e);
    if (gone !== undefined) {
      held.delete(gone);
    } else {
      held.set(e.id, e.payload);
    }
  }
}

/** A MemoryStorage of USER's holding n events (payload(i), `{ i }` by default) queued by an EventWriter, and those entries. */
export async function queueOf(
  n: number,
  payload: (i: number) => Record<string, unknown> = (i) => ({ i }),
): Promise<{ storage: MemoryStorage; entries: QueueEntry[] }> {
  const storage = memory();
  const writer = new EventWriter(storage);
  const entries: QueueEntry[] = [];
  for (let i = 0; i < n; i++) {
    entries.push(await writer.write("note.created", payload(i)));
  }
  return { storage, entries };
}
