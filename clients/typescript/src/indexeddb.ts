import type { QueueStorage } from "./storage.js";
import type { QueueEntry } from "./types.js";

const STORE = "entries";
const BY_KEY = "by_key";

interface Row {
  seq?: number;
  entry: QueueEntry;
}

/**
 * A QueueStorage in the browser's IndexedDB: entries survive a reload, and
 * every tab of the app sees the same queue. Rows are numbered as they are
 * added (an auto-increment primary key), so list() is in insertion order;
 * an index on the entry's key finds a row to update or remove.
 */
export class IndexedDBStorage implements QueueStorage {
  readonly #db: Promise<IDBDatabase>;

  /**
   * @param name the database's name (one queue per name)
   * @param factory the IndexedDB to use; the global one by default
   */
  constructor(name = "sync-events-queue", factory: IDBFactory = globalThis.indexedDB) {
    if (!factory) {
      throw new Error("no IndexedDB here: pass a factory, or use MemoryStorage");
    }
    this.#db = new Promise((resolve, reject) => {
      const open = factory.open(name, 1);
      open.onupgradeneeded = () => {
        const store = open.result.createObjectStore(STORE, { keyPath: "seq", autoIncrement: true });
        store.createIndex(BY_KEY, "entry.key", { unique: true });
      };
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(open.error);
    });
  }

  async add(entry: QueueEntry): Promise<void> {
    await this.#run("readwrite", (store) => store.add({ entry } satisfies Row));
  }

  async list(): Promise<QueueEntry[]> {
    const rows = await this.#run("readonly", (store) => store.getAll() as IDBRequest<Row[]>);
    return rows.map((r) => r.entry);
  }

  async update(entry: QueueEntry): Promise<void> {
    await this.#atKey(entry.key, (store, seq) => {
      if (seq === undefined) {
        return new Error(`no entry with key ${entry.key}`);
      }
      store.put({ seq: seq as number, entry } satisfies Row);
      return undefined;
    });
  }

  async remove(key: string): Promise<void> {
    await this.#atKey(key, (store, seq) => {
      if (seq !== undefined) {
        store.delete(seq);
      }
      return undefined;
    });
  }

  /** Closes the database: what a reload does to this tab's connection. */
  async close(): Promise<void> {
    (await this.#db).close();
  }

  async #run<T>(mode: IDBTransactionMode, op: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    const db = await this.#db;
    return new Promise<T>((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = op(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }

  /**
   * Finds the row of key and hands its number (undefined if none) to act,
   * in one readwrite transaction, so nothing changes the row in between.
   * An error act returns aborts the transaction and is what rejects.
   */
  async #atKey(key: string, act: (store: IDBObjectStore, seq: IDBValidKey | undefined) => Error | undefined): Promise<void> {
    const db = await this.#db;
    return new Promise<void>((resolve, reject) => {
      const tx = db.transaction(STORE, "readwrite");
      const store = tx.objectStore(STORE);
      const found = store.index(BY_KEY).getKey(key);
      found.onsuccess = () => {
        const refused = act(store, found.result);
        if (refused) {
          reject(refused);
          tx.abort();
        }
      };
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }
}
