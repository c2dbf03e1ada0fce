import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/**
 * The service as `make run` serves it (the real handler on the embedded
 * DynamoDB), on a loopback port: SYNC_EVENTS_URL if set (.ci/run can start
 * it), else built from this repository and started here.
 */
export async function startService(): Promise<{ url: string; stop: () => void }> {
  if (process.env.SYNC_EVENTS_URL) {
    return { url: process.env.SYNC_EVENTS_URL, stop: () => {} };
  }
  const root = resolve(import.meta.dirname, "../../../..");
  const bin = join(mkdtempSync(join(tmpdir(), "sync-events-e2e-")), "sync-events-local");
  execFileSync("go", ["build", "-o", bin, "./cmd/sync-events-local"], { cwd: root, stdio: "inherit" });
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child: ChildProcess = spawn(bin, [], { env: { ...process.env, ADDR: `127.0.0.1:${port}` }, stdio: "ignore" });
  for (let i = 0; i < 300; i++) {
    if (await canConnect(port)) {
      return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error("the service did not start");
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

/** A bearer token the local authorizer stand-in accepts: claims only, unsigned (see README, "Local authorizer"). */
export function localToken(sub: string): string {
  return `x.${Buffer.from(JSON.stringify({ sub })).toString("base64url")}.x`;
}
