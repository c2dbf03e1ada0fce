import { PullError, PullStopped } from "./pull.js";
import { type Retrier, retrier } from "./retry.js";
import { type TokenRefusal, tokenFor, tokenSubject } from "./token.js";
import { uuidv4 } from "./uuid.js";

/** Where the user channels are: an AppSync Events API's endpoints. */
export interface LiveChannel {
  /** The WebSocket endpoint, e.g. wss://xyz.appsync-realtime-api.us-east-1.amazonaws.com/event/realtime */
  realtimeUrl: string;
  /** The HTTP endpoint's host, which the authorization names, e.g. xyz.appsync-api.us-east-1.amazonaws.com */
  httpHost: string;
  /** The namespace of the user channels (default "users"): user u's channel is /users/u. */
  namespace?: string;
  /**
   * A space's id: hear that space's pokes, on /spaces/<id>, instead of the
   * user's own (the channel takes its members only; pull the space with
   * pullEvents({space})). Any sub may subscribe to a space's channel.
   */
  space?: string;
}

export interface LiveSyncOptions {
  /** The API's bearer token (a JWT, without "Bearer "), asked for each connection: the channel takes the same one. */
  getToken: () => string | Promise<string>;
  /**
   * The user (the `sub` of the tokens) the pokes are for: each
   * connection's token must be theirs, or no socket is opened and
   * LiveSync stops ("wrong_user", or "unreadable_token" for a token with
   * no readable `sub`); a pull that stops so (PullStopped, see
   * PullOptions.user) stops it the same way. Absent, the channel is the
   * token's user's, whoever that is.
   */
  user?: string;
  /** The channel to hear pokes on; absent, LiveSync polls only (state polling, reason "no_channel"). */
  channel?: LiveChannel;
  /**
   * The app's pull, run to its end (pullEvents from the kept cursor, say,
   * applying and keeping each page): it resolves to the cursor reached,
   * which tells a stale poke from a new one. It may throw PullError or
   * PullStopped; it should end soon after signal aborts (stop()).
   */
  pull: (signal: AbortSignal) => Promise<string | undefined>;
  /** Called on every change of state. */
  onState?: (state: LiveState) => void;
  /** Called with a pull's failure that does not stop LiveSync (a 5xx run out, unreachable, a bug in pull): the next pull retries. */
  onError?: (err: unknown) => void;
  /** How often to pull while the channel is unavailable, in ms (default 10 000). */
  pollIntervalMs?: number;
  /**
   * How often to pull while live all the same, in ms (default 300 000, the
   * Event API's connection timeout): a missed poke costs this much latency,
   * never an event. Each such pull is a request of an idle device, so it is
   * rare: pokes are lost only when the poke function gives a batch up.
   */
  liveCheckMs?: number;
  /** How long a connection may take to be live (open, acknowledged, subscribed), in ms (default 15 000). */
  connectTimeoutMs?: number;
  /** The wait before each reconnection: full jitter up to initialMs (default 500) doubling to maxMs (default 30 000); random for tests. */
  reconnect?: { initialMs?: number; maxMs?: number; random?: () => number };
  /** The WebSocket class: globalThis.WebSocket by default; tests give a fake. */
  WebSocket?: typeof WebSocket;
  /** Whether the device is online: navigator.onLine by default (always, where there is none). */
  online?: () => boolean;
  /** Where "online" and "offline" events come from: the global scope (window, a worker's self) by default; none in Node.js. */
  events?: EventTarget;
}

/**
 * What LiveSync is doing:
 * - "connecting": started (or back online), the channel not live yet; a
 *   poll comes every pollIntervalMs meanwhile.
 * - "live": subscribed; each poke pulls, and a pull comes every liveCheckMs.
 * - "polling": pulling every pollIntervalMs because there is no channel
 *   ("no_channel": none given, or the user's id cannot be a channel
 *   segment) or it failed ("channel_unavailable": the socket closed, broke
 *   or timed out; "subscribe_refused": the channel refused the
 *   subscription). Reconnection goes on in the background, with backoff,
 *   and the state stays polling until the channel is live again.
 * - "offline": the device is offline: no socket, no pulls, until "online".
 * - "stopped": by stop() (or not started), or by a pull answered 401
 *   ("unauthorized": refresh the token, then start() again), 403
 *   ("forbidden") or 410 ("gone"); or by a token refused for the user
 *   ("wrong_user", "unreadable_token", see LiveSyncOptions.user): nothing
 *   was sent with it, no socket opened; `error` says why. Give the user's
 *   token, then start() again.
 */
export type LiveState =
  | { kind: "connecting" }
  | { kind: "live" }
  | { kind: "polling"; reason: PollReason }
  | { kind: "offline" }
  | { kind: "stopped"; reason: LiveStopReason; error?: string };

export type PollReason = "no_channel" | "channel_unavailable" | "subscribe_refused";
export type LiveStopReason = "stopped" | "unauthorized" | "forbidden" | "gone" | TokenRefusal;

/** The pulls' answers that no retry changes: they stop LiveSync. */
const STOPPING_STATUS: Record<number, LiveStopReason> = { 401: "unauthorized", 403: "forbidden", 410: "gone" };

/**
 * What AppSync Events allows in a channel segment: 1 to 50 letters, digits
 * and dashes, neither first nor last a dash (the protocol page's channel
 * pattern, see #connect).
 */
const SEGMENT = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,48}[A-Za-z0-9])?$/;

/** A sequence cursor: "p" and 16 lowercase hex digits; two of them order as strings. */
const SEQUENCE_CURSOR = /^p[0-9a-f]{16}$/;

/** The least wait before subscribing again after a refusal: 5 minutes. */
const REFUSED_RETRY_MS = 300_000;

/**
 * Calls one of the app's callbacks: whatever it throws is the app's, and
 * must not stop syncing (a pull loop that threw would never run again).
 */
function callApp<T>(fn: ((arg: T) => void) | undefined, arg: T): void {
  try {
    fn?.(arg);
  } catch {
    // the app's own failure; syncing goes on
  }
}

/** The keep-alive timeout when connection_ack names none: AppSync's 5 minutes. */
const DEFAULT_CONNECTION_TIMEOUT_MS = 300_000;

/**
 * Whether a poke at `poked` may bring events past `reached`, the cursor
 * the last pull reached. Cursors are opaque: only two sequence cursors are
 * compared, and anything else is taken for news.
 */
function isAfter(poked: string, reached: string | undefined): boolean {
  return reached === undefined || !SEQUENCE_CURSOR.test(poked) || !SEQUENCE_CURSOR.test(reached) || poked > reached;
}

/** One WebSocket connection and its subscription; replaced, never reused, on reconnection. */
interface Connection {
  readonly id: string; // the subscription's
  ws?: WebSocket;
  token?: string;
  timer?: ReturnType<typeof setTimeout>;
  acked: boolean;
  subscribed: boolean;
  keepAliveMs: number;
}

/**
 * Keeps a device's pulled events current: it hears "pokes" on the user's
 * AppSync Events channel and pulls on each, and pulls at an interval
 * whenever it cannot hear them. A poke carries no event data, only the
 * user's head: the pull, with its authorization, stays the only way to
 * read events, and a lost poke costs latency, never an event (a pull every
 * liveCheckMs, and one on every reconnection, find what it would have
 * told). Pulls run one at a time, and pokes that come while one runs make
 * one more pull at most, however many they are.
 */
export class LiveSync {
  readonly #o: LiveSyncOptions;
  readonly #online: () => boolean;
  readonly #events: EventTarget | undefined;
  readonly #backoff: Retrier;
  #state: LiveState = { kind: "stopped", reason: "stopped" };
  /** Increases on every start() and stop(): what an older run's callbacks find changed, they drop. */
  #run = 0;
  #abort = new AbortController();
  #conn: Connection | undefined;
  #failures = 0; // connections failed in a row, for the backoff
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #checkTimer: ReturnType<typeof setTimeout> | undefined;
  /** The cursor the last pull reached. */
  #cursor: string | undefined;
  /** The pull loop while it runs; #forced and #poked say whether it goes round once more. */
  #loop: Promise<void> | undefined;
  #forced = false;
  #poked: string | undefined;

  constructor(options: LiveSyncOptions) {
    this.#o = options;
    this.#online = options.online ?? (() => globalThis.navigator?.onLine !== false);
    this.#events = options.events ?? (typeof globalThis.addEventListener === "function" ? globalThis : undefined);
    this.#backoff = retrier({
      baseDelayMs: options.reconnect?.initialMs ?? 500,
      maxDelayMs: options.reconnect?.maxMs ?? 30_000,
      ...(options.reconnect?.random ? { random: options.reconnect.random } : {}),
    });
  }

  get state(): LiveState {
    return this.#state;
  }

  /** Connects (or polls, without a channel), or waits for "online" if the device is offline. Again after a stop, it starts afresh. */
  start(): void {
    if (this.#state.kind !== "stopped") {
      return;
    }
    this.#run++;
    this.#abort = new AbortController();
    this.#failures = 0;
    this.#events?.addEventListener("online", this.#onOnline);
    this.#events?.addEventListener("offline", this.#onOffline);
    if (this.#online()) {
      this.#begin();
    } else {
      this.#setState({ kind: "offline" });
    }
  }

  /** Closes the socket, drops every timer and listener, and aborts a running pull's signal. */
  stop(): void {
    this.#stop("stopped");
  }

  /**
   * Pulls now (after the running pull, if one runs) and resolves when that
   * pull has ended, whatever it came to (see onError and state). While
   * offline or stopped it resolves at once.
   */
  pullNow(): Promise<void> {
    this.#want();
    return this.#loop ?? Promise.resolve();
  }

  #stop(reason: LiveStopReason, error?: string): void {
    this.#run++;
    this.#abort.abort();
    this.#events?.removeEventListener("online", this.#onOnline);
    this.#events?.removeEventListener("offline", this.#onOffline);
    this.#pause();
    this.#setState(error === undefined ? { kind: "stopped", reason } : { kind: "stopped", reason, error });
  }

  /** Drops the connection and every timer, and forgets the pulls wanted. */
  #pause(): void {
    this.#disconnect();
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    clearTimeout(this.#checkTimer);
    this.#checkTimer = undefined;
    this.#forced = false;
    this.#poked = undefined;
  }

  #begin(): void {
    if (this.#o.channel === undefined) {
      this.#poll("no_channel");
      return;
    }
    this.#setState({ kind: "connecting" });
    void this.#connect();
  }

  readonly #onOffline = (): void => {
    if (this.#state.kind !== "stopped" && this.#state.kind !== "offline") {
      this.#pause();
      this.#setState({ kind: "offline" });
    }
  };

  readonly #onOnline = (): void => {
    if (this.#state.kind === "offline") {
      this.#failures = 0;
      this.#begin();
    }
  };

  #setState(s: LiveState): void {
    const was = this.#state;
    this.#state = s;
    if (was.kind !== s.kind) {
      this.#scheduleCheck(); // not on a new reason alone: failed reconnections must not put the next poll off
    }
    if (was.kind !== s.kind || ("reason" in was && "reason" in s && was.reason !== s.reason)) {
      callApp(this.#o.onState, s);
    }
  }

  /** Polls for `reason`; entering polling from another state, pulls at once: a poke may have been missed. */
  #poll(reason: PollReason): void {
    const entering = this.#state.kind !== "polling";
    this.#setState({ kind: "polling", reason });
    if (entering) {
      this.#want();
    }
  }

  /** The next pull of the interval: pollIntervalMs, or liveCheckMs while live; none while offline or stopped. */
  #scheduleCheck(): void {
    clearTimeout(this.#checkTimer);
    this.#checkTimer = undefined;
    const k = this.#state.kind;
    if (k === "offline" || k === "stopped") {
      return;
    }
    const ms = k === "live" ? (this.#o.liveCheckMs ?? 300_000) : (this.#o.pollIntervalMs ?? 10_000);
    this.#checkTimer = setTimeout(() => this.#want(), ms);
  }

  // Pulls.

  /**
   * Asks for a pull: at once if none runs, else one more after it, however
   * many ask meanwhile. A poke (its cursor given) asks only for events
   * past the cursor reached, so after the running pull it is dropped if
   * that pull went as far.
   */
  #want(poked?: string): void {
    const k = this.#state.kind;
    if (k === "offline" || k === "stopped") {
      return;
    }
    if (poked === undefined) {
      this.#forced = true;
    } else if (this.#poked === undefined || isAfter(poked, this.#poked)) {
      this.#poked = poked;
    }
    if (this.#loop === undefined && this.#due()) {
      this.#loop = this.#pullLoop();
    }
  }

  /** Whether a pull is wanted; consumes the wish. */
  #due(): boolean {
    const due = this.#forced || (this.#poked !== undefined && isAfter(this.#poked, this.#cursor));
    this.#forced = false;
    this.#poked = undefined;
    const k = this.#state.kind;
    return due && k !== "offline" && k !== "stopped";
  }

  async #pullLoop(): Promise<void> {
    try {
      do {
        await this.#pullOnce();
      } while (this.#due());
    } finally {
      // Here, with no await since #due(): a #want() from now on starts a new loop.
      this.#loop = undefined;
    }
  }

  async #pullOnce(): Promise<void> {
    const run = this.#run;
    try {
      const cursor = await this.#o.pull(this.#abort.signal);
      if (run === this.#run && cursor !== undefined) {
        this.#cursor = cursor;
      }
    } catch (err) {
      if (run === this.#run) {
        this.#pullFailed(err);
      }
    }
    if (run === this.#run) {
      this.#scheduleCheck(); // the interval counts from the last pull
    }
  }

  #pullFailed(err: unknown): void {
    const stopping = err instanceof PullError ? STOPPING_STATUS[err.status] : undefined;
    if (stopping !== undefined) {
      this.#stop(stopping);
    } else if (err instanceof PullStopped && (err.reason === "wrong_user" || err.reason === "unreadable_token")) {
      this.#stop(err.reason, err.lastError);
    } else if (err instanceof PullStopped && err.reason === "offline" && !this.#online()) {
      this.#onOffline();
    } else {
      callApp(this.#o.onError, err);
    }
  }

  // The channel.

  /**
   * Opens a connection to the user's channel and subscribes, by the
   * AppSync Events WebSocket protocol: the authorization (the API's JWT,
   * for the channel's HTTP host, which validates the connection) goes in
   * a subprotocol "header-" + base64url(JSON) without padding, beside
   * "aws-appsync-event-ws"; then connection_init, connection_ack with the
   * keep-alive timeout (5 minutes; a "ka" comes every 60 s), subscribe
   * with the authorization again, and subscribe_success or
   * subscribe_error. "data" messages follow: a poke, the user's head, in
   * `event`. The protocol page shows `event` as an array of JSON strings,
   * AWS's wscat tutorial and Amplify's tests as one JSON string: both are
   * read. `error` and `connection_error` (in Amplify's tests, not on the
   * page) break the connection. A connection lasts 24 hours at most: the
   * close that ends it reconnects like any other.
   * https://docs.aws.amazon.com/appsync/latest/eventapi/event-api-websocket-protocol.html
   * https://docs.aws.amazon.com/appsync/latest/eventapi/create-wscat-clone.html
   */
  async #connect(): Promise<void> {
    const channel = this.#o.channel;
    if (channel === undefined) {
      return;
    }
    const conn: Connection = { id: uuidv4(), acked: false, subscribed: false, keepAliveMs: DEFAULT_CONNECTION_TIMEOUT_MS };
    this.#conn = conn;
    let checked: Awaited<ReturnType<typeof tokenFor>>;
    try {
      checked = await tokenFor(this.#o.getToken, this.#o.user);
    } catch {
      if (this.#conn === conn) {
        this.#broken("channel_unavailable");
      }
      return;
    }
    if (this.#conn !== conn) {
      return; // stopped, offline or replaced meanwhile
    }
    if ("refused" in checked) {
      this.#stop(checked.refused, checked.error); // another user's token: no socket, no subscription
      return;
    }
    const { token } = checked;
    const sub = tokenSubject(token);
    const path = channel.space !== undefined ? `/spaces/${channel.space}` : `/${channel.namespace ?? "users"}/${sub}`;
    if (sub === undefined || (channel.space === undefined ? !SEGMENT.test(sub) : !SEGMENT.test(channel.space))) {
      this.#conn = undefined;
      this.#poll("no_channel"); // for good: the user is the same on every connection
      return;
    }
    const WS = this.#o.WebSocket ?? globalThis.WebSocket;
    let ws: WebSocket;
    try {
      ws = new WS(channel.realtimeUrl, ["aws-appsync-event-ws", `header-${base64url(JSON.stringify(authorization(channel, token)))}`]);
    } catch {
      this.#broken("channel_unavailable"); // a malformed realtimeUrl: retried with backoff, polled meanwhile
      return;
    }
    conn.ws = ws;
    conn.token = token;
    conn.timer = setTimeout(() => {
      if (this.#conn === conn) {
        this.#broken("channel_unavailable");
      }
    }, this.#o.connectTimeoutMs ?? 15_000);
    ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init" }));
    ws.onmessage = (m: MessageEvent) => {
      if (this.#conn === conn) {
        this.#message(conn, channel, path, m.data);
      }
    };
    const broken = () => {
      if (this.#conn === conn) {
        this.#broken("channel_unavailable");
      }
    };
    ws.onerror = broken;
    ws.onclose = broken;
  }

  #message(conn: Connection, channel: LiveChannel, path: string, data: unknown): void {
    let m: { type?: unknown; id?: unknown; event?: unknown; connectionTimeoutMs?: unknown };
    try {
      m = JSON.parse(String(data));
    } catch {
      return; // not the protocol's: ignored, like an unknown type
    }
    if (conn.subscribed) {
      this.#keepAlive(conn); // any message shows the connection alive
    }
    switch (m?.type) {
      case "connection_ack": {
        if (conn.acked) {
          return;
        }
        conn.acked = true;
        if (typeof m.connectionTimeoutMs === "number" && m.connectionTimeoutMs > 0) {
          conn.keepAliveMs = m.connectionTimeoutMs;
        }
        conn.ws?.send(
          JSON.stringify({
            type: "subscribe",
            id: conn.id,
            channel: path,
            authorization: authorization(channel, conn.token ?? ""),
          }),
        );
        return;
      }
      case "subscribe_success":
        if (m.id === conn.id && !conn.subscribed) {
          conn.subscribed = true;
          this.#failures = 0;
          this.#keepAlive(conn);
          this.#setState({ kind: "live" });
          this.#want(); // what was committed while no poke could come
        }
        return;
      case "subscribe_error":
        if (m.id === conn.id) {
          this.#broken("subscribe_refused");
        }
        return;
      case "data":
        if (m.id === conn.id && conn.subscribed) {
          this.#poke(m.event);
        }
        return;
      case "broadcast_error":
        if (m.id === conn.id && conn.subscribed) {
          this.#want(); // a message for us failed: it may have been a poke
        }
        return;
      case "error":
      case "connection_error":
        this.#broken("channel_unavailable");
        return;
      default:
        return; // "ka", and anything new
    }
  }

  /**
   * A poke: its cursor asks for a pull past it; a poke without one (or
   * unreadable), for a pull all the same. `event` is one JSON string, or
   * an array of them (see #connect).
   */
  #poke(event: unknown): void {
    for (const e of Array.isArray(event) ? event : [event]) {
      this.#want(pokedCursor(e));
    }
  }

  /** Re-arms the keep-alive timeout: nothing within it, and the connection is taken for dead. */
  #keepAlive(conn: Connection): void {
    clearTimeout(conn.timer);
    conn.timer = setTimeout(() => {
      if (this.#conn === conn) {
        this.#broken("channel_unavailable");
      }
    }, conn.keepAliveMs);
  }

  /**
   * The connection failed: poll meanwhile, and connect again after the
   * backoff; after a refused subscription, not before REFUSED_RETRY_MS (a
   * refusal lasts until the token or the handler changes, and each try is
   * a connection, a subscription and a handler run, all billed).
   */
  #broken(reason: PollReason): void {
    this.#disconnect();
    this.#poll(reason);
    clearTimeout(this.#reconnectTimer);
    this.#failures++;
    const wait = this.#backoff.delay(this.#failures);
    this.#reconnectTimer = setTimeout(
      () => {
        this.#reconnectTimer = undefined;
        void this.#connect();
      },
      reason === "subscribe_refused" ? Math.max(wait, REFUSED_RETRY_MS) : wait,
    );
  }

  #disconnect(): void {
    const conn = this.#conn;
    this.#conn = undefined;
    if (conn === undefined) {
      return;
    }
    clearTimeout(conn.timer);
    const ws = conn.ws;
    if (ws !== undefined) {
      ws.onopen = null;
      ws.onmessage = null;
      ws.onerror = null;
      ws.onclose = null;
      try {
        ws.close(1000);
      } catch {
        // already closed, or closing
      }
    }
  }
}

/** The cursor of a poke's event (a JSON string of {"cursor": …}); undefined if it has none. */
function pokedCursor(event: unknown): string | undefined {
  let body: unknown = event;
  if (typeof event === "string") {
    try {
      body = JSON.parse(event);
    } catch {
      return undefined;
    }
  }
  const cursor = typeof body === "object" && body !== null ? (body as { cursor?: unknown }).cursor : undefined;
  return typeof cursor === "string" ? cursor : undefined;
}

/** The authorization AppSync Events takes from a JWT (Lambda or OIDC authorization): the HTTP host and the token. */
function authorization(channel: LiveChannel, token: string): { host: string; Authorization: string } {
  return { host: channel.httpHost, Authorization: token };
}

/** base64url without padding (RFC 4648, 5), of the text's UTF-8. */
function base64url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) {
    binary += String.fromCharCode(b);
  }
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
