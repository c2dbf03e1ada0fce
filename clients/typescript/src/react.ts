import { useCallback, useMemo, useRef, useSyncExternalStore } from "react";
import type { SyncClient, SyncState } from "./client.js";
import { type Fields, listRecords, type RecordSet, type SyncRecord } from "./records.js";

/**
 * The part of a SyncClient's state that select() picks, kept current: the
 * component re-renders when that part changes, by isEqual (Object.is by
 * default, which suits a part of the state as it is: the client replaces
 * only what changed). A select() that builds a new object or array each
 * time needs an isEqual that compares them, or every change re-renders.
 * Over React's useSyncExternalStore: no tearing in concurrent rendering,
 * and the same on the server.
 *
 * @example
 * const notes = useSyncState(client, (s) => s.mine.state);
 * const status = useSyncState(client, (s) => s.status.kind);
 */
export function useSyncState<S, T>(
  client: SyncClient<S>,
  select: (state: SyncState<S>) => T,
  isEqual: (a: T, b: T) => boolean = Object.is,
): T {
  const last = useRef<{ value: T } | undefined>(undefined);
  const subscribe = useCallback((onChange: () => void) => client.subscribe(onChange), [client]);
  const snapshot = (): T => {
    const next = select(client.state);
    const prev = last.current;
    if (prev !== undefined && isEqual(prev.value, next)) {
      return prev.value;
    }
    last.current = { value: next };
    return next;
  };
  return useSyncExternalStore(subscribe, snapshot, snapshot);
}

/**
 * A collection of records (see SyncClient.records), kept current: its
 * records oldest first (by createdAt, then id), pending changes on top.
 * The component re-renders when the collection changes, not when another
 * part of the state does; the array is the same one until then. Key list
 * items by `record.id`.
 *
 * @example
 * const todos = useRecords<Todo>(client, "todo");
 * return <ul>{todos.map((t) => <li key={t.id}>{t.fields.title}</li>)}</ul>;
 */
export function useRecords<T extends object = Fields>(
  client: SyncClient<unknown>,
  collection: string,
  options: { space?: string } = {},
): readonly SyncRecord<T>[] {
  const { space } = options;
  const set = useSyncState(
    client,
    (s) => (space === undefined ? s.mine : s.spaces[space])?.records[collection] as RecordSet<T> | undefined,
  );
  return useMemo(() => listRecords(set), [set]);
}
