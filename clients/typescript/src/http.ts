import { isTransient, type Retrier, retryAfterMs } from "./retry.js";
import { attemptSignal } from "./signals.js";

export type Fetch = typeof globalThis.fetch;

/** What a request came to after its retries; R: the reasons build() may refuse for. */
export type Outcome<R extends string = never> =
  | { kind: "answered"; response: Response; body: unknown; attempts: number }
  | { kind: "stopped"; reason: StopReason | R; attempts: number; error?: string };

/** What build() gives instead of a request that must not be sent: the reason to stop, and why. */
export interface Refusal<R extends string> {
  refused: R;
  error: string;
}

/**
 * Why a request was given up before an answer: the caller's signal; the
 * browser offline (navigator.onLine false); no answer at all, the browser
 * online, retrier.unreachableAfter times in a row (a wrong baseUrl, a
 * server down, a CORS refusal, a redirect: a browser tells a script no
 * more than that), or at once for a redirect where the runtime says it was
 * one (Node.js); or retrier.maxAttempts spent.
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

export const browserOnline = () => globalThis.navigator?.onLine !== false;

/**
 * Sends the request build() makes until it is answered with anything but a
 * transient status, retrying network errors, timeouts, 429 and 5xx with
 * backoff, or until it must stop (see StopReason). build() is called per
 * attempt (a fresh token, the same body and the same key); a Refusal from
 * it stops at once, with nothing sent on that attempt. A redirect is never
 * followed: the request carries the user's token, which must reach no
 * other server than baseUrl's.
 */
export async function sendUntilAnswered<R extends string = never>(
  build: () => Promise<Request | Refusal<R>>,
  a: Attempt,
): Promise<Outcome<R>> {
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
      const request = await build();
      if ("refused" in request) {
        return stop(request.refused, attempt - 1, request.error);
      }
      const response = await a.fetch(request, { signal: s.signal, redirect: "error" });
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
      if (isRedirect(err)) {
        return stop("unreachable", attempt, "redirect refused: the API must answer at baseUrl itself");
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

function stop<R extends string>(reason: StopReason | R, attempts: number, error?: string): Outcome<R> {
  return error === undefined ? { kind: "stopped", reason, attempts } : { kind: "stopped", reason, attempts, error };
}

/**
 * Whether fetch failed on a redirect it was told not to follow, where the
 * runtime says so (Node.js's fetch: "unexpected redirect"). A browser
 * rejects with the TypeError of any network error, which counts towards
 * unreachable like one.
 */
function isRedirect(err: unknown): boolean {
  return (err as { cause?: { message?: unknown } } | null)?.cause?.message === "unexpected redirect";
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

/**
 * The events resource under baseUrl (with or without a trailing slash): the
 * caller's own, or the space's whose id is space.
 */
export function eventsURL(baseUrl: string, space?: string): URL {
  return apiURL(baseUrl, space === undefined ? "api/v1/sync/events" : `${spacePath(space)}/events`);
}

/** The batch endpoint under baseUrl: the caller's own, or the space's. */
export function batchURL(baseUrl: string, space?: string): URL {
  return apiURL(baseUrl, space === undefined ? "api/v1/sync/events/batch" : `${spacePath(space)}/events/batch`);
}

/** The spaces resource under baseUrl, or a path under one space's (e.g. "members/<sub>", already encoded). */
export function spacesURL(baseUrl: string, space?: string, path?: string): URL {
  if (space === undefined) {
    return apiURL(baseUrl, "api/v1/spaces");
  }
  return apiURL(baseUrl, path === undefined ? spacePath(space) : `${spacePath(space)}/${path}`);
}

function spacePath(space: string): string {
  return `api/v1/spaces/${encodeURIComponent(space)}`;
}

export function apiURL(baseUrl: string, path: string): URL {
  return new URL(path, baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
}
