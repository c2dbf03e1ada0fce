import type { Fetch } from "./http.js";
import { indexedDBStorage } from "./indexeddb.js";
import { type LiveChannel, type LiveState, LiveSync } from "./live.js";
import { deletedId, PullError, pullEvents } from "./pull.js";
import { type DrainReport, SyncQueue } from "./queue.js";
import {
  type Fields,
  foldRecords,
  type KeptRecords,
  listRecords,
  NO_RECORDS,
  RECORD_DELETE,
  RECORD_PATCH,
  RECORD_PUT,
  type RecordEvent,
  type RecordSet,
  type Records,
  recordPayload,
  type SyncRecord,
} from "./records.js";
import type { RetryOptions } from "./retry.js";
import * as spaceApi from "./spaces.js";
import { type KeptView, memoryStorage, type StreamStore, type SyncStorage } from "./storage.js";
import type { ApiError, ListedEvent, NewEvent, QueueEntry } from "./types.js";
import { uuidv4 } from "./uuid.js";

/**
 * What the app's reduce() is handed, in the stream's order: an event, or
 * that one was deleted. A deletion comes as a tombstone of the event and
 * again as the server's notice, and for a delete still queued: dropping
 * twice must be dropping once. `pending`: a local write not yet in the
 * confirmed order (it is folded again, on top, after each change).
 */
export type SyncEvent =
  | {
      kind: "event";
      id: string;
      type: string;
      payload: NewEvent["payload"];
      occurredAt: string;
      /** Who wrote it: on a space's events, the writer's `sub`; the user on a pending write to a space. */
      author?: string;
      pending: boolean;
    }
  | { kind: "deleted"; id: string; pending: boolean };

/**
 * Why a stream stopped syncing (its writes stay queued, with their keys):
 * - "signed_out": the token was refused (401) or is no JWT with a `sub`;
 *   give a fresh token, then sync().
 * - "wrong_user": the token is another user's than the client's
 *   (options.user): nothing was sent with it, no pull, no write, no
 *   channel subscribed, and nothing was kept or moved in the storage.
 *   Another user signed in: close this client and make one for them (see
 *   SyncClientOptions.user); or give this user's token, then sync().
 * - "forbidden": a space refused the user (403: no member, or a reader
 *   writing); `error` says which.
 * - "gone": the stream's events are gone from under its cursor again and
 *   again (410 after start-overs).
 * - "reducer_failed": the app's reduce() threw; `error` holds what.
 * - "closed": close() or signOut().
 */
export type StopReason = "signed_out" | "wrong_user" | "forbidden" | "gone" | "reducer_failed" | "closed";

/**
 * Where a stream (or the app, for status at the top) stands:
 * "offline", the device offline, writes waiting; "sending", writes being
 * sent; "online", reachable but not yet caught up (or the last try failed,
 * `error` says how; it is retried); "synced", every write sent and listed
 * by a pull, and the last pull at the stream's end; "stopped", see
 * StopReason. A write answered 201 is stored, but in a busy space it may
 * be listed by pulls a moment later (typically under a second): until a
 * pull lists it the status stays "online", not "synced".
 */
export type SyncStatus =
  | { kind: "offline" | "sending" | "online" | "synced"; error?: string }
  | { kind: "stopped"; reason: StopReason; error?: string };

/** A write the client holds: queued, or kept after the server refused it ("rejected", "conflict"). */
export interface PendingWrite {
  /** The Idempotency-Key it is always sent with. */
  key: string;
  /** The event's id (for a delete: the id of the event deleted). */
  id: string;
  type: string;
  payload: NewEvent["payload"];
  delete: boolean;
  fate: QueueEntry["status"];
  /** For a refused write: the HTTP status, the API's code and message. */
  error?: { status: number; code?: string; message?: string };
}

/** One stream as the app reads it. */
export interface StreamView<S> {
  /**
   * The optimistic state: the confirmed one with the pending writes folded
   * on top, and the writes the server answered that no pull has listed yet
   * (in a busy space a 201's event is listed a moment later), kept across
   * a reload. One still unlisted 10 minutes after its answer is dropped
   * from the top when a pull ends: it was deleted and trimmed away, or
   * listed before a lost answer came again.
   */
  state: S;
  /** The state folded from the confirmed events alone, in commit order. */
  confirmed: S;
  /**
   * The stream's records (see SyncClient.records), each collection's by
   * id: the confirmed ones, in commit order, with the pending changes on
   * top as for `state`. A collection, and a record, that no change
   * touched keeps its reference.
   */
  records: Records;
  status: SyncStatus;
  /** The writes queued or refused; an answered write leaves it (and stays in `state` until a pull lists it). */
  writes: readonly PendingWrite[];
  /** Whether what the device kept has been read: false only for a moment after creation. */
  loaded: boolean;
  /** The live channel: "live" (pokes heard), "polling" (it is unavailable, or none), "connecting", "offline", "stopped". */
  channel: LiveState["kind"];
}

/** The client's state: replaced, never changed, so a reference tells a change. */
export interface SyncState<S> {
  /** The app's one status: the own stream's, or "sending" while any stream sends. */
  status: SyncStatus;
  /** The user's own stream. */
  mine: StreamView<S>;
  /** Each followed space's stream, by the space's id. */
  spaces: Readonly<Record<string, StreamView<S>>>;
}

/**
 * What createSyncClient takes. `initial` and `reduce` go together, for an
 * app that folds the events into a state of its own; without them
 * `state` is undefined and the app reads records (SyncClient.records).
 */
export interface SyncClientOptions<S = undefined> {
  /** Where the API is, e.g. https://abc.execute-api.eu-west-1.amazonaws.com */
  baseUrl: string;
  /**
   * The user (the `sub` of the tokens): what the client keeps is theirs,
   * and it sends with no one else's token. Every request and subscription
   * (pulls, writes, the live channel, spaces and their calls) checks the
   * token's `sub` against it first; another user's token stops each
   * stream with "wrong_user" (a space call rejects with SpaceStopped
   * "wrong_user"), before anything is sent or kept. One client per user:
   * on sign-in as another user, close() this one and create one with the
   * new user (signOut() first, to remove what was kept of the old one).
   */
  user: string;
  /** The bearer token for the next request: a JWT of `user`'s (its `sub`), or nothing is sent with it. */
  getToken: () => string | Promise<string>;
  /** The state before any event, for each stream (with reduce). */
  initial?: S;
  /**
   * Folds one event into the state and returns it (with initial). The
   * state given is a deep copy (a JSON round trip) the client made for
   * this fold: one per page of confirmed events, and one for the pending
   * writes on top, so reduce may change it in place and return it, or
   * return a new one, and never changes the state the app was shown. It
   * must be JSON, as it is kept in the storage; if reduce throws, the
   * stream stops. Record events (record.put, record.patch, record.delete)
   * come to it too.
   */
  reduce?: (state: S, event: SyncEvent) => S;
  /** Where to keep queues, states and cursors: IndexedDB where there is one, else memory (nothing survives a restart). */
  storage?: SyncStorage;
  /** The live channel's endpoints (LiveChannel without space); without them the client polls. */
  live?: Omit<LiveChannel, "space">;
  /** How often to pull without a live channel, in ms (default 10 000). */
  pollIntervalMs?: number;
  fetch?: Fetch;
  retry?: RetryOptions;
  /** Whether the device is online: navigator.onLine by default. */
  online?: () => boolean;
  /** Where "online" and "offline" events come from: the global scope by default. */
  events?: EventTarget;
  /** The WebSocket class for the live channel: globalThis.WebSocket by default. */
  WebSocket?: typeof WebSocket;
}

/**
 * One collection of records, of the user's own stream or of a space:
 * writes that queue as write() does (durably, shown at once, sent exactly
 * once), and reads of the client's current state. Changes merge in
 * commit order: a put sets the record's fields, a patch sets the fields
 * it names (last writer per field), a delete is final (a later put or
 * patch of the id is ignored, on every device). Each is an ordinary event
 * (`record.put`, `record.patch`, `record.delete`, payload
 * `{ collection, id, fields }`): the server knows no records.
 */
export interface RecordCollection<T extends object = Fields> {
  /** The collection's name. */
  readonly collection: string;
  /** The space whose stream holds it; undefined for the user's own. */
  readonly space: string | undefined;
  /** Makes a record of fields under a new id (a UUID v4); resolves to the id once queued. */
  add(fields: T): Promise<string>;
  /** Sets the record `id` to exactly `fields` (creating it if need be); resolves once queued. */
  put(id: string, fields: T): Promise<PendingWrite>;
  /** Sets the fields given on the record `id`, the others kept (a record that does not exist yet is made of them). */
  patch(id: string, fields: Partial<T>): Promise<PendingWrite>;
  /** Deletes the record `id`, for good: a later put or patch of it is ignored. */
  delete(id: string): Promise<PendingWrite>;
  /** The record now (pending changes on top), or undefined. */
  get(id: string): SyncRecord<T> | undefined;
  /** The records now, oldest first (by createdAt, then id). */
  list(): SyncRecord<T>[];
  /** The records now, by id: the very object in client.state (its reference changes when the collection does). */
  readonly all: RecordSet<T>;
}

/** The one object an app holds: its writes, its state per stream, its spaces. See createSyncClient. */
export interface SyncClient<S = undefined> {
  readonly state: SyncState<S>;
  /** Calls listener after every change of state; returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
  /**
   * Queues an event, durably, before anything is sent, and shows it in the
   * state at once; resolves when queued, rejects if the storage refused it
   * (then it was not queued). `space`: to that space's stream, which it follows.
   */
  write(type: string, payload: NewEvent["payload"], options?: { space?: string }): Promise<PendingWrite>;
  /** Queues the deletion of an event, as write() does: sent later, under its own key, exactly once. */
  delete(eventId: string, options?: { space?: string }): Promise<PendingWrite>;
  /**
   * A collection of records, e.g. records<Todo>("todo"): put, patch,
   * delete and reads, with no reducer (see RecordCollection). `space`:
   * the collection in that space's stream (followed on the first write).
   * Cheap: make one wherever it is needed.
   */
  records<T extends object = Fields>(collection: string, options?: { space?: string }): RecordCollection<T>;
  /** Drops a write the server refused (rejected, conflict) from the queue. */
  dismiss(key: string, options?: { space?: string }): Promise<void>;
  /** Sends and pulls now, every stream; restarts a stream stopped for signed_out, wrong_user, forbidden or gone. */
  sync(): Promise<void>;
  /** Follows a space: keeps its state, queue and cursor, and syncs it. Kept across restarts. */
  follow(space: string): void;
  /** Stops following a space and removes what the client kept of it, queued writes included. */
  unfollow(space: string): Promise<void>;
  /** Creates a space (the user its owner) and follows it. */
  createSpace(name: string): Promise<spaceApi.Space>;
  listSpaces(): Promise<spaceApi.Space[]>;
  addMember(space: string, member: string, role: spaceApi.Role): Promise<spaceApi.SpaceMember>;
  removeMember(space: string, member: string): Promise<spaceApi.RemovedMember>;
  /** Leaves a space, then unfollows it. */
  leaveSpace(space: string): Promise<spaceApi.RemovedMember>;
  /**
   * Stops syncing, for good: sockets, timers and sends (a send under way
   * is abandoned; its key makes the next client's send of it a replay).
   * What is kept stays. The client syncs from its creation until then.
   */
  close(): void;
  /** close(), then removes everything kept for the user: queues (unsent writes too), states, cursors. */
  signOut(): Promise<void>;
}

const MINE = "me";
const NONE: RecordSet = Object.freeze({});
const spaceStream = (space: string) => `space:${space}`;

/**
 * How long an answered write waits to be listed before it is dropped from
 * the top of the state (status may then say "synced"): a sequencer behind
 * lists it later than that only in an outage, and one never listed (deleted
 * and trimmed by retention before a pull came, or listed by a pull before
 * a lost answer's replay) must not keep the status from "synced" for ever.
 */
const SENT_WAIT_MS = 10 * 60_000;

/** A write the server answered that no pull has listed yet, and when it was answered. */
type Sent = NonNullable<KeptView["sent"]>[number];

/**
 * The one client of an app: for the user's own stream and each followed
 * space, a durable queue sent in batches under their keys, pulls from the
 * kept cursor (starting over on 410), the live channel with polling while
 * it is unavailable, and the state reduce() folds, kept with its cursor so
 * that a restart shows it offline at once.
 *
 * It starts syncing as it is made (it reads what the device kept, sends
 * what is queued, pulls, and opens the live channel or polls), and goes on
 * until close() or signOut().
 *
 * @example
 * const client = createSyncClient({ baseUrl, user, getToken });
 * const todos = client.records<{ title: string; done: boolean }>("todo");
 * client.subscribe(() => render(todos.list()));
 * const id = await todos.add({ title: "Buy oat milk", done: false });
 * await todos.patch(id, { done: true });
 */
export function createSyncClient<S = undefined>(options: SyncClientOptions<S>): SyncClient<S> {
  return new Client(options);
}

/**
 * What this runtime lacks of what the client needs, as a message saying
 * what to add; undefined if nothing. The rest is optional and detected
 * where used: IndexedDB (else memory), Web Locks (else one drain at a time
 * per client), crypto.randomUUID (else getRandomValues), WebSocket (else polling).
 */
function missingFeature(o: { fetch?: Fetch }): string | undefined {
  if (typeof globalThis.crypto?.getRandomValues !== "function") {
    return "no crypto.getRandomValues here, which the client's keys (UUID v4) need: on React Native, import 'react-native-get-random-values' first";
  }
  if (o.fetch === undefined && typeof globalThis.fetch !== "function") {
    return "no fetch here: pass options.fetch";
  }
  return undefined;
}

class Client<S> implements SyncClient<S> {
  readonly #o: SyncClientOptions<S>;
  readonly #storage: SyncStorage;
  readonly #listeners = new Set<() => void>();
  readonly #streams = new Map<string, Stream<S>>();
  readonly #abort = new AbortController();
  #state: SyncState<S>;
  #closed = false;

  constructor(options: SyncClientOptions<S>) {
    const missing = missingFeature(options);
    if (missing !== undefined) {
      throw new Error(missing);
    }
    if (typeof options.user !== "string" || options.user === "") {
      throw new TypeError("createSyncClient: pass { user }, the sub of the tokens");
    }
    if ((options.reduce === undefined) !== (options.initial === undefined)) {
      throw new TypeError("createSyncClient: pass initial and reduce together, or neither");
    }
    this.#o = options;
    this.#storage = options.storage ?? (globalThis.indexedDB ? indexedDBStorage() : memoryStorage());
    const mine = this.#open(undefined);
    this.#state = { status: mine.view.status, mine: mine.view, spaces: {} };
    void mine.loaded.then((kept) => {
      for (const space of kept?.spaces ?? []) {
        this.follow(space);
      }
    });
  }

  get state(): SyncState<S> {
    return this.#state;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async write(type: string, payload: NewEvent["payload"], options: { space?: string } = {}): Promise<PendingWrite> {
    const event: NewEvent = { id: uuidv4(), type, occurredAt: new Date().toISOString(), payload };
    return this.#stream(options.space).enqueue({ key: uuidv4(), event, status: "pending" });
  }

  async delete(eventId: string, options: { space?: string } = {}): Promise<PendingWrite> {
    const event: NewEvent = { id: eventId, type: "event.deleted", occurredAt: new Date().toISOString(), payload: { id: eventId } };
    return this.#stream(options.space).enqueue({ key: uuidv4(), event, status: "pending", action: "delete" });
  }

  records<T extends object = Fields>(collection: string, options: { space?: string } = {}): RecordCollection<T> {
    const { space } = options;
    recordPayload(collection, "-"); // a bad name throws here, not at the first write
    const set = () => ((space === undefined ? this.#state.mine : this.#state.spaces[space])?.records[collection] ?? NONE) as RecordSet<T>;
    const write = (type: string, id: string, fields?: object) =>
      this.write(type, recordPayload(collection, id, fields), { ...(space !== undefined && { space }) });
    return {
      collection,
      space,
      add: async (fields) => {
        const id = uuidv4();
        await write(RECORD_PUT, id, fields);
        return id;
      },
      put: (id, fields) => write(RECORD_PUT, id, fields),
      patch: (id, fields) => write(RECORD_PATCH, id, fields),
      delete: (id) => write(RECORD_DELETE, id),
      get: (id) => set()[id],
      list: () => listRecords(set()),
      get all() {
        return set();
      },
    };
  }

  async dismiss(key: string, options: { space?: string } = {}): Promise<void> {
    await this.#stream(options.space).dismiss(key);
  }

  async sync(): Promise<void> {
    await Promise.all([...this.#streams.values()].map((s) => s.syncNow()));
  }

  follow(space: string): void {
    if (!this.#closed && !this.#streams.has(spaceStream(space))) {
      this.#open(space);
      void this.#keepSpaces();
    }
  }

  async unfollow(space: string): Promise<void> {
    const s = this.#streams.get(spaceStream(space));
    this.#streams.delete(spaceStream(space));
    s?.stop("closed");
    const { [space]: _, ...rest } = this.#state.spaces;
    this.#state = { ...this.#state, spaces: rest };
    this.#publish();
    await this.#keepSpaces();
    await s?.store.clear();
  }

  async createSpace(name: string): Promise<spaceApi.Space> {
    const space = await spaceApi.createSpace(this.#api(), { name });
    this.follow(space.id);
    return space;
  }

  listSpaces(): Promise<spaceApi.Space[]> {
    return spaceApi.listSpaces(this.#api());
  }

  addMember(space: string, member: string, role: spaceApi.Role): Promise<spaceApi.SpaceMember> {
    return spaceApi.addMember(this.#api(), space, member, role);
  }

  removeMember(space: string, member: string): Promise<spaceApi.RemovedMember> {
    return spaceApi.removeMember(this.#api(), space, member);
  }

  async leaveSpace(space: string): Promise<spaceApi.RemovedMember> {
    const left = await spaceApi.leaveSpace(this.#api(), space);
    await this.unfollow(space);
    return left;
  }

  close(): void {
    this.#closed = true;
    this.#abort.abort();
    for (const s of this.#streams.values()) {
      s.stop("closed");
    }
  }

  async signOut(): Promise<void> {
    this.close();
    const streams = [...this.#streams.values()];
    await Promise.all(streams.map((s) => s.loaded.catch(() => undefined)));
    await Promise.all(streams.map((s) => s.store.clear()));
  }

  #api(): spaceApi.SpaceOptions {
    const { baseUrl, user, getToken, fetch, retry, online } = this.#o;
    return {
      baseUrl,
      user,
      getToken,
      signal: this.#abort.signal,
      ...(fetch && { fetch }),
      ...(retry && { retry }),
      ...(online && { online }),
    };
  }

  #stream(space: string | undefined): Stream<S> {
    if (space === undefined) {
      return this.#streams.get(MINE) as Stream<S>;
    }
    this.follow(space);
    const s = this.#streams.get(spaceStream(space));
    if (s === undefined) {
      throw new Error("the client is closed");
    }
    return s;
  }

  #open(space: string | undefined): Stream<S> {
    const name = space === undefined ? MINE : spaceStream(space);
    const s = new Stream<S>(this.#o, this.#storage.open(this.#o.user, name), space, this.#abort.signal, () => this.#changed(s));
    this.#streams.set(name, s);
    if (space !== undefined) {
      this.#state = { ...this.#state, spaces: { ...this.#state.spaces, [space]: s.view } };
    }
    s.start();
    return s;
  }

  /** The followed spaces, kept in the own stream's view. */
  async #keepSpaces(): Promise<void> {
    const mine = this.#streams.get(MINE);
    await mine?.keepSpaces([...this.#streams.values()].flatMap((s) => (s.space === undefined ? [] : [s.space])));
  }

  #changed(s: Stream<S>): void {
    if (!this.#streams.has(s.name)) {
      return;
    }
    const spaces = s.space === undefined ? this.#state.spaces : { ...this.#state.spaces, [s.space]: s.view };
    const mine = s.space === undefined ? s.view : this.#state.mine;
    const sending = Object.values(spaces).some((v) => v.status.kind === "sending");
    const status: SyncStatus = sending && mine.status.kind !== "stopped" ? { kind: "sending" } : mine.status;
    this.#state = { status, mine, spaces };
    this.#publish();
  }

  #publish(): void {
    for (const l of [...this.#listeners]) {
      try {
        l();
      } catch {
        // the app's own failure; the other listeners still hear
      }
    }
  }
}

/** One stream of the user's: its store, queue, live channel and folded state. */
class Stream<S> {
  readonly name: string;
  readonly store: StreamStore;
  readonly space: string | undefined;
  readonly loaded: Promise<{ spaces?: string[] } | undefined>;
  view: StreamView<S>;
  readonly #o: SyncClientOptions<S>;
  readonly #queue: SyncQueue;
  readonly #live: LiveSync;
  readonly #signal: AbortSignal;
  readonly #changed: () => void;
  readonly #online: () => boolean;
  #confirmed: S;
  #records: KeptRecords = NO_RECORDS;
  /** The last records with the pending changes on top, and what they were folded from: kept while neither changes. */
  #topped: { base: KeptRecords; keys: string; records: KeptRecords } | undefined;
  #cursor: string | undefined;
  #spaces: string[] | undefined;
  #entries: QueueEntry[] = [];
  /** Entries the server answered that no pull has brought yet: still on top of the confirmed state, and kept in the view. */
  #sent: Sent[] = [];
  #stopped: { reason: StopReason; error?: string } | undefined;
  #sending = 0; // drains running
  /** For each drain running: the ids pulls brought meanwhile, which an entry it settles needs no more on top. */
  readonly #pulledDuring = new Set<Set<string>>();
  #synced = false;
  #error: string | undefined;

  constructor(o: SyncClientOptions<S>, store: StreamStore, space: string | undefined, signal: AbortSignal, changed: () => void) {
    this.#o = o;
    this.name = space === undefined ? MINE : spaceStream(space);
    this.store = store;
    this.space = space;
    this.#signal = signal;
    this.#changed = changed;
    this.#online = o.online ?? (() => globalThis.navigator?.onLine !== false);
    this.#confirmed = o.initial as S;
    this.view = {
      state: this.#confirmed,
      confirmed: this.#confirmed,
      records: NO_RECORDS.live,
      status: { kind: "online" },
      writes: [],
      loaded: false,
      channel: "stopped",
    };
    const common = { baseUrl: o.baseUrl, getToken: o.getToken, ...(o.fetch && { fetch: o.fetch }), ...(o.retry && { retry: o.retry }) };
    this.#queue = new SyncQueue({ ...common, storage: store, ...(space && { space }), ...(o.online && { online: o.online }) });
    this.#live = new LiveSync({
      getToken: o.getToken,
      user: o.user,
      ...(o.live && { channel: { ...o.live, ...(space && { space }) } }),
      pull: (s) => this.#sync(s),
      onState: (st) => this.#liveState(st),
      onError: (err) => this.#failed(err),
      pollIntervalMs: o.pollIntervalMs ?? 10_000,
      ...(o.online && { online: o.online }),
      ...(o.events && { events: o.events }),
      ...(o.WebSocket && { WebSocket: o.WebSocket }),
    });
    this.loaded = this.#load();
  }

  async #load(): Promise<{ spaces?: string[] } | undefined> {
    const [kept, entries] = await Promise.all([this.store.loadView(), this.store.list()]);
    if (kept !== undefined) {
      this.#confirmed = kept.state as S;
      this.#records = (kept.records as KeptRecords | undefined) ?? NO_RECORDS;
      this.#cursor = kept.cursor;
      this.#spaces = kept.spaces;
      this.#sent = kept.sent ?? [];
    }
    this.#entries = entries;
    this.#render();
    return kept;
  }

  start(): void {
    void this.loaded.then(
      () => {
        if (this.#stopped === undefined) {
          this.#live.start();
        }
      },
      (err) => this.stop("closed", `the storage could not be read: ${String(err)}`),
    );
  }

  stop(reason: StopReason, error?: string): void {
    if (this.#stopped?.reason === "closed") {
      return;
    }
    this.#stopped = error === undefined ? { reason } : { reason, error };
    this.#live.stop();
    this.#render();
  }

  async enqueue(entry: QueueEntry): Promise<PendingWrite> {
    await this.loaded;
    await this.store.add(entry); // a refusal rejects: the write was not queued
    this.#entries = [...this.#entries, entry];
    this.#render();
    void this.#drainNow();
    return pendingWrite(entry);
  }

  async dismiss(key: string): Promise<void> {
    const e = this.#entries.find((x) => x.key === key);
    if (e !== undefined && e.status !== "pending") {
      await this.store.remove(key);
      this.#entries = this.#entries.filter((x) => x.key !== key);
      this.#render();
    }
  }

  async keepSpaces(spaces: string[]): Promise<void> {
    await this.loaded;
    this.#spaces = spaces;
    await this.#save();
  }

  async syncNow(): Promise<void> {
    if (this.#stopped !== undefined && this.#stopped.reason !== "closed" && this.#stopped.reason !== "reducer_failed") {
      this.#stopped = undefined;
      this.#render();
      this.#live.start();
    }
    await this.#live.pullNow();
  }

  /** A drain, then a pull when it sent anything: what the server stored comes back in its order. */
  async #drainNow(): Promise<void> {
    if (this.#stopped !== undefined) {
      return;
    }
    if (await this.#drain(this.#signal)) {
      await this.#live.pullNow();
    }
  }

  /** LiveSync's pull: send what is queued, then pull; resolves to the cursor reached. */
  async #sync(signal: AbortSignal): Promise<string | undefined> {
    // Writes start their own drain: a pull drains first only what is still
    // pending (after a restart, or a drain that stopped), so a poke costs a pull alone.
    if (this.#entries.some((e) => e.status === "pending")) {
      await this.#drain(signal);
    }
    if (this.#stopped === undefined) {
      await this.#pull(signal);
    }
    return this.#cursor;
  }

  /** Drains the queue; whether any entry was answered. */
  async #drain(signal: AbortSignal): Promise<boolean> {
    const before = this.#entries;
    const sending = before.some((e) => e.status === "pending") ? 1 : 0;
    this.#sending += sending;
    this.#render();
    const pulled = new Set<string>();
    this.#pulledDuring.add(pulled);
    let report: DrainReport;
    try {
      report = await this.#queue.drain({ signal });
    } finally {
      this.#sending -= sending;
      this.#pulledDuring.delete(pulled);
    }
    const after = await this.store.list();
    const kept = new Set(after.map((e) => e.key));
    const held = new Set(this.#sent.map((s) => s.entry.key));
    const answered = before.filter((e) => e.status === "pending" && !kept.has(e.key) && !held.has(e.key) && !pulled.has(e.event.id));
    const answeredAt = Date.now();
    this.#sent = [...this.#sent, ...answered.map((entry) => ({ entry, answeredAt }))];
    this.#entries = after;
    // Not once closed: unfollow() and signOut() clear the store, which must stay clear.
    if (answered.length > 0 && this.#stopped?.reason !== "closed") {
      // Best effort: the queue let them go already; unsaved, a reload shows them only once pulled.
      await this.#save().catch(() => undefined);
    }
    this.#error = report.stopped === undefined || report.stopped === "offline" ? undefined : (report.error ?? report.stopped);
    const stop = queueStop(report);
    if (stop !== undefined) {
      this.stop(stop, report.error);
    }
    this.#render();
    return answered.length > 0;
  }

  async #pull(signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const pull = pullEvents({
      baseUrl: o.baseUrl,
      getToken: o.getToken,
      user: o.user,
      cursor: this.#cursor,
      signal,
      ...(this.space && { space: this.space }),
      ...(o.fetch && { fetch: o.fetch }),
      ...(o.retry && { retry: o.retry }),
      // The kept copy may hold what retention removed: drop state and cursor together.
      startOver: async () => {
        this.#confirmed = o.initial as S;
        this.#records = NO_RECORDS;
        this.#cursor = undefined;
        await this.#save();
        this.#render();
      },
    });
    for await (const page of pull.pages()) {
      let state = this.#confirmed;
      if (o.reduce !== undefined) {
        state = copy(state);
        try {
          for (const ev of page.events) {
            state = o.reduce(state, syncEvent(ev, false));
          }
        } catch (err) {
          this.stop("reducer_failed", String(err));
          return;
        }
      }
      const seen = new Set(page.events.map((ev) => deletedId(ev) ?? ev.id));
      this.#confirmed = state;
      this.#records = foldRecords(this.#records, page.events);
      this.#cursor = page.cursor;
      // Saved with the state that now holds them: a reload never folds a listed write twice.
      this.#sent = this.#sent.filter((s) => !seen.has(s.entry.event.id));
      await this.#save();
      for (const during of this.#pulledDuring) {
        for (const id of seen) {
          during.add(id);
        }
      }
      this.#render();
    }
    await this.#dropStale();
    this.#synced = true;
    this.#error = undefined;
    this.#render();
  }

  /** Drops the answered writes no pull has listed for SENT_WAIT_MS (see there). */
  async #dropStale(): Promise<void> {
    const now = Date.now();
    const fresh = this.#sent.filter((s) => now - s.answeredAt < SENT_WAIT_MS);
    if (fresh.length < this.#sent.length) {
      this.#sent = fresh;
      await this.#save();
    }
  }

  #save(): Promise<void> {
    return this.store.saveView({
      state: this.#confirmed,
      ...(this.#records !== NO_RECORDS && { records: this.#records }),
      ...(this.#cursor !== undefined && { cursor: this.#cursor }),
      ...(this.#spaces !== undefined && { spaces: this.#spaces }),
      ...(this.#sent.length > 0 && { sent: this.#sent }),
    });
  }

  #liveState(st: LiveState): void {
    if (st.kind === "stopped" && st.reason !== "stopped") {
      const reason: StopReason = st.reason === "unauthorized" || st.reason === "unreadable_token" ? "signed_out" : st.reason;
      this.stop(reason, st.error);
    }
    this.#render();
  }

  #failed(err: unknown): void {
    this.#error = err instanceof PullError ? `status ${err.status}` : err instanceof Error ? err.message : String(err);
    this.#render();
  }

  /** Folds the pending writes over the confirmed state and tells the client. */
  #render(): void {
    const pending = [...this.#sent.map((s) => s.entry), ...this.#entries.filter((e) => e.status === "pending")];
    const reduce = this.#o.reduce;
    const author = this.space === undefined ? undefined : this.#o.user;
    let state = this.#confirmed;
    try {
      if (reduce !== undefined && pending.length > 0) {
        state = copy(state);
        for (const e of pending) {
          state = reduce(state, localEvent(e, author));
        }
      }
    } catch (err) {
      if (this.#stopped === undefined) {
        this.#stopped = { reason: "reducer_failed", error: String(err) };
        this.#live.stop();
      }
      state = this.#confirmed;
    }
    this.view = {
      state,
      confirmed: this.#confirmed,
      records: this.#topRecords(pending, author).live,
      status: this.#status(),
      writes: this.#entries.map(pendingWrite),
      loaded: true,
      channel: this.#live.state.kind,
    };
    this.#changed();
  }

  /** The confirmed records with the pending changes on top; the last ones again while neither changed. */
  #topRecords(pending: QueueEntry[], author: string | undefined): KeptRecords {
    const keys = pending.map((e) => e.key).join();
    const t = this.#topped;
    if (t !== undefined && t.base === this.#records && t.keys === keys) {
      return t.records;
    }
    const changes = pending.filter((e) => e.action === undefined).map((e): RecordEvent => localRecordEvent(e, author));
    const records = foldRecords(this.#records, changes);
    this.#topped = { base: this.#records, keys, records };
    return records;
  }

  #status(): SyncStatus {
    const error = this.#error === undefined ? {} : { error: this.#error };
    if (this.#stopped !== undefined) {
      return { kind: "stopped", ...this.#stopped };
    }
    if (!this.#online()) {
      return { kind: "offline" };
    }
    if (this.#sending > 0) {
      return { kind: "sending", ...error };
    }
    // Sent but not pulled back yet: not synced, as the confirmed state lacks it.
    const waiting = this.#sent.length > 0 || this.#entries.some((e) => e.status === "pending");
    return { kind: this.#synced && !waiting && this.#error === undefined ? "synced" : "online", ...error };
  }
}

/** The stop a drain's report calls for; undefined for those a later drain gets past. */
function queueStop(report: DrainReport): StopReason | undefined {
  switch (report.stopped) {
    case "unauthorized":
    case "unreadable_token":
      return "signed_out";
    case "wrong_user":
      return "wrong_user";
    case "forbidden":
      // A reader's writes are refused (SPACE_ROLE_FORBIDS), but the space
      // still reads: they wait, and status.error says why. No member: stop.
      return report.error?.startsWith("SPACE_ROLE_FORBIDS") ? undefined : "forbidden";
    default:
      return undefined;
  }
}

/**
 * A deep copy of a state, for reduce to change: by JSON, which the state
 * is anyway (it is kept so), and which every browser of the floor has
 * (structuredClone came later).
 */
function copy<S>(state: S): S {
  return state === undefined ? state : (JSON.parse(JSON.stringify(state)) as S);
}

function syncEvent(ev: ListedEvent, pending: boolean): SyncEvent {
  const gone = deletedId(ev);
  if (gone !== undefined) {
    return { kind: "deleted", id: gone, pending };
  }
  return {
    kind: "event",
    id: ev.id,
    type: ev.type,
    payload: ev.payload,
    occurredAt: ev.occurredAt,
    ...(ev.author !== undefined && { author: ev.author }),
    pending,
  };
}

function localEvent(e: QueueEntry, author: string | undefined): SyncEvent {
  if (e.action === "delete") {
    return { kind: "deleted", id: e.event.id, pending: true };
  }
  const { id, type, payload, occurredAt } = e.event;
  return { kind: "event", id, type, payload, occurredAt: occurredAt ?? "", ...(author !== undefined && { author }), pending: true };
}

function localRecordEvent(e: QueueEntry, author: string | undefined): RecordEvent {
  const { type, payload, occurredAt } = e.event;
  return { type, payload, occurredAt: occurredAt ?? "", ...(author !== undefined && { author }), pending: true };
}

function pendingWrite(e: QueueEntry): PendingWrite {
  const body = e.error?.body as Partial<ApiError> | null | undefined;
  return {
    key: e.key,
    id: e.event.id,
    type: e.event.type,
    payload: e.event.payload,
    delete: e.action === "delete",
    fate: e.status,
    ...(e.error && {
      error: {
        status: e.error.status,
        ...(typeof body?.error === "string" && { code: body.error }),
        ...(typeof body?.message === "string" && { message: body.message }),
      },
    }),
  };
}
