import type { QueueEntry } from "./types.js";

/**
 * What the sync queue persists through: the queue of one user, the `user`
 * it was made for. A SyncQueue sends its entries only with a token whose
 * `sub` is that user. list() returns entries in the order they were added.
 */
export interface QueueStorage {
  /** The user (the `sub` of the API's tokens) whose queue this is. */
  readonly user: string;
  add(entry: QueueEntry): Promise<void>;
  list(): Promise<QueueEntry[]>;
  /** Replaces the stored entry with the same key; its place in the order stays. */
  update(entry: QueueEntry): Promise<void>;
  remove(key: string): Promise<void>;
  /** update() of each entry, all or none: a batch is formed, or settled, whole. */
  updateAll(entries: QueueEntry[]): Promise<void>;
  /** remove() of each key, all or none. */
  removeAll(keys: string[]): Promise<void>;
  /** Removes every entry of the user, sent or not: what an app does at logout. */
  clear(): Promise<void>;
  /**
   * For a storage that the tabs of an app share: the name of the Web Lock
   * a SyncQueue holds while it drains, so that one tab drains at a time.
   */
  readonly lockName?: string;
}

/**
 * What a SyncClient keeps of one stream besides its queue: the app's state
 * folded from the confirmed events, and the cursor it was folded to, saved
 * together in one write so that a crash never leaves one without the
 * other; the writes answered but not yet listed; and, in the user's own
 * stream's, the spaces the client follows.
 */
export interface KeptView {
  state: unknown;
  /** The stream's records folded from the same confirmed events (see SyncClient.records), saved in the same write. */
  records?: unknown;
  cursor?: string;
  spaces?: string[];
  /**
   * The writes the server answered (their entries, left the queue) that no
   * pull has listed yet, each with when it was answered (ms since the
   * epoch): a reload folds them on top again rather than drop them from
   * the view until a pull lists them. Saved in the same write as the state
   * and cursor, so a listed write never stays on top of the state holding it.
   */
  sent?: { entry: QueueEntry; answeredAt: number }[];
}

/**
 * One stream's durable part, of one user: its queue (QueueStorage) and its
 * kept view. clear() removes both.
 */
export interface StreamStore extends QueueStorage {
  /** The view kept by the last saveView(), or undefined if none (or since clear()). */
  loadView(): Promise<KeptView | undefined>;
  /** Replaces the kept view, whole; it rejects if nothing was kept. */
  saveView(view: KeptView): Promise<void>;
}

/**
 * Where a SyncClient keeps what it must not lose: it opens a store per
 * user and stream ("me", the user's own; "space:" and the id, a space's).
 * memoryStorage(), indexedDBStorage() and sqliteStorage() make one; any
 * other must pass the same contract (test/storage-contract.ts).
 */
export interface SyncStorage {
  open(user: string, stream: string): StreamStore;
}

/** What a storage is made for: the user whose queue it holds. */
export interface StorageOptions {
  /** The user: the `sub` of the tokens the queue is sent with. */
  user: string;
}

/** What a MemoryStorage is made for: its user and, optionally, where it keeps the entries. */
export interface MemoryStorageOptions extends StorageOptions {
  /**
   * Where the entries are kept, each as JSON: the storages made over one
   * store share each user's queue, as the storages over one browser
   * profile's IndexedDB do, so a new storage (as after a reload of the
   * app) finds what the last one kept. A store of the storage's own by
   * default: the queue lives and dies with the object.
   */
  store?: Map<string, string>;
  /** The stream within the user's (see SyncStorage); the user's queue of old if absent. */
  stream?: string;
}

/**
 * A QueueStorage in memory, for tests and for apps that need no
 * persistence. By default it lives and dies with the object, so a reload
 * of the app starts with an empty queue; made over a shared `store`, it
 * holds what a persistent storage would, serialised, and a new storage of
 * the same user over that store carries on.
 */
export class MemoryStorage implements StreamStore {
  readonly user: string;
  readonly #store: Map<string, string>;
  /**
   * The start of every key of this user's entries in the store (URI-encoding
   * leaves no newline or tab, so no prefix starts another).
   */
  readonly #prefix: string;
  /** The key of the kept view: \u0001 starts no URI-encoded user. */
  readonly #view: string;

  constructor(options: MemoryStorageOptions) {
    this.user = requireUser(options);
    this.#store = options.store ?? new Map();
    const stream = options.stream === undefined ? "" : `\t${encodeURIComponent(options.stream)}`;
    this.#prefix = `${encodeURIComponent(this.user)}${stream}\n`;
    this.#view = `\u0001${this.#prefix}`;
  }

  async loadView(): Promise<KeptView | undefined> {
    const json = this.#store.get(this.#view);
    return json === undefined ? undefined : (JSON.parse(json) as KeptView);
  }

  async saveView(view: KeptView): Promise<void> {
    this.#store.set(this.#view, JSON.stringify(view));
  }

  async add(entry: QueueEntry): Promise<void> {
    if (this.#store.has(this.#prefix + entry.key)) {
      throw new Error(`an entry with key ${entry.key} is already queued`);
    }
    this.#store.set(this.#prefix + entry.key, JSON.stringify(entry));
  }

  async list(): Promise<QueueEntry[]> {
    // A Map iterates in insertion order, and set() on an existing key keeps it.
    const out: QueueEntry[] = [];
    for (const [k, json] of this.#store) {
      if (k.startsWith(this.#prefix)) {
        out.push(JSON.parse(json) as QueueEntry);
      }
    }
    return out;
  }

  async update(entry: QueueEntry): Promise<void> {
    await this.updateAll([entry]);
  }

  async remove(key: string): Promise<void> {
    await this.removeAll([key]);
  }

  async updateAll(entries: QueueEntry[]): Promise<void> {
    const missing = entries.find((e) => !this.#store.has(this.#prefix + e.key));
    if (missing) {
      throw new Error(`no entry with key ${missing.key}`);
    }
    for (const e of entries) {
      this.#store.set(this.#prefix + e.key, JSON.stringify(e));
    }
  }

  async removeAll(keys: string[]): Promise<void> {
    for (const k of keys) {
      this.#store.delete(this.#prefix + k);
    }
  }

  async clear(): Promise<void> {
    for (const k of [...this.#store.keys()]) {
      if (k.startsWith(this.#prefix)) {
        this.#store.delete(k);
      }
    }
    this.#store.delete(this.#view);
  }
}

/**
 * A SyncStorage in memory: what the client keeps lives as long as `store`
 * (a fresh Map by default, so as long as the storage). Give one Map to
 * the storages of two clients to have the second find what the first
 * kept, as after a reload.
 */
export function memoryStorage(store: Map<string, string> = new Map()): SyncStorage {
  return { open: (user, stream) => new MemoryStorage({ user, stream, store }) };
}

/** The user of a storage's options, or a TypeError saying what is missing. */
export function requireUser(options: StorageOptions | undefined): string {
  const user = (options as Partial<StorageOptions> | undefined)?.user;
  if (typeof user !== "string" || user === "") {
    throw new TypeError("a queue storage is made for one user: pass { user }, the sub of the tokens its queue is sent with");
  }
  return user;
}
