import { type KeptView, requireUser, type StorageOptions, type StreamStore, type SyncStorage } from "./storage.js";
import type { QueueEntry } from "./types.js";

const STORE = "entries";
const BY_KEY = "by_key";
/** The store of the kept view: one row, under VIEW_KEY. */
const VIEWS = "view";
const VIEW_KEY = "view";

interface Row {
  seq?: number;
  entry: QueueEntry;
}

export interface IndexedDBStorageOptions extends StorageOptions {
  /** The app's queue name (default "sync-events-queue"); the database is named for it and the user. */
  name?: string;
  /** The IndexedDB to use; the global one by default. */
  factory?: IDBFactory;
  /** The Web Lock of the queue's drains; by default one per database. */
  lockName?: string;
}

/**
 * A QueueStorage in the browser's IndexedDB: the queue of one user, in a
 * database of its own, whose entries survive a reload and which every tab
 * of the app sees. Rows are numbered as they are added (an auto-increment
 * primary key), so list() is in insertion order; an index on the entry's
 * key finds a row to update or remove.
 */
export class IndexedDBStorage implements StreamStore {
  readonly user: string;
  /** The database's name: the queue's name, ":", and the user, URI-encoded (so the user part has no ":"). */
  readonly database: string;
  /** The Web Lock of this queue's drains: one name per database. */
  readonly lockName: string;
  readonly #factory: IDBFactory;
  readonly #db: Promise<IDBDatabase>;
  /** Why this connection is gone, once it is: clear(), here or in another tab. */
  #gone: string | undefined;

  constructor(options: IndexedDBStorageOptions) {
    this.user = requireUser(options);
    const factory = options.factory ?? globalThis.indexedDB;
    if (!factory) {
      throw new Error("no IndexedDB here: pass a factory, or use MemoryStorage");
    }
    this.#factory = factory;
    this.database = `${options.name ?? "sync-events-queue"}:${encodeURIComponent(this.user)}`;
    this.lockName = options.lockName ?? `sync-events-queue:${this.database}`;
    this.#db = new Promise((resolve, reject) => {
      // Version 2 adds the kept view's store; a version 1 database keeps its queue.
      const open = factory.open(this.database, 2);
      open.onupgradeneeded = () => {
        const db = open.result;
        if (!db.objectStoreNames.contains(STORE)) {
          const store = db.createObjectStore(STORE, { keyPath: "seq", autoIncrement: true });
          store.createIndex(BY_KEY, "entry.key", { unique: true });
        }
        if (!db.objectStoreNames.contains(VIEWS)) {
          db.createObjectStore(VIEWS);
        }
      };
      open.onsuccess = () => {
        const db = open.result;
        // Another tab's clear() deletes the database: this connection gives
        // way at once, or the deletion would wait for the tab to close.
        db.onversionchange = () => {
          this.#gone = "the queue's database was deleted by another tab (clear()): make a new IndexedDBStorage";
          db.close();
        };
        resolve(db);
      };
      open.onerror = () => reject(open.error);
    });
  }

  async add(entry: QueueEntry): Promise<void> {
    await this.#run("readwrite", (store) => store.add({ entry } satisfies Row));
  }

  async loadView(): Promise<KeptView | undefined> {
    return (await this.#run("readonly", (store) => store.get(VIEW_KEY) as IDBRequest<KeptView | undefined>, VIEWS)) ?? undefined;
  }

  async saveView(view: KeptView): Promise<void> {
    await this.#run("readwrite", (store) => store.put(view, VIEW_KEY), VIEWS);
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

  /**
   * Removes every entry of the user and deletes the user's database, in
   * every tab: what an app does at logout. The entries are gone when it
   * resolves; the database is too, unless a connection that is not this
   * class's holds it open, and then it goes when that closes. This storage
   * is closed after it (as are the user's storages in other tabs): make a
   * new one for the user's next login.
   */
  async clear(): Promise<void> {
    await this.#run("readwrite", (store) => store.clear());
    await this.#run("readwrite", (store) => store.clear(), VIEWS);
    this.#gone = "the queue's database was deleted (clear()): make a new IndexedDBStorage";
    (await this.#db).close();
    await new Promise<void>((resolve, reject) => {
      const deletion = this.#factory.deleteDatabase(this.database);
      deletion.onsuccess = () => resolve();
      deletion.onblocked = () => resolve();
      deletion.onerror = () => reject(deletion.error);
    });
  }

  /** Closes the database: what a reload does to this tab's connection. */
  async close(): Promise<void> {
    (await this.#db).close();
  }

  /** The open database, or why there is none any more. */
  async #open(): Promise<IDBDatabase> {
    const db = await this.#db;
    if (this.#gone !== undefined) {
      throw new Error(this.#gone);
    }
    return db;
  }

  async #run<T>(mode: IDBTransactionMode, op: (store: IDBObjectStore) => IDBRequest<T>, name = STORE): Promise<T> {
    const db = await this.#open();
    return new Promise<T>((resolve, reject) => {
      const tx = db.transaction(name, mode);
      const req = op(tx.objectStore(name));
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
    const db = await this.#open();
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

/** Where an indexedDBStorage keeps its databases: their names' start, and the IndexedDB. */
export interface IndexedDBOptions {
  /** The start of every database's name (default "sync-events"). */
  name?: string;
  factory?: IDBFactory;
}

/**
 * A SyncStorage in the browser's IndexedDB: a database per user and stream
 * ("<name>:<user>" for the user's own, "<name>-<stream>:<user>" for a
 * space's), which every tab of the app shares; their queues drain under
 * one Web Lock per user, so one tab drains at a time.
 */
export function indexedDBStorage(options: IndexedDBOptions = {}): SyncStorage {
  const name = options.name ?? "sync-events";
  return {
    open: (user, stream) =>
      new IndexedDBStorage({
        user,
        name: stream === "me" ? name : `${name}-${stream.replace(/:/g, "-")}`,
        lockName: `sync-events:${name}:${encodeURIComponent(user)}`,
        ...(options.factory ? { factory: options.factory } : {}),
      }),
  };
}
