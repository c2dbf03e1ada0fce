import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** The faults the proxy injects. */
export type FaultKind = "reset_before_forwarding" | "drop_after_answer" | "delay_past_timeout" | "answer_503";

export interface FaultProxyOptions {
  /** Where to forward: http://host:port */
  upstream: string;
  seed: number;
  /** Probability of each fault per request. */
  rates: Record<FaultKind, number>;
  /** How long delay_past_timeout holds a request before forwarding it. */
  delayMs: number;
  /** Faults forced on the first requests of each of these routes ("METHOD /path"), in order, whatever the draw. */
  first?: Record<string, FaultKind[]>;
  /** Added to every round trip, as a mobile network's latency is. */
  latencyMs?: number;
}

/** mulberry32: a small seeded PRNG, so a run's faults can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * An HTTP proxy in front of the service that fails like a mobile network
 * and a gateway do: it resets the connection before forwarding, forwards and
 * then drops the answer (the server acted, the client never hears), holds a
 * request past the client's timeout before forwarding it, or answers 503
 * with Retry-After itself.
 */
export class FaultProxy {
  readonly injected: Record<FaultKind, number> = {
    reset_before_forwarding: 0,
    drop_after_answer: 0,
    delay_past_timeout: 0,
    answer_503: 0,
  };
  forwarded = 0;
  /** Requests received, by "METHOD /path", whatever befell them. */
  readonly received = new Map<string, number>();
  /** Requests received and not yet answered or dropped. */
  inFlight = 0;
  /** The faults injected on each path. */
  readonly injectedOn = new Map<string, Partial<Record<FaultKind, number>>>();
  readonly #holds = new Map<string, { n: number; held: () => void; released: Promise<void>; forwarded: () => void }>();
  readonly #o: FaultProxyOptions;
  readonly #random: () => number;
  readonly #server: Server;

  private constructor(o: FaultProxyOptions) {
    this.#o = o;
    this.#random = prng(o.seed);
    // A failed forward (the upstream gone at the end of a test) is a reset,
    // like any other lost connection.
    this.#server = createServer((req, res) => this.#handle(req, res).catch(() => req.socket.destroy()));
  }

  static async start(o: FaultProxyOptions): Promise<FaultProxy> {
    const p = new FaultProxy(o);
    await new Promise<void>((resolve) => p.#server.listen(0, "127.0.0.1", resolve));
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  /**
   * Holds the nth request of route ("METHOD /path") on arrival, before it
   * is forwarded, with no fault: held resolves when it is held, and
   * release() lets it go on, resolving once it has been forwarded and
   * answered (or its answer dropped, if its client is gone).
   */
  hold(route: string, n: number): { held: Promise<void>; release: () => Promise<void> } {
    let held = () => {};
    let release = () => {};
    let forwarded = () => {};
    const heldP = new Promise<void>((r) => {
      held = r;
    });
    const released = new Promise<void>((r) => {
      release = r;
    });
    const forwardedP = new Promise<void>((r) => {
      forwarded = r;
    });
    this.#holds.set(route, { n, held, released, forwarded });
    return {
      held: heldP,
      release: () => {
        release();
        return forwardedP;
      },
    };
  }

  #pick(): FaultKind | undefined {
    let r = this.#random();
    for (const [kind, rate] of Object.entries(this.#o.rates) as [FaultKind, number][]) {
      if (r < rate) {
        return kind;
      }
      r -= rate;
    }
    return undefined;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight++;
    try {
      await this.#inject(req, res);
    } finally {
      this.inFlight--;
    }
  }

  async #inject(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = Buffer.concat(await req.toArray());
    if (this.#o.latencyMs) {
      await new Promise((r) => setTimeout(r, this.#o.latencyMs));
    }
    const path = new URL(req.url ?? "/", "http://proxy").pathname;
    const route = `${req.method} ${path}`;
    const nth = (this.received.get(route) ?? 0) + 1;
    this.received.set(route, nth);
    const hold = this.#holds.get(route);
    if (hold?.n === nth) {
      hold.held();
      await hold.released;
      await this.#answer(req, res, body, undefined).finally(hold.forwarded);
      return;
    }
    const fault = this.#o.first?.[route]?.[nth - 1] ?? this.#pick();
    if (fault) {
      this.injected[fault]++;
      const on = this.injectedOn.get(path) ?? {};
      on[fault] = (on[fault] ?? 0) + 1;
      this.injectedOn.set(path, on);
    }
    switch (fault) {
      case "reset_before_forwarding":
        req.socket.destroy();
        return;
      case "answer_503":
        // As a gateway with a CORS configuration answers a page of an
        // allowed origin: it may read the status and Retry-After.
        res.writeHead(503, {
          "content-type": "application/json",
          "retry-after": "1",
          ...(req.headers.origin
            ? { "access-control-allow-origin": req.headers.origin, "access-control-expose-headers": "retry-after" }
            : {}),
        });
        res.end(JSON.stringify({ message: "Service Unavailable" }));
        return;
      case "delay_past_timeout":
        await new Promise((r) => setTimeout(r, this.#o.delayMs));
        break;
    }
    await this.#answer(req, res, body, fault);
  }

  /** Forwards the request and passes the answer on, unless the fault drops it or the client is gone. */
  async #answer(req: IncomingMessage, res: ServerResponse, body: Buffer, fault: FaultKind | undefined): Promise<void> {
    const answer = await this.#forward(req, body);
    this.forwarded++;
    if (fault === "drop_after_answer" || res.destroyed) {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }

  #forward(req: IncomingMessage, body: Buffer): Promise<{ status: number; headers: Record<string, string | string[]>; body: Buffer }> {
    const target = new URL(req.url ?? "/", this.#o.upstream);
    return new Promise((resolve, reject) => {
      const up = request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (r) => {
        r.toArray().then(
          (chunks) =>
            resolve({ status: r.statusCode ?? 502, headers: r.headers as Record<string, string | string[]>, body: Buffer.concat(chunks) }),
          reject,
        );
      });
      up.on("error", reject);
      up.end(body);
    });
  }
}
