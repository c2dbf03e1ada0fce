import { eventsURL, type Fetch, sendUntilAnswered } from "./http.js";
import { type Retrier, type RetryOptions, retrier } from "./retry.js";
import type { QueueStorage } from "./storage.js";
import type { ApiError, ErrorBody, QueueEntry } from "./types.js";

export interface SyncQueueOptions {
  storage: QueueStorage;
  /** Where the API is, e.g. https://abc.execute-api.eu-west-1.amazonaws.com */
  baseUrl: string;
  /** The bearer token for the next request (asked for each attempt). */
  getToken: () => string | Promise<string>;
  fetch?: Fetch;
  retry?: RetryOptions;
}

/** What a drain did. */
export interface DrainReport {
  /** Entries the server stored on this send (201). */
  sent: number;
  /** Entries the server had already stored: a replayed 201, or 409 EVENT_ALREADY_EXISTS. */
  replayed: number;
  /** Entries refused with 409 IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD: kept, status "conflict". */
  conflicts: number;
  /** Entries refused with another 4xx: kept, status "rejected", with the server's error. */
  rejected: number;
  /** Attempts made again after a network error, timeout, 429 or 5xx. */
  retries: number;
  /**
   * Why the drain ended before the queue was empty: "unauthorized" (a 401:
   * refresh the token, then drain again), "aborted" (the signal), or
   * "retries_exhausted" (retry.maxAttempts). Absent when every pending
   * entry was answered.
   */
  stopped?: "unauthorized" | "aborted" | "retries_exhausted";
}

/**
 * Sends queued entries in order, each with the key it was written with,
 * until each is answered. One drain runs at a time: a drain called while
 * another runs starts when it ends, so no entry is ever in flight twice
 * from one queue.
 */
export class SyncQueue {
  readonly #o: SyncQueueOptions;
  readonly #fetch: Fetch;
  #running: Promise<unknown> = Promise.resolve();

  constructor(options: SyncQueueOptions) {
    this.#o = options;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  drain(options: { signal?: AbortSignal } = {}): Promise<DrainReport> {
    const run = this.#running.then(() => this.#drain(options.signal));
    this.#running = run.catch(() => undefined);
    return run;
  }

  /** Entries refused for reusing a key with another body: a bug in the client to look at. */
  async conflicts(): Promise<QueueEntry[]> {
    return (await this.#o.storage.list()).filter((e) => e.status === "conflict");
  }

  /** Entries the server refused, each with its error. */
  async rejected(): Promise<QueueEntry[]> {
    return (await this.#o.storage.list()).filter((e) => e.status === "rejected");
  }

  async #drain(signal?: AbortSignal): Promise<DrainReport> {
    const report: DrainReport = { sent: 0, replayed: 0, conflicts: 0, rejected: 0, retries: 0 };
    const r = retrier(this.#o.retry);
    const url = eventsURL(this.#o.baseUrl);
    // Entries added while draining are sent by the same drain: the queue is
    // listed again once the entries of the last listing are answered.
    for (;;) {
      const pending = (await this.#o.storage.list()).filter((e) => e.status === "pending");
      if (pending.length === 0) {
        return report;
      }
      for (const entry of pending) {
        const stop = await this.#send(entry, url, r, report, signal);
        if (stop) {
          return { ...report, stopped: stop };
        }
      }
    }
  }

  /** Sends entry until it is answered, and settles it; returns a reason to stop, if any. */
  async #send(entry: QueueEntry, url: URL, r: Retrier, report: DrainReport, signal?: AbortSignal): Promise<DrainReport["stopped"]> {
    const body = JSON.stringify(entry.event);
    const outcome = await sendUntilAnswered(
      async () =>
        new Request(url, {
          method: "POST",
          headers: {
            authorization: `Bearer ${await this.#o.getToken()}`,
            "content-type": "application/json",
            "idempotency-key": entry.key,
          },
          body,
        }),
      { fetch: this.#fetch, retrier: r, signal, onRetry: () => report.retries++ },
    );
    if (outcome.kind === "stopped") {
      return outcome.reason;
    }
    return this.#settle(entry, outcome.response, outcome.body, report);
  }

  /** Records what the server answered for entry; returns a reason to stop, if any. */
  async #settle(entry: QueueEntry, response: Response, body: unknown, report: DrainReport): Promise<DrainReport["stopped"]> {
    const storage = this.#o.storage;
    const code = (body as Partial<ApiError> | null)?.error;
    switch (true) {
      case response.status === 201:
        await storage.remove(entry.key);
        if (response.headers.get("idempotent-replayed") === "true") {
          report.replayed++;
        } else {
          report.sent++;
        }
        return undefined;
      case response.status === 401:
        // The token is refused: nothing was stored; the entry waits, with its
        // key, for the app to refresh the token and drain again.
        return "unauthorized";
      case response.status === 409 && code === "EVENT_ALREADY_EXISTS":
        // Stored already, under another key: the event is safe.
        await storage.remove(entry.key);
        report.replayed++;
        return undefined;
      case response.status === 409 && code === "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD":
        await storage.update({ ...entry, status: "conflict" });
        report.conflicts++;
        return undefined;
      default:
        await storage.update({
          ...entry,
          status: "rejected",
          error: { status: response.status, body: body as ErrorBody },
        });
        report.rejected++;
        return undefined;
    }
  }
}
