// @sync-events/client/parts: the parts the client is made of, for an app
// that wires its own sync (its queue, pulls, live channel) rather than
// holding one createSyncClient.
export type { StopReason } from "./http.js";
export { type IndexedDBOptions, IndexedDBStorage, type IndexedDBStorageOptions, indexedDBStorage } from "./indexeddb.js";
export { type LiveChannel, type LiveState, type LiveStopReason, LiveSync, type LiveSyncOptions, type PollReason } from "./live.js";
export { deletedId, EventPull, isCursorExpired, PullError, type PullOptions, PullStopped, pullEvents } from "./pull.js";
export {
  type DrainReport,
  MAX_BATCH_EVENTS,
  MAX_SPACE_BATCH_EVENTS,
  type QueueStopReason,
  SyncQueue,
  type SyncQueueOptions,
} from "./queue.js";
export {
  foldRecords,
  type KeptRecords,
  listRecords,
  RECORD_DELETE,
  RECORD_PATCH,
  RECORD_PUT,
  type RecordEvent,
  recordPayload,
} from "./records.js";
export type { RetryOptions } from "./retry.js";
export {
  addMember,
  createSpace,
  type DeletedEvent,
  deleteEvent,
  leaveSpace,
  listSpaces,
  type MutationOptions,
  type RemovedMember,
  type Role,
  removeMember,
  type Space,
  SpaceError,
  type SpaceMember,
  type SpaceOptions,
  SpaceStopped,
  type SpaceStopReason,
} from "./spaces.js";
export {
  type KeptView,
  MemoryStorage,
  type MemoryStorageOptions,
  memoryStorage,
  type QueueStorage,
  type StorageOptions,
  type StreamStore,
  type SyncStorage,
} from "./storage.js";
export { tokenSubject } from "./token.js";
export type { ApiError, EntryStatus, ErrorBody, ErrorCode, ListedEvent, NewEvent, Page, QueueEntry, StoredEvent } from "./types.js";
export { uuidv4 } from "./uuid.js";
export { EventWriter } from "./writer.js";
