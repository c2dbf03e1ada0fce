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
  /** The Web Lock of this queue's drains: one name per database. */
  readonly lockName: string;

  /**
   * @param name the database's name (one queue per name)
   * @param factory the IndexedDB to use; the global one by default
   */
  constructor(name = "sync-events-queue", factory: IDBFactory = globalThis.indexedDB) {
    if (!factory) {
      throw new Error("no IndexedDB here: pass a factory, or use MemoryStorage");
    }
    this.lockName = `sync-events-queue:${name}`;
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
    await this.updateAll([entry]);
  }

  async remove(key: string): Promise<void> {
    await this.removeAll([key]);
  }

  async updateAll(entries: QueueEntry[]): Promise<void> {
    await this.#atKeys(
      entries.map((e) => e.key),
      (store, seqs) => {
        const missing = entries.find((_, i) => seqs[i] === undefined);
        if (missing) {
          return new Error(`no entry with key ${missing.key}`);
        }
        for (const [i, entry] of entries.entries()) {
          store.put({ seq: seqs[i] as number, entry } satisfies Row);
        }
        return undefined;
      },
    );
  }

  async removeAll(keys: string[]): Promise<void> {
    await this.#atKeys(keys, (store, seqs) => {
      for (const seq of seqs) {
        if (seq !== undefined) {
          store.delete(seq);
        }
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
   * Finds the rows of keys and hands their numbers (undefined where none)
   * to act, in one readwrite transaction, so nothing changes the rows in
   * between and act's writes commit together. An error act returns aborts
   * the transaction and is what rejects.
   */
  async #atKeys(keys: string[], act: (store: IDBObjectStore, seqs: (IDBValidKey | undefined)[]) => Error | undefined): Promise<void> {
    const db = await this.#db;
    return new Promise<void>((resolve, reject) => {
      const tx = db.transaction(STORE, "readwrite");
      const store = tx.objectStore(STORE);
      const seqs: (IDBValidKey | undefined)[] = new Array(keys.length);
      let found = 0;
      const done = () => {
        const refused = act(store, seqs);
        if (refused) {
          reject(refused);
          tx.abort();
        }
      };
      if (keys.length === 0) {
        done();
      }
      keys.forEach((key, i) => {
        const req = store.index(BY_KEY).getKey(key);
        req.onsuccess = () => {
          seqs[i] = req.result;
          if (++found === keys.length) {
            done();
          }
        };
      });
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }
}
