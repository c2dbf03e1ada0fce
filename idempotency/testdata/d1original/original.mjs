// The original service's mutation idempotency (Cloudflare Workers + D1),
// written as its documentation describes it and as a Workers developer
// writes it: payloadHash sorts each object's keys with JavaScript's
// default sort into a new object, JSON.stringify's that, and hashes it;
// idempotentMutation answers a known key from the ledger or executes and
// stores the row. The tests hold this service's import and its d1-js
// digest to it; it is not this service's code.
import { createHash } from "node:crypto";

// canonical is the payload with every object's keys sorted (default
// sort: UTF-16 code units) into a new object. Assigning "__proto__" to a
// new object sets its prototype instead of adding a member, as it does
// in the original.
export function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    const sorted = {};
    for (const k of Object.keys(value).sort()) sorted[k] = canonical(value[k]);
    return sorted;
  }
  return value;
}

export function canonicalJSON(payload) {
  return JSON.stringify(canonical(payload));
}

export async function payloadHash(payload) {
  return createHash("sha256").update(canonicalJSON(payload), "utf8").digest("hex");
}

// ledger is the idempotency_ledger table: rows keyed by (key, user_id),
// as D1 stores them.
export function ledger() {
  const rows = new Map();
  const id = (key, userId) => JSON.stringify([key, userId]);
  return {
    first: (key, userId) => rows.get(id(key, userId)) ?? null,
    insert: (row) => {
      if (rows.has(id(row.key, row.user_id))) throw new Error("UNIQUE constraint failed");
      rows.set(id(row.key, row.user_id), row);
    },
    rows: () => [...rows.values()],
  };
}

const nowISO = () => new Date().toISOString();

export async function idempotentMutation(db, idempotencyKey, userId, payload, execute, now = nowISO) {
  if (!idempotencyKey) {
    return { statusCode: 400, body: { error: "VALIDATION_FAILED", message: "Idempotency-Key header is required" } };
  }
  const payloadHashValue = await payloadHash(payload);
  const row = db.first(idempotencyKey, userId);
  if (row) {
    if (row.payload_hash !== payloadHashValue) {
      return {
        statusCode: 409,
        body: { error: "IDEMPOTENCY_KEY_REUSED_WITH_DIFFERENT_PAYLOAD", message: "Idempotency key already used with a different payload" },
      };
    }
    return { statusCode: row.status_code, body: JSON.parse(row.response_body) };
  }
  const { statusCode, body } = await execute();
  db.insert({
    key: idempotencyKey, user_id: userId, payload_hash: payloadHashValue,
    status_code: statusCode, response_body: JSON.stringify(body), created_at: now(),
  });
  return { statusCode, body };
}
