// @sync-events/client: the one client object, its state and storages.
// The parts it is made of (SyncQueue, pullEvents, LiveSync, …) are at
// @sync-events/client/parts; sqliteStorage at /sqlite; the React hook at /react.
export {
  createSyncClient,
  type PendingWrite,
  type RecordCollection,
  type StopReason,
  type StreamView,
  type SyncClient,
  type SyncClientOptions,
  type SyncEvent,
  type SyncState,
  type SyncStatus,
} from "./client.js";
export { indexedDBStorage } from "./indexeddb.js";
export type { LiveChannel } from "./live.js";
export type { Fields, RecordSet, Records, SyncRecord } from "./records.js";
export { type Role, type Space, SpaceError, SpaceStopped } from "./spaces.js";
export { type KeptView, memoryStorage, type StreamStore, type SyncStorage } from "./storage.js";
export { tokenSubject } from "./token.js";
