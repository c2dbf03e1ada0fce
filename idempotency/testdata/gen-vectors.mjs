// Regenerates jcs-vectors.json: each input's canonical form and hash as a
// JavaScript backend computes them (sorted-key JSON.stringify, which for
// I-JSON input is RFC 8785), so the Go side is checked against an
// independent implementation. Run: node gen-vectors.mjs > jcs-vectors.json
import { createHash } from "node:crypto";

const sortKeys = (v) =>
  Array.isArray(v) ? v.map(sortKeys)
  : v !== null && typeof v === "object"
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]))
    : v;

const inputs = [
  `{"b":1,"a":2}`,
  ` { "a" : [ 1 , 2 , { "d" : true , "c" : null } ] } `,
  `{"id":"6f1c2a9e-3b7d-4c1e-9a52-0d8e4f7b6a31","type":"note.created","occurredAt":"2026-12-02T14:03:00Z","payload":{"title":"Groceries","items":["milk","eggs"],"done":false}}`,
  `{"numbers":[1.0,1e2,-0,0.000001,1e-7,1E21,123456789012345678,3.14159265358979323846,5e-324]}`,
  `{"escapes":"\\u0041\\u00e9\\n\\t\\"\\\\\\/\\u2028\\u001f","emoji":"\\ud83d\\ude00","raw":"é😀"}`,
  `{"\\u00e9":1,"e":2,"€":3,"\\ud83d\\ude00":4,"A":5,"a":6}`,
  `[]`,
  `{}`,
  `"just a string"`,
  `{"nested":{"z":{"y":{"x":[{"b":2,"a":1}]}}}}`,
];

const out = inputs.map((input) => {
  const canonical = JSON.stringify(sortKeys(JSON.parse(input)));
  return { input, canonical, sha256: createHash("sha256").update(canonical, "utf8").digest("hex") };
});
console.log(JSON.stringify(out, null, 2));
