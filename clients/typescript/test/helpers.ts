import { SyncQueue, type SyncQueueOptions } from "../src/queue.js";
import type { RetryOptions } from "../src/retry.js";
import type { QueueStorage } from "../src/storage.js";

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

/**
 * A fetch that answers with handler, recording every request. handler runs
 * once per attempt; it may throw (a network error) or wait for the signal
 * (a timeout).
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
    try {
      return await handler(req, seen.length, init?.signal ?? undefined);
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
    getToken: () => "t",
    fetch,
    retry: instantRetry().retry,
    ...options,
  });
}
