/** The signal of one attempt: the caller's, and the attempt's timeout. */
export interface AttemptSignal {
  readonly signal: AbortSignal;
  /** Whether the attempt ran out of time (rather than being aborted by the caller). */
  timedOut(): boolean;
  /** Drops the timer and listeners, once the attempt is over. */
  release(): void;
}

/**
 * A signal that aborts when the caller's does or after ms, made from an
 * AbortController alone: AbortSignal.any arrived only in Chrome 116 and
 * Safari 17.4, AbortSignal.timeout in Chrome 103 and Safari 16, and the
 * client supports browsers older than both (see the README's floor).
 */
export function attemptSignal(caller: AbortSignal | undefined, ms: number): AttemptSignal {
  const c = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    c.abort(new DOMException("the attempt timed out", "TimeoutError"));
  }, ms);
  const onAbort = () => c.abort(caller?.reason);
  if (caller?.aborted) {
    onAbort();
  } else {
    caller?.addEventListener("abort", onAbort, { once: true });
  }
  return {
    signal: c.signal,
    timedOut: () => timedOut,
    release() {
      clearTimeout(timer);
      caller?.removeEventListener("abort", onAbort);
    },
  };
}
