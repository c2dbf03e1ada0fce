import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { SyncClient, SyncState } from "../src/client.js";

/**
 * The service as `make run` serves it (the real handler on the embedded
 * DynamoDB), on a loopback port: SYNC_EVENTS_URL if set (.ci/run can start
 * it), else built from this repository and started here.
 */
export async function startService(env: Record<string, string> = {}): Promise<{ url: string; stop: () => void }> {
  if (process.env.SYNC_EVENTS_URL && Object.keys(env).length === 0) {
    return { url: process.env.SYNC_EVENTS_URL, stop: () => {} };
  }
  const root = resolve(import.meta.dirname, "../../../..");
  const bin = join(mkdtempSync(join(tmpdir(), "sync-events-e2e-")), "sync-events-local");
  execFileSync("go", ["build", "-o", bin, "./cmd/sync-events-local"], { cwd: root, stdio: "inherit" });
  const port = await freePort();
  const child: ChildProcess = spawn(bin, [], {
    env: { ...process.env, ...env, ADDR: `127.0.0.1:${port}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let exited: number | null = null;
  child.stdout?.on("data", (d) => {
    output = (output + d).slice(-4000);
  });
  child.stderr?.on("data", (d) => {
    output = (output + d).slice(-4000);
  });
  child.on("exit", (code) => {
    exited = code ?? -1;
  });
  for (let i = 0; i < 600 && exited === null; i++) {
    if (await canConnect(port)) {
      return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`the service did not start on port ${port} (exit ${exited}); its output:\n${output}`);
}

/** A loopback port nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/**
 * A bearer token the local authorizer stand-in accepts: claims only,
 * unsigned (see docs/operations.md, "make run"); claims are added to sub.
 */
export function localToken(sub: string, claims: Record<string, unknown> = {}): string {
  return `x.${Buffer.from(JSON.stringify({ sub, ...claims })).toString("base64url")}.x`;
}

/** A mutation or read of the service as a user: a fresh Idempotency-Key each call. */
export function asUser(url: string, token: string) {
  return (method: string, path: string, body?: unknown) =>
    fetch(new URL(path, url), {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        "idempotency-key": crypto.randomUUID(),
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
}

/** Resolves with the client's state once ok(state) holds, or fails after ms. */
export function until<S>(c: SyncClient<S>, ok: (s: SyncState<S>) => boolean, what: string, ms = 5000): Promise<SyncState<S>> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (ok(c.state)) {
        clearTimeout(timer);
        stop();
        resolve(c.state);
      }
    };
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`not within ${ms} ms: ${what}; state: ${JSON.stringify(c.state)}`));
    }, ms);
    const stop = c.subscribe(check);
    check();
  });
}
