import assert from "node:assert/strict";
import { afterEach, describe, it, mock } from "node:test";
import { type LiveState, LiveSync, type LiveSyncOptions } from "../src/live.js";
import { PullError, PullStopped } from "../src/pull.js";
import { TOKEN, USER, UUID_V4 } from "./helpers.js";
import { localToken } from "./server.js";

const CHANNEL = {
  realtimeUrl: "wss://xyz.appsync-realtime-api.us-east-1.amazonaws.com/event/realtime",
  httpHost: "xyz.appsync-api.us-east-1.amazonaws.com",
};

/** A sequence cursor of position n. */
const p = (n: number) => `p${n.toString(16).padStart(16, "0")}`;

/** A WebSocket the test plays the server of: it records what the client sends, and delivers what the test says. */
class FakeSocket {
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  readonly sent: Record<string, unknown>[] = [];
  closed = false;

  constructor(
    readonly url: string,
    readonly protocols: string[],
  ) {}

  send(data: string) {
    assert.ok(!this.closed, "sent on a closed socket");
    this.sent.push(JSON.parse(data));
  }

  close() {
    this.closed = true;
  }

  open() {
    this.onopen?.({});
  }

  deliver(message: unknown) {
    this.onmessage?.({ data: JSON.stringify(message) });
  }

  /** The server (or the network) closes the connection. */
  drop() {
    this.closed = true;
    this.onclose?.({ code: 1006 });
  }

  /** The subscribe message the client sent. */
  subscribe() {
    const s = this.sent.find((m) => m.type === "subscribe");
    assert.ok(s, "no subscribe sent");
    return s as { id: string; channel: string; authorization: unknown };
  }

  /** The whole handshake, up to subscribe_success. */
  handshake(connectionTimeoutMs = 300_000) {
    this.open();
    this.deliver({ type: "connection_ack", connectionTimeoutMs });
    this.deliver({ type: "subscribe_success", id: this.subscribe().id });
  }

  poke(cursor: unknown) {
    this.deliver({ type: "data", id: this.subscribe().id, event: JSON.stringify({ cursor }) });
  }
}

/** A WebSocket class recording every socket made. */
function fakeWebSockets() {
  const sockets: FakeSocket[] = [];
  class WS extends FakeSocket {
    constructor(url: string, protocols: string[]) {
      super(url, protocols);
      sockets.push(this);
    }
  }
  return {
    WebSocket: WS as unknown as typeof WebSocket,
    sockets,
    last(): FakeSocket {
      const s = sockets.at(-1);
      assert.ok(s, "no socket made");
      return s;
    },
  };
}

/**
 * The app's pull: it reaches `head` (which the test moves), counting calls
 * and pulls at once. hold() makes the next pulls wait until release().
 */
function fakePull() {
  const f = {
    head: p(1),
    calls: 0,
    inFlight: 0,
    maxInFlight: 0,
    signals: [] as AbortSignal[],
    fail: undefined as unknown,
    gate: undefined as Promise<void> | undefined,
    open: () => {},
    hold() {
      f.gate = new Promise((r) => {
        f.open = r;
      });
    },
    release() {
      f.gate = undefined;
      f.open();
    },
    pull: async (signal: AbortSignal): Promise<string | undefined> => {
      f.calls++;
      f.signals.push(signal);
      f.inFlight++;
      f.maxInFlight = Math.max(f.maxInFlight, f.inFlight);
      try {
        await f.gate;
        if (f.fail !== undefined) {
          throw f.fail;
        }
        return f.head;
      } finally {
        f.inFlight--;
      }
    },
  };
  return f;
}

/** A LiveSync on fakes, started, its first connection made; every one made is stopped after its test. */
async function live(options: Partial<LiveSyncOptions> = {}) {
  const ws = fakeWebSockets();
  const pull = fakePull();
  const events = new EventTarget();
  const net = { online: true };
  const states: LiveState[] = [];
  const sync = new LiveSync({
    getToken: () => TOKEN,
    channel: CHANNEL,
    pull: pull.pull,
    onState: (s) => states.push(s),
    pollIntervalMs: 60_000,
    liveCheckMs: 60_000,
    reconnect: { initialMs: 5, maxMs: 10 },
    WebSocket: ws.WebSocket,
    online: () => net.online,
    events,
    ...options,
  });
  started.push(sync);
  sync.start();
  await settle(); // getToken answered
  return { sync, ws, pull, events, net, states, kinds: () => states.map((s) => ("reason" in s ? `${s.kind}:${s.reason}` : s.kind)) };
}

const started: LiveSync[] = [];
afterEach(() => {
  for (const s of started.splice(0)) {
    s.stop();
  }
});

/** Waits until cond holds, or fails after ms. */
async function until(cond: () => boolean, what: string, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) {
      assert.fail(`timed out waiting for: ${what}`);
    }
    await new Promise((r) => setTimeout(r, 2));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Lets pending promise callbacks run (a pull resolving, the loop going round). */
const settle = () => new Promise((r) => setImmediate(r));

describe("LiveSync", () => {
  it("connects with the token in the subprotocol, sends connection_init, and subscribes to the user's channel with the authorization", async () => {
    const t = await live({ channel: { ...CHANNEL, namespace: "people" } });
    const s = t.ws.last();
    assert.equal(s.url, CHANNEL.realtimeUrl);
    assert.equal(s.protocols[0], "aws-appsync-event-ws");
    const header = s.protocols[1] ?? "";
    assert.match(header, /^header-[A-Za-z0-9_-]+$/, "base64url, no padding");
    assert.deepEqual(JSON.parse(Buffer.from(header.slice("header-".length), "base64url").toString()), {
      host: CHANNEL.httpHost,
      Authorization: TOKEN,
    });
    assert.deepEqual(s.sent, [], "nothing before open");
    s.open();
    assert.deepEqual(s.sent, [{ type: "connection_init" }]);
    s.deliver({ type: "connection_ack", connectionTimeoutMs: 300_000 });
    const sub = s.subscribe();
    assert.match(sub.id, UUID_V4);
    assert.equal(sub.channel, `/people/${USER}`);
    assert.deepEqual(sub.authorization, { host: CHANNEL.httpHost, Authorization: TOKEN });
    assert.deepEqual(t.kinds(), ["connecting"]);
    assert.equal(t.sync.state.kind, "connecting");
  });

  it("subscribes to a space's channel, whatever the sub, and goes live on it", async () => {
    const space = "5d0c7f2a-8e41-4b6d-9f3a-1c2b7e6d4a90";
    const t = await live({ channel: { ...CHANNEL, space }, getToken: () => localToken("auth0|not-a-segment") });
    const s = t.ws.last();
    s.handshake();
    assert.equal(s.subscribe().channel, `/spaces/${space}`);
    assert.equal(t.sync.state.kind, "live");
  });

  it("pulls on subscribe_success, not before, and goes live", async () => {
    const t = await live();
    const s = t.ws.last();
    s.open();
    s.deliver({ type: "connection_ack", connectionTimeoutMs: 300_000 });
    s.deliver({ type: "subscribe_success", id: "another-subscription" });
    await settle();
    assert.equal(t.pull.calls, 0, "no pull before the subscription is live");
    s.deliver({ type: "subscribe_success", id: s.subscribe().id });
    await until(() => t.pull.calls === 1, "the pull on subscribe");
    assert.deepEqual(t.kinds(), ["connecting", "live"]);
    assert.deepEqual(t.sync.state, { kind: "live" });
  });

  describe("on a poke", () => {
    // The pull on subscribe reaches p(5); then one poke.
    const cases: [string, unknown, number][] = [
      ["after the cursor reached", p(6), 1],
      ["far after it", p(0x1_0000_0000), 1],
      ["at the cursor reached", p(5), 0],
      ["before it", p(4), 0],
      ["an opaque cursor", "c_abc", 1],
      ["no cursor", undefined, 1],
      ["a cursor not a string", 7, 1],
      ["an uppercase hex cursor (no sequence cursor, so opaque)", "p000000000000000A", 1],
    ];
    for (const [name, cursor, pulls] of cases) {
      it(`${name}: ${pulls} pull`, async () => {
        const t = await live();
        t.pull.head = p(5);
        t.ws.last().handshake();
        await until(() => t.pull.calls === 1, "the pull on subscribe");
        await settle();
        t.ws.last().poke(cursor);
        await settle();
        await sleep(5);
        assert.equal(t.pull.calls - 1, pulls);
      });
    }

    it("with an event that is no JSON: a pull all the same; a data message of another subscription: none", async () => {
      const t = await live();
      const s = t.ws.last();
      s.handshake();
      await until(() => t.pull.calls === 1, "the pull on subscribe");
      await settle();
      s.deliver({ type: "data", id: "another-subscription", event: JSON.stringify({ cursor: p(9) }) });
      await sleep(5);
      assert.equal(t.pull.calls, 1);
      s.deliver({ type: "data", id: s.subscribe().id, event: "{not json" });
      await until(() => t.pull.calls === 2, "a pull on the garbled poke");
    });

    it("with an event that is an array of JSON strings (the protocol page's form): pulls if any is news", async () => {
      const t = await live();
      const s = t.ws.last();
      t.pull.head = p(5);
      s.handshake();
      await until(() => t.pull.calls === 1, "the pull on subscribe");
      await settle();
      s.deliver({ type: "data", id: s.subscribe().id, event: [JSON.stringify({ cursor: p(4) }), JSON.stringify({ cursor: p(5) })] });
      await sleep(5);
      assert.equal(t.pull.calls, 1, "both stale");
      s.deliver({ type: "data", id: s.subscribe().id, event: [JSON.stringify({ cursor: p(3) }), JSON.stringify({ cursor: p(6) })] });
      await until(() => t.pull.calls === 2, "a pull for p(6)");
    });

    it("a broadcast_error of the subscription pulls: it may have been a poke", async () => {
      const t = await live();
      const s = t.ws.last();
      s.handshake();
      await until(() => t.pull.calls === 1, "the pull on subscribe");
      await settle();
      s.deliver({ type: "broadcast_error", id: s.subscribe().id, errors: [{ errorType: "MessageProcessingError" }] });
      await until(() => t.pull.calls === 2, "a pull");
      assert.equal(t.sync.state.kind, "live");
    });
  });

  it("coalesces pokes that come during a pull into one more pull", async () => {
    const t = await live();
    const s = t.ws.last();
    t.pull.hold();
    s.handshake();
    await until(() => t.pull.calls === 1, "the pull on subscribe");
    for (let i = 2; i <= 6; i++) {
      s.poke(p(i));
    }
    await sleep(5);
    assert.equal(t.pull.calls, 1, "no pull while one runs");
    t.pull.release(); // it reached p(1): the pokes say there is more
    await until(() => t.pull.calls === 2, "one more pull");
    await sleep(10);
    assert.equal(t.pull.calls, 2, "exactly one more, for five pokes");
    assert.equal(t.pull.maxInFlight, 1, "one pull at a time");

    // Pokes during a pull that goes as far as they say: no pull after it.
    t.pull.hold();
    s.poke(p(7));
    await until(() => t.pull.calls === 3, "the pull on the poke");
    s.poke(p(8));
    s.poke(p(9));
    t.pull.head = p(9);
    t.pull.release();
    await sleep(10);
    assert.equal(t.pull.calls, 3, "the running pull reached p(9): nothing more to pull");
  });

  it("pullNow pulls after the running pull and resolves when it has ended", async () => {
    const t = await live({ channel: undefined });
    await until(() => t.pull.calls === 1, "the first poll");
    await settle();
    t.pull.hold();
    const first = t.sync.pullNow();
    const second = t.sync.pullNow();
    assert.equal(t.pull.calls, 2);
    t.pull.release();
    await Promise.all([first, second]);
    assert.equal(t.pull.calls, 3, "the second ran after the first, coalesced with nothing else");
    assert.equal(t.pull.maxInFlight, 1);
  });

  it("reconnects with exponential full-jitter backoff, reset after a subscribe", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const t = await live({ reconnect: { initialMs: 100, maxMs: 400, random: () => 1 } });
      // Each failure waits twice as long, up to maxMs (random 1: the whole cap).
      for (const wait of [100, 200, 400, 400]) {
        const before = t.ws.sockets.length;
        t.ws.last().drop();
        mock.timers.tick(wait - 1);
        await settle();
        assert.equal(t.ws.sockets.length, before, `not before ${wait} ms`);
        mock.timers.tick(1);
        await settle();
        assert.equal(t.ws.sockets.length, before + 1, `after ${wait} ms`);
      }
      assert.equal(t.sync.state.kind, "polling");
      t.ws.last().handshake();
      await settle();
      assert.equal(t.sync.state.kind, "live");
      const before = t.ws.sockets.length;
      t.ws.last().drop();
      mock.timers.tick(100);
      await settle();
      assert.equal(t.ws.sockets.length, before + 1, "back to initialMs after a subscribe");
      assert.deepEqual(t.kinds(), ["connecting", "polling:channel_unavailable", "live", "polling:channel_unavailable"]);
    } finally {
      mock.timers.reset();
    }
  });

  it("polls while the channel is unavailable and stops polling once live", async () => {
    const t = await live({ pollIntervalMs: 15 });
    await until(() => t.pull.calls >= 3, "polls while connecting");
    t.ws.last().handshake();
    await settle();
    const atLive = t.pull.calls;
    await sleep(80);
    assert.ok(t.pull.calls - atLive <= 2, `no polls while live (${t.pull.calls - atLive} pulls, the subscribe's and one running)`);
    t.ws.last().drop();
    await until(() => t.sync.state.kind === "polling", "polling after the close");
    const atDrop = t.pull.calls;
    await until(() => t.pull.calls >= atDrop + 3, "polls after the close", 500);
  });

  it("pulls every liveCheckMs while live", async () => {
    const t = await live({ liveCheckMs: 20 });
    t.ws.last().handshake();
    await until(() => t.pull.calls >= 4, "live checks");
    assert.equal(t.sync.state.kind, "live");
    assert.equal(t.ws.sockets.length, 1);
  });

  it("offline closes the socket and stops pulling; online connects again and pulls", async () => {
    const t = await live({ pollIntervalMs: 10 });
    const first = t.ws.last();
    first.handshake();
    await until(() => t.pull.calls === 1, "the pull on subscribe");
    t.net.online = false;
    t.events.dispatchEvent(new Event("offline"));
    assert.ok(first.closed, "the socket is closed");
    assert.deepEqual(t.sync.state, { kind: "offline" });
    const pulls = t.pull.calls;
    await sleep(60);
    assert.equal(t.pull.calls, pulls, "no poll while offline");
    assert.equal(t.ws.sockets.length, 1, "no connection while offline");

    t.net.online = true;
    t.events.dispatchEvent(new Event("online"));
    await settle();
    assert.equal(t.ws.sockets.length, 2, "connects at once");
    assert.equal(t.sync.state.kind, "connecting");
    t.ws.last().handshake();
    await until(() => t.pull.calls >= pulls + 1, "the pull on subscribe (a poll may come first, while connecting)");
    assert.deepEqual(t.kinds(), ["connecting", "live", "offline", "connecting", "live"]);
  });

  it("starts offline when the device is, and a pull stopped offline takes it offline", async () => {
    const t = await live({ online: () => false });
    assert.deepEqual(t.sync.state, { kind: "offline" });
    assert.equal(t.ws.sockets.length, 0);

    const u = await live();
    u.ws.last().handshake();
    await until(() => u.pull.calls === 1, "the pull on subscribe");
    await settle();
    u.pull.fail = new PullStopped("offline", "the browser is offline");
    u.net.online = false;
    u.ws.last().poke(p(2));
    await until(() => u.sync.state.kind === "offline", "offline");
    assert.ok(u.ws.last().closed);
  });

  it("subscribe_error: polls with reason subscribe_refused, and subscribes again only after 5 minutes", async () => {
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const t = await live({ reconnect: { initialMs: 100, maxMs: 400, random: () => 1 } });
      const s = t.ws.last();
      s.open();
      s.deliver({ type: "connection_ack", connectionTimeoutMs: 300_000 });
      s.deliver({ type: "subscribe_error", id: s.subscribe().id, errors: [{ errorType: "UnauthorizedException", message: "no" }] });
      assert.deepEqual(t.sync.state, { kind: "polling", reason: "subscribe_refused" });
      assert.ok(s.closed);
      await settle();
      assert.equal(t.pull.calls, 1, "a pull on falling back to polling");
      // A refusal is not retried at the backoff's pace (400 ms here): each
      // try is billed, and only a new token or handler changes the answer.
      mock.timers.tick(299_999);
      await settle();
      assert.equal(t.ws.sockets.length, 1, "no new connection before 5 minutes");
      mock.timers.tick(1);
      await settle();
      assert.equal(t.ws.sockets.length, 2, "a new connection after 5 minutes");
      t.ws.last().handshake();
      assert.equal(t.sync.state.kind, "live");
    } finally {
      mock.timers.reset();
    }
  });

  it("an onState or onError that throws stops nothing: pulls go on", async () => {
    const t = await live({
      onState: () => {
        throw new Error("the app's onState");
      },
      onError: () => {
        throw new Error("the app's onError");
      },
    });
    t.ws.last().handshake();
    await until(() => t.pull.calls === 1, "the pull on subscribe");
    t.pull.fail = new Error("a 503 run out"); // reported to onError, which throws
    await t.sync.pullNow();
    t.pull.fail = undefined;
    await t.sync.pullNow();
    assert.equal(t.pull.calls, 3, "the pull after the failure ran: the loop survived the app's throws");
    assert.equal(t.sync.state.kind, "live");
  });

  for (const type of ["error", "connection_error"]) {
    it(`a message of type ${type} breaks the connection: polling, then a new one`, async () => {
      const t = await live();
      t.ws.last().handshake();
      t.ws.last().deliver({ type, errors: [{ errorType: "x" }] });
      assert.deepEqual(t.sync.state, { kind: "polling", reason: "channel_unavailable" });
      assert.ok(t.ws.sockets[0]?.closed);
      await until(() => t.ws.sockets.length === 2, "a new connection");
    });
  }

  describe("without a channel for the user: polls only, with reason no_channel", () => {
    const cases: [string, Partial<LiveSyncOptions>][] = [
      ["no channel given", { channel: undefined }],
      ["a sub with a character no segment takes", { getToken: () => localToken("auth0|123") }],
      ["an email sub", { getToken: () => localToken("someone@example.com") }],
      ["a sub of 51 characters", { getToken: () => localToken("a".repeat(51)) }],
      ["a sub beginning with a dash", { getToken: () => localToken("-abc") }],
      ["a sub ending with a dash", { getToken: () => localToken("abc-") }],
      ["a token without sub", { getToken: () => "opaque-access-token" }],
    ];
    for (const [name, options] of cases) {
      it(name, async () => {
        const t = await live({ pollIntervalMs: 15, ...options });
        await until(() => t.pull.calls >= 3, "polls");
        assert.deepEqual(t.sync.state, { kind: "polling", reason: "no_channel" });
        assert.equal(t.ws.sockets.length, 0, "no socket");
      });
    }

    it("a sub of 50 letters, digits and dashes has one", async () => {
      const t = await live({ getToken: async () => localToken(`A-9${"b".repeat(47)}`) });
      await until(() => t.ws.sockets.length === 1, "a socket");
      t.ws.last().open();
      t.ws.last().deliver({ type: "connection_ack" });
      assert.equal(t.ws.last().subscribe().channel, `/users/A-9${"b".repeat(47)}`);
    });
  });

  describe("for a user (options.user)", () => {
    const cases: [string, string, string][] = [
      ["another user's token", localToken("someone-else"), "wrong_user"],
      ["a token without sub", "opaque-access-token", "unreadable_token"],
    ];
    for (const [name, token, reason] of cases) {
      it(`${name}: stopped (${reason}) before any socket, no pull, on a space's channel too`, async () => {
        for (const space of [undefined, "space-1"]) {
          const t = await live({ user: USER, getToken: () => token, channel: { ...CHANNEL, space }, pollIntervalMs: 10 });
          await until(() => t.sync.state.kind === "stopped", "stopped");
          assert.equal(t.sync.state.kind === "stopped" && t.sync.state.reason, reason);
          await sleep(30);
          assert.equal(t.ws.sockets.length, 0, "no socket");
          assert.equal(t.pull.calls, 0, "no pull");
        }
      });
    }

    it("the user's own token: their channel", async () => {
      const t = await live({ user: USER });
      t.ws.last().open();
      t.ws.last().deliver({ type: "connection_ack" });
      assert.equal(t.ws.last().subscribe().channel, `/users/${USER}`);
    });
  });

  it("takes a connection that hears nothing for connectionTimeoutMs for dead, and connects again", async () => {
    const t = await live();
    const first = t.ws.last();
    first.handshake(40);
    for (let i = 0; i < 6; i++) {
      await sleep(15);
      first.deliver({ type: "ka" });
    }
    assert.ok(!first.closed, "keep-alives keep it (90 ms, past the timeout)");
    assert.equal(t.sync.state.kind, "live");
    await until(() => first.closed, "closed after 40 ms of silence", 500);
    assert.equal(t.sync.state.kind, "polling");
    await until(() => t.ws.sockets.length === 2, "a new connection");
  });

  it("gives up a connection not live within connectTimeoutMs", async () => {
    const t = await live({ connectTimeoutMs: 30 });
    const first = t.ws.last();
    first.open();
    await sleep(10);
    assert.ok(!first.closed);
    await until(() => first.closed, "closed", 500);
    assert.deepEqual(t.sync.state, { kind: "polling", reason: "channel_unavailable" });
    await until(() => t.ws.sockets.length === 2, "a new connection");
  });

  describe("a pull answered", () => {
    const cases: [number, string][] = [
      [401, "unauthorized"],
      [403, "forbidden"],
      [410, "gone"],
    ];
    for (const [status, reason] of cases) {
      it(`${status}: stopped (${reason}), the socket closed, no more pulls or connections`, async () => {
        const t = await live({ pollIntervalMs: 10, liveCheckMs: 10 });
        t.pull.fail = new PullError(status, { error: "X", message: "x" } as never);
        t.ws.last().handshake();
        await until(() => t.sync.state.kind === "stopped", "stopped");
        assert.deepEqual(t.sync.state, { kind: "stopped", reason });
        assert.ok(t.ws.last().closed);
        await sleep(40);
        assert.equal(t.pull.calls, 1);
        assert.equal(t.ws.sockets.length, 1);
        assert.deepEqual(t.kinds(), ["connecting", "live", `stopped:${reason}`]);
      });
    }

    it("PullStopped wrong_user (a token refused for the user): stopped, with why, no more pulls", async () => {
      const t = await live({ pollIntervalMs: 10, liveCheckMs: 10 });
      t.pull.fail = new PullStopped("wrong_user", "another's");
      t.ws.last().handshake();
      await until(() => t.sync.state.kind === "stopped", "stopped");
      assert.deepEqual(t.sync.state, { kind: "stopped", reason: "wrong_user", error: "another's" });
      await sleep(40);
      assert.equal(t.pull.calls, 1);
    });

    it("500, or any other failure: reported, and the next poke pulls again", async () => {
      const errors: unknown[] = [];
      const t = await live({ onError: (e) => errors.push(e) });
      t.pull.fail = new PullError(500, { error: "INTERNAL", message: "x" } as never);
      t.ws.last().handshake();
      await until(() => errors.length === 1, "the error reported");
      t.pull.fail = new PullStopped("unreachable");
      t.ws.last().poke(p(3));
      await until(() => errors.length === 2, "the second reported");
      t.pull.fail = undefined;
      t.ws.last().poke(p(4));
      await until(() => t.pull.calls === 3, "a third pull");
      assert.equal(t.sync.state.kind, "live");
    });
  });

  it("stop() aborts the running pull, closes the socket, and leaves no timer; start() begins again", async () => {
    const t = await live({ pollIntervalMs: 10, liveCheckMs: 10 });
    t.pull.hold();
    t.ws.last().handshake();
    await until(() => t.pull.calls === 1, "the pull on subscribe");
    t.sync.stop();
    assert.deepEqual(t.sync.state, { kind: "stopped", reason: "stopped" });
    assert.ok(t.pull.signals[0]?.aborted, "the pull's signal aborted");
    assert.ok(t.ws.last().closed);
    t.pull.release();
    t.events.dispatchEvent(new Event("online"));
    t.ws.last().poke(p(9)); // a late message on the closed socket
    await sleep(40);
    assert.equal(t.pull.calls, 1, "nothing after stop");
    assert.equal(t.ws.sockets.length, 1);
    assert.deepEqual(t.kinds(), ["connecting", "live", "stopped:stopped"]);

    t.sync.start();
    await settle();
    assert.equal(t.ws.sockets.length, 2);
    t.ws.last().handshake();
    await until(() => t.pull.calls === 2, "the pull on subscribe");
    assert.ok(!t.pull.signals[1]?.aborted, "a new signal");
  });
});
