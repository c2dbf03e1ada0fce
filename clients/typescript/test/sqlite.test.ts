import assert from "node:assert/strict";
import { it } from "node:test";
import initSqlJs, { type Database } from "sql.js";
import { type SQLiteDatabase, sqliteStorage } from "../src/sqlite.js";
import { entry, storageContract } from "./storage-contract.js";

/**
 * sqliteStorage on a real SQLite engine: sql.js, SQLite compiled to
 * WebAssembly, from npm (its .wasm is in the package; nothing is fetched).
 * A reload is a new database opened from the bytes the last one holds, as
 * an app restarted finds its database file.
 */
const SQL = await initSqlJs();

/** sql.js behind the one call of SQLiteDatabase (op-sqlite's shape). */
function executor(db: Database): SQLiteDatabase {
  return {
    async execute(sql, params = []) {
      const stmt = db.prepare(sql);
      try {
        stmt.bind(params);
        const rows: Record<string, unknown>[] = [];
        while (stmt.step()) {
          rows.push(stmt.getAsObject());
        }
        return { rows };
      } finally {
        stmt.free();
      }
    },
  };
}

storageContract(`sqliteStorage (sql.js, SQLite ${new SQL.Database().exec("select sqlite_version()")[0]?.values[0]?.[0]})`, () => {
  let db: Database | undefined;
  return {
    storage: () => {
      db = db === undefined ? new SQL.Database() : new SQL.Database(db.export());
      return sqliteStorage(executor(db));
    },
  };
});

it("sqliteStorage: a refused change in a transaction leaves the database as it was, and the next statements run", async () => {
  const db = new SQL.Database();
  const q = sqliteStorage(executor(db)).open("u", "me");
  await q.add(entry(1));
  await q.add(entry(2));
  await assert.rejects(q.updateAll([entry(1, { batch: "b" }), entry(9, { batch: "b" })]), /no entry with key/);
  assert.deepEqual(await q.list(), [entry(1), entry(2)], "the first update rolled back with the refused one");
  await q.updateAll([entry(1, { batch: "b" }), entry(2, { batch: "b" })]);
  assert.deepEqual(
    (await q.list()).map((e) => e.batch),
    ["b", "b"],
  );
  assert.deepEqual(db.exec("select name from sqlite_master where type = 'table' and name like 'sync_events%' order by name")[0]?.values, [
    ["sync_events_queue"],
    ["sync_events_view"],
  ]);
});
