import { useCallback, useRef, useSyncExternalStore } from "react";
import type { SyncClient, SyncState } from "./client.js";

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
