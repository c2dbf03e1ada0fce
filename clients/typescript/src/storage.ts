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
}

/**
 * A QueueStorage in memory, for tests and for apps that need no
 * persistence. By default it lives and dies with the object, so a reload
 * of the app starts with an empty queue; made over a shared `store`, it
 * holds what a persistent storage would, serialised, and a new storage of
 * the same user over that store carries on.
 */
export class MemoryStorage implements QueueStorage {
  readonly user: string;
  readonly #store: Map<string, string>;
  /** The start of every key of this user's entries in the store (URI-encoding leaves no newline). */
  readonly #prefix: string;

  constructor(options: MemoryStorageOptions) {
    this.user = requireUser(options);
    this.#store = options.store ?? new Map();
    this.#prefix = `${encodeURIComponent(this.user)}\n`;
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
  }
}

/** The user of a storage's options, or a TypeError saying what is missing. */
export function requireUser(options: StorageOptions | undefined): string {
  const user = (options as Partial<StorageOptions> | undefined)?.user;
  if (typeof user !== "string" || user === "") {
    throw new TypeError("a queue storage is made for one user: pass { user }, the sub of the tokens its queue is sent with");
  }
  return user;
}
