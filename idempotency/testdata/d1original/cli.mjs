// Drives original.mjs for the Go tests: reads one JSON command on stdin,
// writes its result as JSON on stdout.
//   {"hash": [body, ...]}  -> [{"form": canonical JSON, "hash": hex}, ...]
//   {"serve": [{"key", "user", "body", "createdAt"?}, ...]}
//     -> {"answers": [{"status", "body"}...], "rows": [ledger rows], "executed": n}
//   each body is the request's text, parsed as the original parses it.
import { readFileSync } from "node:fs";
import { canonicalJSON, payloadHash, ledger, idempotentMutation } from "./original.mjs";

const cmd = JSON.parse(readFileSync(0, "utf8"));
if (cmd.hash) {
  const out = [];
  for (const body of cmd.hash) {
    const payload = JSON.parse(body);
    out.push({ form: canonicalJSON(payload), hash: await payloadHash(payload) });
  }
  process.stdout.write(JSON.stringify(out));
} else if (cmd.serve) {
  const db = ledger();
  const answers = [];
  let executed = 0;
  for (const r of cmd.serve) {
    const payload = JSON.parse(r.body);
    const now = r.createdAt ? () => r.createdAt : undefined;
    // The executor answers as the events route: 201 with the event as
    // stored, its payload not echoed.
    const answer = await idempotentMutation(db, r.key, r.user, payload, async () => {
      executed++;
      const receivedAt = new Date(Date.now() + executed).toISOString();
      return { statusCode: 201, body: { id: payload.id, type: payload.type, occurredAt: payload.occurredAt, receivedAt } };
    }, now);
    answers.push({ status: answer.statusCode, body: JSON.stringify(answer.body) });
  }
  process.stdout.write(JSON.stringify({ answers, rows: db.rows(), executed }));
} else {
  throw new Error("unknown command");
}
