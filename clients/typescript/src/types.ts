import type { components } from "./schema.js";

/** The event a client sends (the body of POST /api/v1/sync/events). */
export type NewEvent = components["schemas"]["NewEvent"];
/** The answer of a 201: the event as stored, without its payload. */
export type StoredEvent = components["schemas"]["StoredEvent"];
/** An event as a page lists it; a space's events carry `author`, the `sub` of who wrote it. */
export type ListedEvent = components["schemas"]["ListedEvent"];
/** A page of GET /api/v1/sync/events, or of a space's GET /api/v1/spaces/{spaceId}/events. */
export type Page = components["schemas"]["Page"];
/** The API's error body. */
export type ApiError = components["schemas"]["Error"];
/** The closed list of the API's error codes. */
export type ErrorCode = components["schemas"]["ErrorCode"];
/**
 * A refusal's body as read: the API's error; { message } holding the text
 * of a body that was not JSON (a proxy's page, say); null if it was empty.
 */
export type ErrorBody = ApiError | { message: string } | null;

/**
 * Where an entry stands: waiting to be sent, refused for reusing its key with
 * another body (a client bug, kept untouched for the app to look at), or
 * refused by the server for another reason (kept with the server's error).
 */
export type EntryStatus = "pending" | "conflict" | "rejected";

/** One queued mutation: the event and the idempotency key it is always sent with. */
export interface QueueEntry {
  /** The Idempotency-Key, a UUID v4 chosen once, when the event was written. */
  readonly key: string;
  readonly event: NewEvent;
  status: EntryStatus;
  /** For a rejected entry: the HTTP status and the server's error body. */
  error?: { status: number; body: ErrorBody };
  /**
   * The Idempotency-Key of the batch the entry was put in before its first
   * send. Entries with one batch key are sent together, as the very same
   * batch, until the batch is answered.
   */
  batch?: string;
  /**
   * "delete": the entry deletes the event named by event.id (DELETE
   * /events/{id}, alone, under the entry's key); its event is the notice
   * the stream will carry, type "event.deleted" and payload { id }. Absent:
   * the entry sends its event.
   */
  action?: "delete";
}
