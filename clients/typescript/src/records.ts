// Records: a built-in model of keyed records over the same events as
// everything else. A record change is an ordinary event, of type
// record.put, record.patch or record.delete, with payload
// { collection, id, fields? }; the server stores and lists it as any other.

/** A record's fields: a JSON object (it is sent and kept as JSON). */
export type Fields = Record<string, unknown>;

/** The event type of a put: the record becomes exactly `fields`. */
export const RECORD_PUT = "record.put";
/** The event type of a patch: `fields` are set, the others stay. */
export const RECORD_PATCH = "record.patch";
/** The event type of a delete: the record is gone for good. */
export const RECORD_DELETE = "record.delete";

/** One record as the app reads it (a value: replaced, never changed). */
export interface SyncRecord<T extends object = Fields> {
  /** The record's id in its collection, as given to put, patch or delete. */
  readonly id: string;
  /** Its fields: the last put's, with each later patch's fields on top, in commit order (pending changes last). */
  readonly fields: Readonly<T>;
  /** Whether a change of this client's not yet listed by a pull (queued, or answered) is part of it. */
  readonly pending: boolean;
  /** The `occurredAt` of the change that made it: when the device that wrote it said so (its clock). */
  readonly createdAt: string;
  /** The `occurredAt` of the last change applied to it. */
  readonly updatedAt: string;
  /** In a space: the `sub` of who made it (the user, for a pending one). */
  readonly author?: string;
}

/** One collection's records, by id. */
export type RecordSet<T extends object = Fields> = Readonly<Record<string, SyncRecord<T>>>;

/** A stream's records: each collection's, by the collection's name. A collection with no record is absent. */
export type Records = Readonly<Record<string, RecordSet>>;

/**
 * What a stream keeps of its records, with its state and cursor: the live
 * records, and the ids deleted (a delete is final: a later put or patch
 * of the id is ignored, so the ids stay, a few bytes each).
 */
export interface KeptRecords {
  live: Records;
  deleted: Readonly<Record<string, Readonly<Record<string, 1>>>>;
}

/** An event as the fold reads it: listed, or a local write. */
export interface RecordEvent {
  type: string;
  payload: unknown;
  occurredAt: string;
  author?: string;
  /** A local write not yet listed; absent: listed. */
  pending?: boolean;
}

export const NO_RECORDS: KeptRecords = { live: {}, deleted: {} };

/**
 * Folds events into records, in the order given, copy on write: a
 * collection or record no event touches keeps its identity, so a view of
 * one collection tells a change by reference. Events of other types, and
 * record events that are malformed, change nothing.
 */
export function foldRecords(base: KeptRecords, events: Iterable<RecordEvent>): KeptRecords {
  let live: Record<string, Record<string, SyncRecord>> | undefined;
  let deleted: Record<string, Record<string, 1>> | undefined;
  const copied = new Set<string>();
  const copiedDeleted = new Set<string>();
  const setOf = (c: string): Record<string, SyncRecord> => {
    live ??= { ...base.live } as Record<string, Record<string, SyncRecord>>;
    if (!copied.has(c)) {
      copied.add(c);
      live[c] = { ...live[c] };
    }
    return live[c] as Record<string, SyncRecord>;
  };
  for (const ev of events) {
    const change = recordChange(ev);
    if (change === undefined) {
      continue;
    }
    const { collection: c, id } = change;
    if ((deleted ?? base.deleted)[c]?.[id] !== undefined) {
      continue; // a delete is final
    }
    if (ev.type === RECORD_DELETE) {
      deleted ??= { ...base.deleted } as Record<string, Record<string, 1>>;
      if (!copiedDeleted.has(c)) {
        copiedDeleted.add(c);
        deleted[c] = { ...deleted[c] };
      }
      (deleted[c] as Record<string, 1>)[id] = 1;
      if ((live ?? base.live)[c]?.[id] !== undefined) {
        delete setOf(c)[id];
      }
      continue;
    }
    const set = setOf(c);
    const was = set[id];
    const fields = ev.type === RECORD_PUT || was === undefined ? change.fields : { ...was.fields, ...change.fields };
    const author = was === undefined ? ev.author : was.author;
    set[id] = {
      id,
      fields,
      pending: ev.pending === true || (was?.pending ?? false),
      createdAt: was?.createdAt ?? ev.occurredAt,
      updatedAt: ev.occurredAt,
      ...(author !== undefined && { author }),
    };
  }
  for (const c of copied) {
    if (Object.keys(live?.[c] ?? {}).length === 0) {
      delete live?.[c]; // a collection with no record is absent
    }
  }
  return live === undefined && deleted === undefined ? base : { live: live ?? base.live, deleted: deleted ?? base.deleted };
}

/** A collection's records as a list, oldest first (by createdAt, then id): a stable order for a list on screen. */
export function listRecords<T extends object>(set: RecordSet<T> | undefined): SyncRecord<T>[] {
  return Object.values(set ?? {}).sort((a, b) =>
    a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
}

/** The payload of a record event; throws on a collection or id that is not a non-empty string. */
export function recordPayload(collection: string, id: string, fields?: object): { collection: string; id: string; fields?: Fields } {
  if (typeof collection !== "string" || collection === "" || typeof id !== "string" || id === "") {
    throw new TypeError("a record needs a collection and an id, each a non-empty string");
  }
  if (fields !== undefined && (typeof fields !== "object" || fields === null || Array.isArray(fields))) {
    throw new TypeError("a record's fields are an object");
  }
  return fields === undefined ? { collection, id } : { collection, id, fields: fields as Fields };
}

function recordChange(ev: RecordEvent): { collection: string; id: string; fields: Fields } | undefined {
  if (ev.type !== RECORD_PUT && ev.type !== RECORD_PATCH && ev.type !== RECORD_DELETE) {
    return undefined;
  }
  const p = ev.payload as { collection?: unknown; id?: unknown; fields?: unknown } | null;
  if (
    typeof p !== "object" ||
    p === null ||
    typeof p.collection !== "string" ||
    typeof p.id !== "string" ||
    p.collection === "" ||
    p.id === ""
  ) {
    return undefined;
  }
  const fields = p.fields ?? {};
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    return undefined;
  }
  return { collection: p.collection, id: p.id, fields: fields as Fields };
}
