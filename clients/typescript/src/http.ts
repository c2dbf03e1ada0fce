import { isTransient, type Retrier, retryAfterMs } from "./retry.js";

export type Fetch = typeof globalThis.fetch;

/** What a request came to after its retries. */
export type Outcome =
  | { kind: "answered"; response: Response; body: unknown; attempts: number }
  | { kind: "stopped"; reason: "aborted" | "retries_exhausted"; attempts: number };

export interface Attempt {
  fetch: Fetch;
  retrier: Retrier;
  signal?: AbortSignal;
  /** Called before each retry, with what failed: for reports and tests. */
  onRetry?: (why: string) => void;
}

/**
 * Sends the request build() makes until it is answered with anything but a
 * transient status, retrying network errors, timeouts, 429 and 5xx with
 * backoff. build() is called per attempt (a fresh token, the same body and
 * the same key).
 */
export async function sendUntilAnswered(build: () => Promise<Request>, a: Attempt): Promise<Outcome> {
  for (let attempt = 1; ; attempt++) {
    if (a.signal?.aborted) {
      return { kind: "stopped", reason: "aborted", attempts: attempt - 1 };
    }
    let retryAfter: number | undefined;
    let why: string;
    const timeout = AbortSignal.timeout(a.retrier.timeoutMs);
    const signal = a.signal ? AbortSignal.any([a.signal, timeout]) : timeout;
    try {
      const response = await a.fetch(await build(), { signal });
      // The body is read under the same signal: an answer cut off halfway is
      // a failed attempt, like no answer.
      const text = await response.text();
      if (!isTransient(response.status)) {
        return { kind: "answered", response, body: parse(text), attempts: attempt };
      }
      retryAfter = retryAfterMs(response.headers.get("retry-after"));
      why = `status ${response.status}`;
    } catch (err) {
      if (a.signal?.aborted) {
        return { kind: "stopped", reason: "aborted", attempts: attempt };
      }
      why = timeout.aborted ? "timeout" : `network: ${(err as Error).message}`;
    }
    if (attempt >= a.retrier.maxAttempts) {
      return { kind: "stopped", reason: "retries_exhausted", attempts: attempt };
    }
    a.onRetry?.(why);
    await a.retrier.sleep(a.retrier.delay(attempt, retryAfter), a.signal);
  }
}

function parse(text: string): unknown {
  if (text === "") {
    return null;
  }
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}

/** The events resource under baseUrl (with or without a trailing slash). */
export function eventsURL(baseUrl: string): URL {
  return apiURL(baseUrl, "api/v1/sync/events");
}

/** The batch endpoint under baseUrl. */
export function batchURL(baseUrl: string): URL {
  return apiURL(baseUrl, "api/v1/sync/events/batch");
}

function apiURL(baseUrl: string, path: string): URL {
  return new URL(path, baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
}
