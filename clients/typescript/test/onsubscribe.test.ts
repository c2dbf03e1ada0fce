import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { it } from "node:test";

const root = resolve(import.meta.dirname, "../../../..");

/** The users namespace's handler code, as template.yaml gives it to AppSync (a YAML block scalar). */
function templateHandlers(): string {
  const lines = readFileSync(resolve(root, "template.yaml"), "utf8").split("\n");
  const start = lines.findIndex((l) => /^\s+CodeHandlers: \|$/.test(l));
  assert.ok(start >= 0, "template.yaml has a CodeHandlers block");
  const indent = (lines[start] ?? "").search(/\S/);
  const block: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() !== "" && line.search(/\S/) <= indent) {
      break;
    }
    block.push(line);
  }
  return block.join("\n");
}

class Unauthorized extends Error {}

/**
 * onSubscribe, run as AppSync's APPSYNC_JS runtime would run it: the
 * module's one import, util, given a stand-in whose unauthorized() throws
 * (AppSync's ends the handler and refuses the subscription).
 */
function onSubscribe(): (ctx: unknown) => void {
  const code = templateHandlers()
    .replace(/^\s*import \{ util \} from '@aws-appsync\/utils';$/m, "")
    .replace(/export function/g, "function");
  assert.ok(!/\bimport\b/.test(code), "the handler imports nothing but util");
  const util = {
    unauthorized() {
      throw new Unauthorized();
    },
  };
  return new Function("util", `${code}\nreturn onSubscribe;`)(util);
}

/**
 * What the APPSYNC_JS runtime does not run (its "Supported runtime
 * features" page: no unary ++, -- or ~, no in operator, no catch, continue,
 * do-while, finally, C-style for, throw, try, while or labels): AppSync
 * refuses such code at deploy, which no local run would show.
 * https://docs.aws.amazon.com/appsync/latest/eventapi/runtime-supported-features.html
 */
const UNSUPPORTED: [string, RegExp][] = [
  ["++ or --", /\+\+|--/],
  ["~", /~/],
  ["the in operator", /\sin\s/],
  ["catch, continue, finally, throw, try or while", /\b(catch|continue|finally|throw|try|while|do)\b/],
  ["a C-style for", /\bfor\s*\([^)]*;/],
  ["a label", /^\s*[A-Za-z_$][\w$]*:\s*(for|while|do)\b/m],
];

it("the template's handler uses only what the APPSYNC_JS runtime supports", () => {
  const code = templateHandlers()
    .split("\n")
    .map((line) => line.replace(/\/\/.*$/, "")) // comments hold prose
    .join("\n");
  for (const [what, pattern] of UNSUPPORTED) {
    assert.doesNotMatch(code, pattern, `the handler uses ${what}`);
  }
});

interface Case {
  why: string;
  sub: string;
  channel: string;
  allowed: boolean;
}

it("the template's onSubscribe lets a caller subscribe to their own channel only (the cases make run's stand-in is held to)", () => {
  const handler = onSubscribe();
  const cases: Case[] = JSON.parse(readFileSync(resolve(root, "internal/poke/testdata/subscribe-cases.json"), "utf8"));
  assert.ok(cases.length >= 5);
  // AppSync documents ctx.identity.sub for Cognito; for OIDC, the GraphQL
  // utilities' type gives { sub, issuer, claims }. The handler reads either
  // sub or claims.sub, so both shapes are run.
  const identities = {
    "identity.sub": (sub: string) => ({ sub, issuer: "https://issuer.example", claims: { sub } }),
    "claims.sub only": (sub: string) => ({ issuer: "https://issuer.example", claims: { sub } }),
  };
  for (const [shape, identity] of Object.entries(identities)) {
    for (const c of cases) {
      const ctx = {
        identity: identity(c.sub),
        info: { channel: { path: c.channel, segments: c.channel.split("/").filter((s) => s !== "") }, operation: "SUBSCRIBE" },
      };
      let allowed = true;
      try {
        handler(ctx);
      } catch (err) {
        assert.ok(err instanceof Unauthorized, `${c.why}: ${err}`);
        allowed = false;
      }
      assert.equal(allowed, c.allowed, `${shape}: ${c.why}`);
    }
  }
  assert.throws(() => handler({ info: { channel: { path: "/users/alice", segments: ["users", "alice"] } } }), Unauthorized, "no identity");
});
