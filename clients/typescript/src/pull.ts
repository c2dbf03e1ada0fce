import { eventsURL, type Fetch, type StopReason, sendUntilAnswered } from "./http.js";
import { type RetryOptions, retrier } from "./retry.js";
import { type TokenRefusal, tokenFor } from "./token.js";
import type { ErrorBody, ListedEvent, Page } from "./types.js";

export interface PullOptions {
  baseUrl: string;
  getToken: () => string | Promise<string>;
  /**
   * The user (the `sub` of the tokens) whose copy the pages go into: each
   * attempt's token must be theirs, or nothing is sent and the pull
   * throws PullStopped "wrong_user" ("unreadable_token" for a token with
   * no readable `sub`). Give it whenever the pages are kept for one user:
   * another user's token would read that user's events into this one's
   * copy and move its cursor into the other's stream. Absent, the token is
   * sent as it is (a reader for whoever the token is).
   */
  user?: string;
  /**
   * The id of a space to read the events of (GET /api/v1/spaces/{space}/events),
   * whose events carry their `author`; the caller's own events if absent. A
   * cursor is its stream's: keep a space's apart from the user's own. A
   * caller who is no member of the space (or no longer) is refused with a
   * PullError of status 403 (SPACE_NOT_MEMBER).
   */
  space?: string;
  /** Where to start: the cursor kept from the last pull; from the first event if absent. */
  cursor?: string;
  /**
   * Events a page holds at most, 1 to 1000; 1000 if absent, so that a
   * device catching up makes as few round trips as the server allows (a
   * page is bounded by bytes too).
   */
  limit?: number;
  /**
   * Called when the server answers 410 CURSOR_EXPIRED: its retention
   * removed events after the cursor, so the device's copy of the stream
   * may hold what was removed and miss a deletion's notice. The app drops
   * its copy of this stream and its kept cursor (in one step, so that a
   * crash between leaves no stale cursor); the pull then starts over from
   * the stream's start, which begins at the server's floor, and yields
   * those pages (at most 3 times in one pull; then the 410 is thrown).
   * Without it, the 410 is thrown as a PullError.
   */
  startOver?: () => void | Promise<void>;
  fetch?: Fetch;
  retry?: RetryOptions;
  signal?: AbortSignal;
}

/**
 * The most start-overs in one pull: a retention floor rising under a pull
 * again and again (it rises at most every few minutes) is not waited out.
 */
const MAX_START_OVERS = 3;

/** The most events a page holds (the API's `limit` bound): a pull's default. */
const MAX_PAGE_EVENTS = 1000;

/** A refused read: the status and the server's error. */
export class PullError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(`GET events answered ${status}: ${body && "message" in body ? body.message : ""}`);
  }
}

/**
 * A pull given up before an answer: why (as a drain's stopped; "wrong_user"
 * and "unreadable_token" for a token refused for PullOptions.user, with
 * nothing sent) and the last failure seen.
 */
export class PullStopped extends Error {
  constructor(
    readonly reason: StopReason | TokenRefusal,
    readonly lastError?: string,
  ) {
    super(`pull stopped: ${reason}${lastError ? ` (${lastError})` : ""}`);
  }
}

/**
 * The caller's events after `cursor`, in commit order, page by page, until
 * no more pages follow now. Every event committed after the cursor comes
 * exactly once, and none committed before it appears later, so a device
 * keeps the last `cursor` and starts its next pull there, at the end of the
 * events too: nothing is read twice.
 *
 * `cursor` moves when a page has been read whole: iterate `pages()` to apply
 * a page's events and keep its cursor in one step (one IndexedDB
 * transaction, say). Iterating the events, a pull stopped inside a page
 * resumes at that page's start.
 */
export class EventPull implements AsyncIterable<ListedEvent> {
  readonly #o: PullOptions;
  #cursor: string | undefined;

  constructor(options: PullOptions) {
    this.#o = options;
    this.#cursor = options.cursor;
  }

  /** Where the next pull starts: after the last page read whole. */
  get cursor(): string | undefined {
    return this.#cursor;
  }

  /** The pages from the cursor on; each page's `cursor` is where to resume once it is applied. */
  async *pages(): AsyncGenerator<Page> {
    const r = retrier(this.#o.retry);
    const f = this.#o.fetch ?? globalThis.fetch.bind(globalThis);
    let startedOver = 0;
    for (;;) {
      const url = eventsURL(this.#o.baseUrl, this.#o.space);
      if (this.#cursor !== undefined) {
        url.searchParams.set("cursor", this.#cursor);
      }
      url.searchParams.set("limit", String(this.#o.limit ?? MAX_PAGE_EVENTS));
      const outcome = await sendUntilAnswered<TokenRefusal>(
        async () => {
          const checked = await tokenFor(this.#o.getToken, this.#o.user);
          return "refused" in checked ? checked : new Request(url, { headers: { authorization: `Bearer ${checked.token}` } });
        },
        { fetch: f, retrier: r, signal: this.#o.signal },
      );
      if (outcome.kind === "stopped") {
        throw new PullStopped(outcome.reason, outcome.error);
      }
      if (outcome.response.status !== 200) {
        const err = new PullError(outcome.response.status, outcome.body as ErrorBody);
        if (isCursorExpired(err) && this.#cursor !== undefined && this.#o.startOver !== undefined && startedOver < MAX_START_OVERS) {
          startedOver++;
          await this.#o.startOver();
          this.#cursor = undefined;
          continue;
        }
        throw err;
      }
      const page = outcome.body as Page;
      yield page;
      this.#cursor = page.cursor;
      if (!page.hasMore) {
        return;
      }
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ListedEvent> {
    for await (const page of this.pages()) {
      yield* page.events;
    }
  }
}

/**
 * Whether err is the server's 410 CURSOR_EXPIRED: retention removed events
 * after the cursor; drop the stream's copy and pull from the start (or
 * give PullOptions.startOver, which does so in the pull).
 */
export function isCursorExpired(err: unknown): boolean {
  return err instanceof PullError && err.status === 410 && err.body !== null && "error" in err.body && err.body.error === "CURSOR_EXPIRED";
}

/**
 * The id of the event `ev` tells a device to drop, or undefined: a deleted
 * event's tombstone (`deleted: true`, its payload erased) names itself; a
 * deletion's notice (type `event.deleted`, later in the stream) names the
 * deleted event in its payload. A device applies both, whichever it meets
 * first: dropping twice is dropping once.
 */
export function deletedId(ev: ListedEvent): string | undefined {
  if (ev.deleted === true) {
    return ev.id;
  }
  if (ev.type === "event.deleted") {
    const id = (ev.payload as { id?: unknown }).id;
    return typeof id === "string" ? id : undefined;
  }
  return undefined;
}

/** pullEvents(options) is new EventPull(options): iterate it (or its pages()), then keep .cursor for the next pull. */
export function pullEvents(options: PullOptions): EventPull {
  return new EventPull(options);
}
