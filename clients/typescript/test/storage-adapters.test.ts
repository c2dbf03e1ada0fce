import { IDBFactory } from "fake-indexeddb";
import { indexedDBStorage } from "../src/indexeddb.js";
import { memoryStorage } from "../src/storage.js";
import { storageContract } from "./storage-contract.js";

// Each adapter on a fresh device per test: storage() again is the app after a reload.
storageContract("memoryStorage", () => {
  const store = new Map<string, string>();
  return { storage: () => memoryStorage(store) };
});

storageContract("indexedDBStorage (fake-indexeddb)", () => {
  const factory = new IDBFactory();
  return { storage: () => indexedDBStorage({ factory }) };
});
