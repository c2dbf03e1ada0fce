/** How a client retries what may succeed later. */
export interface RetryOptions {
  /** First backoff cap, in ms (default 500). */
  baseDelayMs?: number;
  /**
   * The longest wait between two attempts, in ms (default 30 000; at most
   * 2 147 483 647, about 24.8 days, the longest timer a browser keeps): the
   * backoff's largest cap, and the bound of a server's Retry-After.
   */
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

/** The longest delay setTimeout keeps (2^31 - 1 ms); a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

export function retrier(o: RetryOptions = {}): Retrier {
  const base = o.baseDelayMs ?? 500;
  const max = o.maxDelayMs ?? 30_000;
  if (!(max >= 0 && max <= MAX_TIMER_MS)) {
    throw new RangeError(`retry.maxDelayMs must be 0 to ${MAX_TIMER_MS} (a timer fires at once past it), not ${max}`);
  }
  const random = o.random ?? Math.random;
  return {
    timeoutMs: o.timeoutMs ?? 10_000,
    maxAttempts: o.maxAttempts ?? Number.POSITIVE_INFINITY,
    unreachableAfter: o.unreachableAfter ?? 4,
    // Full jitter (a uniform wait up to the exponential cap), so that many
    // clients coming back online at once spread out. A Retry-After is a
    // floor, the server said when it can take the request, up to max: a
    // wait of days in an app's foreground is no answer, and one past the
    // longest timer would fire at once, again and again.
    delay(attempt, retryAfterMs) {
      const cap = Math.min(max, base * 2 ** Math.min(attempt - 1, 30));
      const jittered = random() * cap;
      return retryAfterMs === undefined ? jittered : Math.min(max, Math.max(retryAfterMs, jittered));
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

/**
 * Retry-After in ms from now (RFC 9110, 10.2.3): delay-seconds (digits
 * only), or an HTTP date in any of its three forms (IMF-fixdate, RFC 850,
 * asctime), 0 for one past; undefined if absent or anything else (a
 * fraction, a sign, a list, a date of another form). It may be huge: the
 * retrier bounds the wait.
 */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  const v = header?.trim() ?? "";
  if (/^\d+$/.test(v)) {
    return Number(v) * 1000;
  }
  const at = httpDate(v, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const TIME = String.raw`(\d{2}):(\d{2}):(\d{2})`;
const IMF_FIXDATE = new RegExp(String.raw`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) ([A-Z][a-z]{2}) (\d{4}) ${TIME} GMT$`);
const RFC850 = new RegExp(String.raw`^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, (\d{2})-([A-Z][a-z]{2})-(\d{2}) ${TIME} GMT$`);
const ASCTIME = new RegExp(String.raw`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) ([ \d]\d) ${TIME} (\d{4})$`);

/**
 * An HTTP date (RFC 9110, 5.6.7) in ms since the epoch; undefined if it is
 * none. Date.parse is not used: it takes almost anything ("1.5" is a date
 * in 2001 to V8), which would turn a malformed header into "retry now".
 */
function httpDate(v: string, now: number): number | undefined {
  let m = IMF_FIXDATE.exec(v);
  if (m) {
    const [, day, month, year, ...time] = m;
    return utc(Number(year), month, Number(day), time);
  }
  m = RFC850.exec(v);
  if (m) {
    const [, day, month, yy, ...time] = m;
    // A two-digit year more than 50 years ahead is the past century's (RFC 9110, 5.6.7).
    const thisYear = new Date(now).getUTCFullYear();
    const year = Math.floor(thisYear / 100) * 100 + Number(yy);
    return utc(year > thisYear + 50 ? year - 100 : year, month, Number(day), time);
  }
  m = ASCTIME.exec(v);
  if (m) {
    const [, month, day, h, min, sec, year] = m;
    return utc(Number(year), month, Number(day), [h, min, sec]);
  }
  return undefined;
}

/** The instant of a date's fields, or undefined for one that is no date (Feb 30, 25:00), which Date.UTC would roll over. */
function utc(year: number, monthName: string | undefined, day: number, time: (string | undefined)[]): number | undefined {
  const month = MONTHS.indexOf(monthName ?? "");
  const [h, min, sec] = time.map(Number) as [number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  if (month < 0 || day < 1 || day > daysInMonth || h > 23 || min > 59 || sec > 60) {
    return undefined;
  }
  return Date.UTC(year, month, day, h, min, sec);
}

/** Whether a status is worth trying again with the same request. */
export function isTransient(status: number): boolean {
  return status === 429 || status >= 500;
}
