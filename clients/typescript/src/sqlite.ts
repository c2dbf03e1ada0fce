import { type KeptView, requireUser, type StreamStore, type SyncStorage } from "./storage.js";
import type { QueueEntry } from "./types.js";

/** A value SQLite binds. */
export type SQLiteValue = string | number | null;

/**
 * The one call sqliteStorage needs of a SQLite database: run a statement
 * with its parameters and resolve to its rows. op-sqlite's database is one
 * as it is (`db.execute(sql, params)` resolves to `{ rows }`); expo-sqlite's
 * through one line:
 *
 * @example
 * import { openDatabaseSync } from "expo-sqlite";
 * const expo = openDatabaseSync("app.db");
 * const db = { execute: async (sql, params) => ({ rows: await expo.getAllAsync(sql, params) }) };
 * const storage = sqliteStorage(db);
 */
export interface SQLiteDatabase {
  execute(sql: string, params?: SQLiteValue[]): Promise<{ rows: Record<string, unknown>[] }>;
}

const QUEUE = "sync_events_queue";
const VIEW = "sync_events_view";

/**
 * A SyncStorage in a SQLite database (React Native's expo-sqlite or
 * op-sqlite, or any other with the one call of SQLiteDatabase): two
 * tables, made if missing, whose rows are keyed by user and stream; a
 * queue's rows are numbered as added, so they list in order. Its
 * statements run one at a time, and each all-or-none change in a
 * transaction of its own, so no two interleave on the connection.
 */
export function sqliteStorage(db: SQLiteDatabase): SyncStorage {
  let chain: Promise<unknown> = Promise.resolve();
  let made: Promise<void> | undefined;
  /** Runs fn after everything asked before it, with the tables made. */
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = chain.then(async () => {
      made ??= createTables(db);
      await made;
      return fn();
    });
    chain = run.catch(() => undefined);
    return run;
  };
  return { open: (user, stream) => new SQLiteStore(db, requireUser({ user }), stream, serial) };
}

async function createTables(db: SQLiteDatabase): Promise<void> {
  await db.execute(
    `CREATE TABLE IF NOT EXISTS ${QUEUE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, stream TEXT NOT NULL, key TEXT NOT NULL, entry TEXT NOT NULL, UNIQUE (user, stream, key))`,
  );
  await db.execute(
    `CREATE TABLE IF NOT EXISTS ${VIEW} (user TEXT NOT NULL, stream TEXT NOT NULL, view TEXT NOT NULL, PRIMARY KEY (user, stream))`,
  );
}

class SQLiteStore implements StreamStore {
  readonly user: string;
  readonly #db: SQLiteDatabase;
  readonly #stream: string;
  readonly #serial: <T>(fn: () => Promise<T>) => Promise<T>;

  constructor(db: SQLiteDatabase, user: string, stream: string, serial: <T>(fn: () => Promise<T>) => Promise<T>) {
    this.user = user;
    this.#db = db;
    this.#stream = stream;
    this.#serial = serial;
  }

  add(entry: QueueEntry): Promise<void> {
    return this.#serial(async () => {
      await this.#db.execute(`INSERT INTO ${QUEUE} (user, stream, key, entry) VALUES (?, ?, ?, ?)`, [
        this.user,
        this.#stream,
        entry.key,
        JSON.stringify(entry),
      ]);
    });
  }

  list(): Promise<QueueEntry[]> {
    return this.#serial(async () => {
      const { rows } = await this.#db.execute(`SELECT entry FROM ${QUEUE} WHERE user = ? AND stream = ? ORDER BY seq`, [
        this.user,
        this.#stream,
      ]);
      return rows.map((r) => JSON.parse(String(r.entry)) as QueueEntry);
    });
  }

  update(entry: QueueEntry): Promise<void> {
    return this.updateAll([entry]);
  }

  remove(key: string): Promise<void> {
    return this.removeAll([key]);
  }

  updateAll(entries: QueueEntry[]): Promise<void> {
    return this.#transaction(async () => {
      for (const e of entries) {
        const { rows } = await this.#db.execute(`UPDATE ${QUEUE} SET entry = ? WHERE user = ? AND stream = ? AND key = ? RETURNING seq`, [
          JSON.stringify(e),
          this.user,
          this.#stream,
          e.key,
        ]);
        if (rows.length === 0) {
          throw new Error(`no entry with key ${e.key}`);
        }
      }
    });
  }

  removeAll(keys: string[]): Promise<void> {
    return this.#transaction(async () => {
      for (const k of keys) {
        await this.#db.execute(`DELETE FROM ${QUEUE} WHERE user = ? AND stream = ? AND key = ?`, [this.user, this.#stream, k]);
      }
    });
  }

  clear(): Promise<void> {
    return this.#transaction(async () => {
      await this.#db.execute(`DELETE FROM ${QUEUE} WHERE user = ? AND stream = ?`, [this.user, this.#stream]);
      await this.#db.execute(`DELETE FROM ${VIEW} WHERE user = ? AND stream = ?`, [this.user, this.#stream]);
    });
  }

  loadView(): Promise<KeptView | undefined> {
    return this.#serial(async () => {
      const { rows } = await this.#db.execute(`SELECT view FROM ${VIEW} WHERE user = ? AND stream = ?`, [this.user, this.#stream]);
      const [row] = rows;
      return row === undefined ? undefined : (JSON.parse(String(row.view)) as KeptView);
    });
  }

  saveView(view: KeptView): Promise<void> {
    return this.#serial(async () => {
      await this.#db.execute(`INSERT OR REPLACE INTO ${VIEW} (user, stream, view) VALUES (?, ?, ?)`, [
        this.user,
        this.#stream,
        JSON.stringify(view),
      ]);
    });
  }

  /** fn in one transaction: committed whole, or rolled back and rejected. */
  #transaction(fn: () => Promise<void>): Promise<void> {
    return this.#serial(async () => {
      await this.#db.execute("BEGIN IMMEDIATE");
      try {
        await fn();
      } catch (err) {
        await this.#db.execute("ROLLBACK");
        throw err;
      }
      await this.#db.execute("COMMIT");
    });
  }
}
