import { isTransient, type Retrier, retryAfterMs } from "./retry.js";
import { attemptSignal } from "./signals.js";

export type Fetch = typeof globalThis.fetch;

/** What a request came to after its retries. */
export type Outcome =
  | { kind: "answered"; response: Response; body: unknown; attempts: number }
  | { kind: "stopped"; reason: StopReason; attempts: number; error?: string };

/**
 * Why a request was given up before an answer: the caller's signal; the
 * browser offline (navigator.onLine false); no answer at all, the browser
 * online, retrier.unreachableAfter times in a row (a wrong baseUrl, a
 * server down, a CORS refusal: a browser tells a script no more than that);
 * or retrier.maxAttempts spent.
 */
export type StopReason = "aborted" | "offline" | "unreachable" | "retries_exhausted";

export interface Attempt {
  fetch: Fetch;
  retrier: Retrier;
  signal?: AbortSignal;
  /** Called before each retry, with what failed: for reports and tests. */
  onRetry?: (why: string) => void;
  /** Whether the device is online; navigator.onLine by default (true where there is none). */
  online?: () => boolean;
}

const browserOnline = () => globalThis.navigator?.onLine !== false;

/**
 * Sends the request build() makes until it is answered with anything but a
 * transient status, retrying network errors, timeouts, 429 and 5xx with
 * backoff, or until it must stop (see StopReason). build() is called per
 * attempt (a fresh token, the same body and the same key).
 */
export async function sendUntilAnswered(build: () => Promise<Request>, a: Attempt): Promise<Outcome> {
  const online = a.online ?? browserOnline;
  let unanswered = 0; // network errors in a row
  for (let attempt = 1; ; attempt++) {
    if (a.signal?.aborted) {
      return stop("aborted", attempt - 1);
    }
    if (!online()) {
      return stop("offline", attempt - 1, "the browser is offline");
    }
    let retryAfter: number | undefined;
    let why: string;
    const s = attemptSignal(a.signal, a.retrier.timeoutMs);
    try {
      const response = await a.fetch(await build(), { signal: s.signal });
      // The body is read under the same signal: an answer cut off halfway is
      // a failed attempt, like no answer.
      const text = await response.text();
      unanswered = 0;
      if (!isTransient(response.status)) {
        return { kind: "answered", response, body: parse(text), attempts: attempt };
      }
      retryAfter = retryAfterMs(response.headers.get("retry-after"));
      why = `status ${response.status}`;
    } catch (err) {
      if (a.signal?.aborted) {
        return stop("aborted", attempt);
      }
      why = s.timedOut() ? "timeout" : `network: ${(err as Error).message}`;
      if (!s.timedOut()) {
        unanswered++;
      }
    } finally {
      s.release();
    }
    if (!online()) {
      return stop("offline", attempt, why);
    }
    if (unanswered >= a.retrier.unreachableAfter) {
      return stop("unreachable", attempt, why);
    }
    if (attempt >= a.retrier.maxAttempts) {
      return stop("retries_exhausted", attempt, why);
    }
    a.onRetry?.(why);
    await a.retrier.sleep(a.retrier.delay(attempt, retryAfter), a.signal);
  }
}

function stop(reason: StopReason, attempts: number, error?: string): Outcome {
  return error === undefined ? { kind: "stopped", reason, attempts } : { kind: "stopped", reason, attempts, error };
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
