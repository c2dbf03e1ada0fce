import assert from "node:assert/strict";
import { it } from "node:test";
import { tokenSubject } from "../src/token.js";
import { localToken } from "./server.js";

const b64url = (s: string) => Buffer.from(s).toString("base64url");

it("tokenSubject reads a JWT's sub without verifying it, and nothing from anything else", () => {
  const cases: [string, string, string | undefined][] = [
    ["make run's token", localToken("user-1"), "user-1"],
    ["a real JWT's shape", `${b64url('{"alg":"RS256"}')}.${b64url('{"sub":"a1b2","aud":"x","exp":1}')}.c2ln`, "a1b2"],
    ["a sub beyond ASCII, padded", `h.${Buffer.from('{"sub":"émile"}').toString("base64")}.s`, "émile"],
    ["base64url's - and _", `h.${b64url('{"sub":"??>>~~"}')}.s`, "??>>~~"],
    ["no sub", `h.${b64url('{"aud":"x"}')}.s`, undefined],
    ["an empty sub", `h.${b64url('{"sub":""}')}.s`, undefined],
    ["a sub that is no string", `h.${b64url('{"sub":42}')}.s`, undefined],
    ["a payload that is no object", `h.${b64url('"sub"')}.s`, undefined],
    ["a payload that is no JSON", `h.${b64url("sub=user-1")}.s`, undefined],
    ["a payload that is no UTF-8", `h.${Buffer.from([0x7b, 0xff, 0x7d]).toString("base64url")}.s`, undefined],
    ["a payload that is no base64", 'h.{"sub":"u"}.s', undefined],
    ["an opaque token", "2YotnFZFEjr1zCsicMWpAA", undefined],
    ["nothing", "", undefined],
  ];
  for (const [what, token, want] of cases) {
    assert.equal(tokenSubject(token), want, what);
  }
});
