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

/**
 * A QueueStorage in memory, for tests and for apps that need no
 * persistence: it lives and dies with the object, so a reload of the app
 * starts with an empty queue.
 */
export class MemoryStorage implements QueueStorage {
  readonly user: string;
  readonly #entries = new Map<string, QueueEntry>();

  constructor(options: StorageOptions) {
    this.user = requireUser(options);
  }

  async add(entry: QueueEntry): Promise<void> {
    if (this.#entries.has(entry.key)) {
      throw new Error(`an entry with key ${entry.key} is already queued`);
    }
    this.#entries.set(entry.key, copy(entry));
  }

  async list(): Promise<QueueEntry[]> {
    // A Map iterates in insertion order, and set() on an existing key keeps it.
    return [...this.#entries.values()].map((e) => copy(e));
  }

  async update(entry: QueueEntry): Promise<void> {
    await this.updateAll([entry]);
  }

  async remove(key: string): Promise<void> {
    await this.removeAll([key]);
  }

  async updateAll(entries: QueueEntry[]): Promise<void> {
    const missing = entries.find((e) => !this.#entries.has(e.key));
    if (missing) {
      throw new Error(`no entry with key ${missing.key}`);
    }
    for (const e of entries) {
      this.#entries.set(e.key, copy(e));
    }
  }

  async removeAll(keys: string[]): Promise<void> {
    for (const k of keys) {
      this.#entries.delete(k);
    }
  }

  async clear(): Promise<void> {
    this.#entries.clear();
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

/** A deep copy of an entry, which is JSON through and through (structuredClone is newer than the browser floor). */
function copy(entry: QueueEntry): QueueEntry {
  return JSON.parse(JSON.stringify(entry)) as QueueEntry;
}
