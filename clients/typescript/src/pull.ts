import { eventsURL, type Fetch, sendUntilAnswered } from "./http.js";
import { type RetryOptions, retrier } from "./retry.js";
import type { ErrorBody, ListedEvent, Page } from "./types.js";

export interface PullOptions {
  baseUrl: string;
  getToken: () => string | Promise<string>;
  /** Where to start: a cursor kept from an earlier pull; from the first event if absent. */
  cursor?: string;
  /** Events a page holds at most, 1 to 100 (the server's default, 50, if absent). */
  limit?: number;
  fetch?: Fetch;
  retry?: RetryOptions;
  signal?: AbortSignal;
}

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
 * The caller's events from cursor on, in the order the server received
 * them, page by page. `cursor` is where to resume a later pull: the start of
 * the page being read until it has all been yielded, then the next page's.
 * A pull resumed from it may yield again events of a page it stopped in
 * (never skip one); drop the ids you have. On the last page it stays at that
 * page's start, so a later pull from it sees the events stored since.
 */
export class EventPull implements AsyncIterable<ListedEvent> {
  readonly #o: PullOptions;
  #cursor: string | undefined;

  constructor(options: PullOptions) {
    this.#o = options;
    this.#cursor = options.cursor;
  }

  get cursor(): string | undefined {
    return this.#cursor;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ListedEvent> {
    const r = retrier(this.#o.retry);
    const f = this.#o.fetch ?? globalThis.fetch.bind(globalThis);
    for (;;) {
      const url = eventsURL(this.#o.baseUrl);
      if (this.#cursor !== undefined) {
        url.searchParams.set("cursor", this.#cursor);
      }
      if (this.#o.limit !== undefined) {
        url.searchParams.set("limit", String(this.#o.limit));
      }
      const outcome = await sendUntilAnswered(
        async () => new Request(url, { headers: { authorization: `Bearer ${await this.#o.getToken()}` } }),
        { fetch: f, retrier: r, signal: this.#o.signal },
      );
      if (outcome.kind === "stopped") {
        throw new Error(`pull stopped: ${outcome.reason}`);
      }
      if (outcome.response.status !== 200) {
        throw new PullError(outcome.response.status, outcome.body as ErrorBody);
      }
      const page = outcome.body as Page;
      yield* page.events;
      if (page.nextCursor === null) {
        return;
      }
      this.#cursor = page.nextCursor;
    }
  }
}

/** pullEvents(options) is new EventPull(options): iterate it, read .cursor to resume. */
export function pullEvents(options: PullOptions): EventPull {
  return new EventPull(options);
}
