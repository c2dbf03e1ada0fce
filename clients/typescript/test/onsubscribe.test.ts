import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { it } from "node:test";

const root = resolve(import.meta.dirname, "../../../..");

/** A namespace's handler code, as template.yaml gives it to AppSync (a YAML block scalar). */
function templateHandlers(namespace = "users"): string {
  const lines = readFileSync(resolve(root, "template.yaml"), "utf8").split("\n");
  const named = lines.findIndex((l) => l.trim() === `Name: ${namespace}`);
  assert.ok(named >= 0, `template.yaml has the ${namespace} namespace`);
  const start = lines.findIndex((l, i) => i > named && /^\s+CodeHandlers: \|$/.test(l));
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

it("the template's handlers use only what the APPSYNC_JS runtime supports", () => {
  for (const namespace of ["users", "spaces"]) {
    const code = templateHandlers(namespace)
      .split("\n")
      .map((line) => line.replace(/\/\/.*$/, "")) // comments hold prose
      .join("\n");
    for (const [what, pattern] of UNSUPPORTED) {
      assert.doesNotMatch(code, pattern, `the ${namespace} handler uses ${what}`);
    }
  }
});

it("the template's spaces handler lets members subscribe to their space's channel only (the cases make run's stand-in is held to)", () => {
  const code = templateHandlers("spaces")
    .replace(/^\s*import \{ util \} from '@aws-appsync\/utils';$/m, "")
    .replace(/^\s*import \* as ddb from '@aws-appsync\/utils\/dynamodb';$/m, "")
    .replace(/export const/g, "const");
  assert.ok(!/\bimport\b/.test(code), "the handler imports nothing but util and ddb");
  const util = {
    unauthorized() {
      throw new Unauthorized();
    },
  };
  // ddb.get builds the data source's request; the test then plays
  // DynamoDB: the member item, or none.
  const ddb = { get: (req: unknown) => ({ operation: "GetItem", ...(req as object) }) };
  const handler = new Function("util", "ddb", `${code}\nreturn onSubscribe;`)(util, ddb) as {
    request: (ctx: unknown) => { operation: string; key: { user_id: string; event_id: string }; consistentRead: boolean };
    response: (ctx: unknown) => void;
  };
  const f: { members: Record<string, Record<string, string>>; cases: Case[] } = JSON.parse(
    readFileSync(resolve(root, "internal/poke/testdata/space-subscribe-cases.json"), "utf8"),
  );
  for (const c of f.cases) {
    const ctx: Record<string, unknown> = {
      identity: { issuer: "https://issuer.example", claims: { sub: c.sub }, ...(c.sub ? { sub: c.sub } : {}) },
      info: { channel: { path: c.channel, segments: c.channel.split("/").filter((s) => s !== "") }, operation: "SUBSCRIBE" },
    };
    let allowed = true;
    try {
      const req = handler.request(ctx);
      assert.equal(req.operation, "GetItem");
      assert.ok(req.consistentRead, "a removal just committed is read");
      const space = req.key.user_id.replace(/^space#/, "");
      const role = f.members[space]?.[req.key.event_id.replace(/^member#/, "")];
      ctx.result = role ? { user_id: req.key.user_id, event_id: req.key.event_id, role } : null;
      handler.response(ctx);
    } catch (err) {
      assert.ok(err instanceof Unauthorized, `${c.why}: ${err}`);
      allowed = false;
    }
    assert.equal(allowed, c.allowed, c.why);
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
