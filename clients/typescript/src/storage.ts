import type { QueueEntry } from "./types.js";

/**
 * What the sync queue persists through. An entry added is there after a
 * reload of the app; list() returns entries in the order they were added.
 */
export interface QueueStorage {
  add(entry: QueueEntry): Promise<void>;
  list(): Promise<QueueEntry[]>;
  /** Replaces the stored entry with the same key; its place in the order stays. */
  update(entry: QueueEntry): Promise<void>;
  remove(key: string): Promise<void>;
  /** update() of each entry, all or none: a batch is formed, or settled, whole. */
  updateAll(entries: QueueEntry[]): Promise<void>;
  /** remove() of each key, all or none. */
  removeAll(keys: string[]): Promise<void>;
  /**
   * For a storage that the tabs of an app share: the name of the Web Lock
   * a SyncQueue holds while it drains, so that one tab drains at a time.
   */
  readonly lockName?: string;
}

/** A QueueStorage in memory: for tests, and for apps that need no persistence. */
export class MemoryStorage implements QueueStorage {
  readonly #entries = new Map<string, QueueEntry>();

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
}

/** A deep copy of an entry, which is JSON through and through (structuredClone is newer than the browser floor). */
function copy(entry: QueueEntry): QueueEntry {
  return JSON.parse(JSON.stringify(entry)) as QueueEntry;
}
