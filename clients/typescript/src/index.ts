export type { StopReason } from "./http.js";
export { IndexedDBStorage } from "./indexeddb.js";
export { EventPull, PullError, type PullOptions, PullStopped, pullEvents } from "./pull.js";
export { type DrainReport, SyncQueue, type SyncQueueOptions } from "./queue.js";
export type { RetryOptions } from "./retry.js";
export { MemoryStorage, type QueueStorage } from "./storage.js";
export type { ApiError, EntryStatus, ErrorBody, ErrorCode, ListedEvent, NewEvent, Page, QueueEntry, StoredEvent } from "./types.js";
export { uuidv4 } from "./uuid.js";
export { EventWriter } from "./writer.js";
