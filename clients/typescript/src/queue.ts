import { batchURL, browserOnline, eventsURL, type Fetch, type Outcome, type StopReason, sendUntilAnswered } from "./http.js";
import { type Retrier, type RetryOptions, retrier } from "./retry.js";
import type { QueueStorage } from "./storage.js";
import { type TokenRefusal, tokenFor } from "./token.js";
import type { ApiError, ErrorBody, QueueEntry } from "./types.js";
import { uuidv4 } from "./uuid.js";

export interface SyncQueueOptions {
  /** The queue of one user: it is only ever sent with a token of that user (its `sub`). */
  storage: QueueStorage;
  /** Where the API is, e.g. https://abc.execute-api.eu-west-1.amazonaws.com */
  baseUrl: string;
  /**
   * The bearer token for the next request (asked for each attempt): a JWT
   * whose `sub` must be the storage's user, or nothing is sent.
   */
  getToken: () => string | Promise<string>;
  fetch?: Fetch;
  retry?: RetryOptions;
  /**
   * How entries are grouped into batches, each sent in one request under a
   * key of its own: at most maxEvents (1 to 98, 98 by default) and maxBytes
   * of body (at most the server's 2 MiB, the default). maxEvents 1 sends
   * every entry alone, under its own key.
   */
  batch?: { maxEvents?: number; maxBytes?: number };
  /** Whether the device is online: navigator.onLine by default (always, where there is none). */
  online?: () => boolean;
  /**
   * The id of a space to send the entries to (POST
   * /api/v1/spaces/{space}/events, and /batch with at most 97 events);
   * the user's own stream if absent. A queue is one stream's: a space's
   * queue needs a storage of its own (an IndexedDBStorage with another
   * `name`, say "notes-space-<id>"), never the storage of the user's own
   * queue or of another space's, or entries would go to the wrong stream.
   */
  space?: string;
}

/** The server's batch limits: 98 events (see the API's batch endpoint), 2 MiB of body. */
export const MAX_BATCH_EVENTS = 98;
export const MAX_BATCH_BYTES = 2 * 1024 * 1024;
/** A space's batch holds one event fewer: the writer's role check is one more of the transaction's actions. */
export const MAX_SPACE_BATCH_EVENTS = MAX_BATCH_EVENTS - 1;

/** Why a drain ended with entries unanswered (see DrainReport.stopped). */
export type QueueStopReason = "unauthorized" | "forbidden" | UserRefusal | StopReason;

/** The reasons a drain refuses to send a token: it is another user's, or says no user at all. */
type UserRefusal = TokenRefusal;

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
   * Why the drain ended before the queue was empty, absent when every
   * pending entry was answered. Each leaves the unanswered entries queued,
   * with their keys, for the next drain:
   * - "unauthorized": a 401; refresh the token, then drain.
   * - "forbidden": a space's 403, SPACE_NOT_MEMBER (the user is no member
   *   of the space, or was removed) or SPACE_ROLE_FORBIDS (a reader): no
   *   entry was stored; they stay queued, with their keys. Drain again if
   *   the user is given a role that writes; or drop the queue (clear()).
   * - "wrong_user": the token's `sub` is not the storage's user: another
   *   user is logged in. Nothing was sent with it; drain the queue of the
   *   token's user (a storage made for it) instead.
   * - "unreadable_token": the token is no JWT with a `sub` to check the
   *   storage's user against, so nothing was sent with it.
   * - "offline": the browser says it is offline; drain on its "online" event.
   * - "unreachable": no answer at all, retry.unreachableAfter times in a row,
   *   while the browser says it is online. The server is down, baseUrl is
   *   wrong, the server does not allow this page's origin (CORS), or it
   *   answered with a redirect (never followed, as the token must reach no
   *   other server; Node.js tells it apart, and stops at the first): a
   *   browser shows a script all four as one network error, and the
   *   console says which.
   * - "aborted": the signal.
   * - "retries_exhausted": retry.maxAttempts spent.
   */
  stopped?: QueueStopReason;
  /** With stopped: the last failure seen, e.g. "network: Failed to fetch" or "status 503". */
  error?: string;
}

/**
 * Sends queued entries in order until each is answered. Entries go in
 * batches: before a batch's first send its entries are stamped, in one
 * storage write, with the batch's own key, and from then on they are sent
 * together under that key, as the very same batch, until it is answered,
 * whatever happens to the app in between. A batch of one entry goes alone,
 * under the entry's own key. One drain runs at a time: a drain called while
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
    const run = this.#running.then(() => this.#exclusive(options.signal));
    this.#running = run.catch(() => undefined);
    return run;
  }

  /**
   * Drains under the storage's Web Lock, where the browser has Web Locks and
   * the storage is shared (IndexedDB): of the tabs of one app, one drains at
   * a time, and each entry is sent by one of them. The keys would make two
   * draining tabs safe, but each entry would be sent about twice.
   */
  async #exclusive(signal?: AbortSignal): Promise<DrainReport> {
    const locks = globalThis.navigator?.locks;
    const name = this.#o.storage.lockName;
    if (locks === undefined || name === undefined) {
      return this.#drain(signal);
    }
    try {
      return await locks.request(name, signal ? { signal } : {}, () => this.#drain(signal));
    } catch (err) {
      if (signal?.aborted) {
        return { ...emptyReport(), stopped: "aborted" };
      }
      throw err;
    }
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
    const report = emptyReport();
    const r = retrier(this.#o.retry);
    // Entries added while draining are sent by the same drain: the queue is
    // listed again once the entries of the last listing are answered.
    for (;;) {
      let pending = (await this.#o.storage.list()).filter((e) => e.status === "pending");
      if (pending.length === 0) {
        return report;
      }
      while (pending.length > 0) {
        // Offline, no new batch is formed: a batch is stamped for good
        // before its first send, so one stamped by each write of an offline
        // burst would split the burst into as many requests. Entries already
        // stamped are sent as they are (the next attempt stops as offline).
        if (pending[0]?.batch === undefined && !(this.#o.online ?? browserOnline)()) {
          return { ...report, stopped: "offline", error: "the browser is offline" };
        }
        const group = await this.#nextBatch(pending);
        const keys = new Set(group.map((e) => e.key));
        pending = pending.filter((e) => !keys.has(e.key));
        const [only] = group;
        const stop =
          group.length === 1 && only !== undefined && only.batch === undefined
            ? await this.#send(only, r, report, signal)
            : await this.#sendBatch(group, r, report, signal);
        if (stop) {
          return { ...report, stopped: stop };
        }
      }
    }
  }

  /**
   * The next batch from pending: a batch formed before (its entries share a
   * key) is sent again as it is; otherwise the leading entries, within the
   * limits, stamped with a new key before anything is sent.
   */
  async #nextBatch(pending: QueueEntry[]): Promise<QueueEntry[]> {
    const [first] = pending;
    if (first?.batch !== undefined) {
      return pending.filter((e) => e.batch === first.batch);
    }
    if (first?.action === "delete") {
      return [first];
    }
    const most = this.#o.space === undefined ? MAX_BATCH_EVENTS : MAX_SPACE_BATCH_EVENTS;
    const maxEvents = Math.min(this.#o.batch?.maxEvents ?? most, most);
    const maxBytes = Math.min(this.#o.batch?.maxBytes ?? MAX_BATCH_BYTES, MAX_BATCH_BYTES);
    const group: QueueEntry[] = [];
    let bytes = '{"events":[]}'.length;
    for (const e of pending) {
      const size = encoder.encode(JSON.stringify(e.event)).length + 1;
      if (e.batch !== undefined || e.action !== undefined || group.length === maxEvents || (group.length > 0 && bytes + size > maxBytes)) {
        break;
      }
      group.push(e);
      bytes += size;
    }
    if (group.length === 1) {
      return group;
    }
    const key = uuidv4();
    const stamped = group.map((e) => ({ ...e, batch: key }));
    await this.#o.storage.updateAll(stamped);
    return stamped;
  }

  /** Sends entry alone until it is answered, and settles it; returns a reason to stop, if any. */
  async #send(entry: QueueEntry, r: Retrier, report: DrainReport, signal?: AbortSignal): Promise<DrainReport["stopped"]> {
    const url = eventsURL(this.#o.baseUrl, this.#o.space);
    if (entry.action === "delete") {
      url.pathname = `${url.pathname}/${encodeURIComponent(entry.event.id)}`;
      const outcome = await this.#post(url, entry.key, undefined, r, report, signal);
      if (outcome.kind === "stopped") {
        return stopReason(outcome, report);
      }
      return this.#settleDelete(entry, outcome.response, outcome.body, report);
    }
    const outcome = await this.#post(url, entry.key, JSON.stringify(entry.event), r, report, signal);
    if (outcome.kind === "stopped") {
      return stopReason(outcome, report);
    }
    return this.#settle(entry, outcome.response, outcome.body, report);
  }

  /**
   * Records what the server answered for a delete. 200: deleted (or, the
   * header says, deleted by this key's first send). 409
   * EVENT_ALREADY_DELETED: deleted already, by another request: what the
   * entry asked for is done. A 403 SPACE_ROLE_FORBIDS is this entry's (a
   * writer deleting another's event): kept, rejected, as any other refusal.
   */
  async #settleDelete(entry: QueueEntry, response: Response, body: unknown, report: DrainReport): Promise<DrainReport["stopped"]> {
    const code = (body as Partial<ApiError> | null)?.error;
    if (response.status === 200 || (response.status === 409 && code === "EVENT_ALREADY_DELETED")) {
      await this.#o.storage.remove(entry.key);
      if (response.status === 200 && response.headers.get("idempotent-replayed") !== "true") {
        report.sent++;
      } else {
        report.replayed++;
      }
      return undefined;
    }
    if (response.status === 403 && code === "SPACE_ROLE_FORBIDS") {
      await this.#o.storage.update({ ...entry, status: "rejected", error: { status: 403, body: body as ErrorBody } });
      report.rejected++;
      return undefined;
    }
    return this.#settle(entry, response, body, report);
  }

  /** Sends a batch until it is answered, and settles its entries; returns a reason to stop, if any. */
  async #sendBatch(group: QueueEntry[], r: Retrier, report: DrainReport, signal?: AbortSignal): Promise<DrainReport["stopped"]> {
    const body = JSON.stringify({ events: group.map((e) => e.event) });
    const outcome = await this.#post(batchURL(this.#o.baseUrl, this.#o.space), group[0]?.batch as string, body, r, report, signal);
    if (outcome.kind === "stopped") {
      return stopReason(outcome, report);
    }
    return this.#settleBatch(group, outcome.response, outcome.body, report);
  }

  /**
   * Sends body to url under key until answered (POST; DELETE without a
   * body). Each attempt takes the token from tokenFor, for the storage's
   * user, before anything is sent: the token may have changed during a
   * backoff (a logout, a login as someone else), and a queue of one user
   * sent with another's token would be stored in the other's account for good.
   */
  #post(
    url: URL,
    key: string,
    body: string | undefined,
    r: Retrier,
    report: DrainReport,
    signal?: AbortSignal,
  ): Promise<Outcome<UserRefusal>> {
    const user = this.#o.storage.user;
    return sendUntilAnswered<UserRefusal>(
      async () => {
        const checked = await tokenFor(this.#o.getToken, user);
        if ("refused" in checked) {
          return checked;
        }
        const { token } = checked;
        if (body === undefined) {
          return new Request(url, { method: "DELETE", headers: { authorization: `Bearer ${token}`, "idempotency-key": key } });
        }
        return new Request(url, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": key },
          body,
        });
      },
      { fetch: this.#fetch, retrier: r, signal, onRetry: () => report.retries++, online: this.#o.online },
    );
  }

  /**
   * Records what the server answered for a batch. Stored (201): all go. A
   * refusal that names some entries (stored already, or invalid) settles
   * those, and the rest go back to the queue unbatched, to be sent in a new
   * batch under a new key: the refused batch left nothing on the server.
   * Any other answer settles every entry as a lone entry's would.
   */
  async #settleBatch(group: QueueEntry[], response: Response, body: unknown, report: DrainReport): Promise<DrainReport["stopped"]> {
    const storage = this.#o.storage;
    const error = body as Partial<ApiError> | null;
    const named = namedEntries(group, response.status, error);
    if (response.status === 201) {
      await storage.removeAll(group.map((e) => e.key));
      if (response.headers.get("idempotent-replayed") === "true") {
        report.replayed += group.length;
      } else {
        report.sent += group.length;
      }
      return undefined;
    }
    if (named === undefined) {
      for (const entry of group) {
        const stop = await this.#settle(entry, response, body, report);
        if (stop) {
          return stop;
        }
      }
      return undefined;
    }
    const rest = group.filter((e) => !named.includes(e)).map(({ batch: _, ...e }) => e);
    if (error?.error === "EVENT_ALREADY_EXISTS") {
      await storage.removeAll(named.map((e) => e.key));
      report.replayed += named.length;
    } else {
      await storage.updateAll(
        named.map(({ batch: _, ...e }) => ({
          ...e,
          status: "rejected" as const,
          error: { status: response.status, body: error as ErrorBody },
        })),
      );
      report.rejected += named.length;
    }
    await storage.updateAll(rest);
    return undefined;
  }

  /** Records what the server answered for entry (alone, or for its whole batch); returns a reason to stop, if any. */
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
      case response.status === 403 && (code === "SPACE_NOT_MEMBER" || code === "SPACE_ROLE_FORBIDS"):
        // Refused for the user's place in the space, not for the entry:
        // nothing was stored, and every entry would be refused alike. The
        // entry waits, with its key (and its batch's), as for a 401.
        report.error = `${code}: ${(body as Partial<ApiError>).message ?? ""}`;
        return "forbidden";
      case response.status === 409 && code === "EVENT_ALREADY_EXISTS":
        // Stored already, under another key: the event is safe.
        await storage.remove(entry.key);
        report.replayed++;
        return undefined;
      case response.status === 409 && code === "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD":
        await storage.update({ ...withoutBatch(entry), status: "conflict" });
        report.conflicts++;
        return undefined;
      default:
        await storage.update({
          ...withoutBatch(entry),
          status: "rejected",
          error: { status: response.status, body: body as ErrorBody },
        });
        report.rejected++;
        return undefined;
    }
  }
}

const encoder = new TextEncoder();

/** The reason to stop on a request given up, with its last failure put in the report. */
function stopReason(outcome: Extract<Outcome<UserRefusal>, { kind: "stopped" }>, report: DrainReport): QueueStopReason {
  if (outcome.error !== undefined) {
    report.error = outcome.error;
  }
  return outcome.reason;
}

function emptyReport(): DrainReport {
  return { sent: 0, replayed: 0, conflicts: 0, rejected: 0, retries: 0 };
}

function withoutBatch({ batch: _, ...entry }: QueueEntry): QueueEntry {
  return entry;
}

/**
 * The entries of group that a batch's refusal names: those stored already
 * (409 EVENT_ALREADY_EXISTS, details.ids), or invalid or too large (400 and
 * 413 whose details name events by index). undefined when it names none.
 */
function namedEntries(group: QueueEntry[], status: number, error: Partial<ApiError> | null): QueueEntry[] | undefined {
  const details = error?.details as unknown;
  if (status === 409 && error?.error === "EVENT_ALREADY_EXISTS" && isObject(details) && Array.isArray(details.ids)) {
    const ids = new Set(details.ids);
    return group.filter((e) => ids.has(e.event.id));
  }
  const indexes = Array.isArray(details)
    ? details.map((d) => (isObject(d) ? d.index : undefined))
    : isObject(details)
      ? [details.index]
      : [];
  if ((status === 400 || status === 413) && indexes.length > 0 && indexes.every((i) => typeof i === "number" && group[i] !== undefined)) {
    return group.filter((_, i) => indexes.includes(i));
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
