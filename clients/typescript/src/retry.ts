/** How a client retries what may succeed later. */
export interface RetryOptions {
  /** First backoff cap, in ms (default 500). */
  baseDelayMs?: number;
  /** Largest backoff cap, in ms (default 30 000). */
  maxDelayMs?: number;
  /** Give up an attempt after this long, in ms (default 10 000: the function's own timeout). */
  timeoutMs?: number;
  /** Attempts per request before stopping (default: no limit, an offline-first queue retries until it is answered). */
  maxAttempts?: number;
  /**
   * Network errors in a row (no answer at all, not even a 5xx) after which
   * a request stops as "unreachable" while the device says it is online
   * (default 4). A wrong baseUrl, a server down and a CORS refusal look
   * alike to a page; this tells them from a network that is merely flaky.
   * Infinity: never.
   */
  unreachableAfter?: number;
  /** For tests: the random source in [0, 1) and the sleep. */
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface Retrier {
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  readonly unreachableAfter: number;
  /** The wait before attempt n+1 after attempt n (n from 1) failed. */
  delay(attempt: number, retryAfterMs?: number): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export function retrier(o: RetryOptions = {}): Retrier {
  const base = o.baseDelayMs ?? 500;
  const max = o.maxDelayMs ?? 30_000;
  const random = o.random ?? Math.random;
  return {
    timeoutMs: o.timeoutMs ?? 10_000,
    maxAttempts: o.maxAttempts ?? Number.POSITIVE_INFINITY,
    unreachableAfter: o.unreachableAfter ?? 4,
    // Full jitter (a uniform wait up to the exponential cap), so that many
    // clients coming back online at once spread out. A Retry-After is a
    // floor: the server said when it can take the request.
    delay(attempt, retryAfterMs) {
      const cap = Math.min(max, base * 2 ** Math.min(attempt - 1, 30));
      const jittered = random() * cap;
      return retryAfterMs === undefined ? jittered : Math.max(retryAfterMs, jittered);
    },
    sleep: o.sleep ?? sleep,
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Retry-After in ms: delay-seconds or an HTTP date (RFC 9110, 10.2.3); undefined if absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === "") {
    return undefined;
  }
  const v = header.trim();
  if (/^\d+$/.test(v)) {
    return Number(v) * 1000;
  }
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Whether a status is worth trying again with the same request. */
export function isTransient(status: number): boolean {
  return status === 429 || status >= 500;
}
