// npm run compare: the notes API's PATCH /notes/{id} (Go, one
// TransactWriteItems of the note and its idempotency record) beside the same
// UpdateItem made idempotent by Powertools for AWS Lambda (TypeScript), on
// one DynamoDB-compatible server, every call counted by one proxy.
//
// The server is DYNAMODB_ENDPOINT's, else a moto_server from PATH started
// here on a free loopback port and stopped at the end. N (env N, 200 by
// default) fresh PATCHes, N replays in the same environment, N replays in a
// new one, for each side; then the faults. Prints markdown tables.
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { accessSync, constants, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BatchWriteItemCommand,
  DeleteTableCommand,
  GetItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { createHandler, createTables, lambdaContext, localClient } from './handler.mjs';
import { startProxy } from './proxy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.N ?? 200);
const user = 'bench-user';
// Lambda sets an INPROGRESS record's expiry to the invocation's deadline
// (up to 15 minutes); the fault demo's invocation is given 2 s so that the
// run can wait it out.
const faultDeadlineMillis = 2_000;

function findOnPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}

/** moto's version, asked of the Python that runs moto_server. */
function motoVersion(bin) {
  const ask = ['-c', 'import moto; print(moto.__version__)'];
  const shebang = readFileSync(bin, 'utf8').split('\n')[0];
  const candidates = [];
  if (shebang.startsWith('#!') && shebang.includes('python')) candidates.push(shebang.slice(2).trim().split(/\s+/)[0]);
  candidates.push('python3'); // a version manager's shim runs the same Python as python3
  for (const py of candidates) {
    try {
      return execFileSync(py, ask, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {}
  }
  return 'unknown';
}

async function freePort() {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** The server: DYNAMODB_ENDPOINT's, or a moto_server of our own. */
async function startServer() {
  if (process.env.DYNAMODB_ENDPOINT) {
    return { url: process.env.DYNAMODB_ENDPOINT, name: `the server at DYNAMODB_ENDPOINT`, stop: async () => {} };
  }
  const bin = findOnPath('moto_server');
  if (!bin) throw new Error("moto_server is not on PATH: pip install 'moto[server]==5.2.5' in a venv and put its bin on PATH, or set DYNAMODB_ENDPOINT");
  const port = await freePort();
  const child = spawn(bin, ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await fetch(`${url}/moto-api/`);
      break;
    } catch {
      if (i > 150 || child.exitCode !== null) throw new Error('moto_server did not start');
      await sleep(200);
    }
  }
  return {
    url, name: `moto ${motoVersion(bin)}`,
    stop: async () => {
      child.kill();
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on('exit', resolve)));
    },
  };
}

function patchEvent(id, key, version, title) {
  return {
    version: '2.0',
    routeKey: 'PATCH /notes/{id}',
    rawPath: `/notes/${id}`,
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    pathParameters: { id },
    body: JSON.stringify({ version, title }),
    isBase64Encoded: false,
    requestContext: { http: { method: 'PATCH' }, authorizer: { jwt: { claims: { sub: user } } } },
  };
}

async function seedNotes(client, table, ids) {
  for (let i = 0; i < ids.length; i += 25) {
    const RequestItems = {
      [table]: ids.slice(i, i + 25).map((id) => ({
        PutRequest: { Item: { user_id: { S: user }, id: { S: id }, title: { S: 'seed' }, body: { S: '' }, version: { N: '1' } } },
      })),
    };
    let out = await client.send(new BatchWriteItemCommand({ RequestItems }));
    while (Object.keys(out.UnprocessedItems ?? {}).length > 0) {
      out = await client.send(new BatchWriteItemCommand({ RequestItems: out.UnprocessedItems }));
    }
  }
}

async function noteVersion(client, table, id) {
  const out = await client.send(new GetItemCommand({ TableName: table, ConsistentRead: true, Key: { user_id: { S: user }, id: { S: id } } }));
  return `version ${out.Item?.version?.N ?? 'none'}`;
}

async function records(client, table) {
  const out = await client.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
  return out.Items.map((it) => it.status?.S ?? '?');
}

/** One side's N requests through handle, timed, counted by the proxy. */
async function drive(proxy, events, handle, want) {
  proxy.reset();
  const millis = [];
  for (let i = 0; i < events.length; i++) {
    const start = process.hrtime.bigint();
    const resp = await handle(events[i], lambdaContext());
    millis.push(Number(process.hrtime.bigint() - start) / 1e6);
    const problem = want(resp, i);
    if (problem) throw new Error(`request ${i}: ${problem}: ${JSON.stringify(resp)}`);
  }
  return { requests: events.length, calls: proxy.reset(), millis };
}

/** The Powertools side, with or without its local cache of records. */
async function powertoolsSide(proxy, client, tables, useLocalCache) {
  const ids = Array.from({ length: N }, () => randomUUID());
  await seedNotes(client, tables.notesTable, ids);
  const events = ids.map((id, i) => patchEvent(id, randomUUID(), 1, `title ${i}`));
  const want = (replay) => (resp, i) => {
    const body = JSON.stringify({ id: ids[i], title: `title ${i}`, version: 2 });
    if (resp.statusCode !== 200 || resp.body !== body) return 'not the 200 of the PATCH';
    if ((resp.headers['Idempotent-Replayed'] === 'true') !== replay) return replay ? 'not a replay' : 'a replay';
    return null;
  };
  const env = createHandler({ client, ...tables, useLocalCache });
  const fresh = await drive(proxy, events, env, want(false));
  const warm = await drive(proxy, events, env, want(true));
  const cold = await drive(proxy, events, createHandler({ client, ...tables, useLocalCache }), want(true));
  return { fresh, warm_replay: warm, cold_replay: cold };
}

const short = (resp) => {
  let code = '';
  try {
    code = JSON.parse(resp.body).error ?? '';
  } catch {}
  return `${resp.statusCode}${code ? ` ${code}` : ''}${resp.headers?.['Idempotent-Replayed'] === 'true' ? ' (stored answer)' : ''}`;
};

/** Powertools' faults, each on a note and an idempotency table of its own.
 * Each request's calls are counted apart; the reads that inspect the
 * tables between requests are not counted. */
async function powertoolsFaults(proxy, client, suffix) {
  const out = {};
  const tables = { notesTable: `pt-notes-fault-${suffix}`, idempotencyTable: `pt-idem-fault-${suffix}` };
  await createTables(client, tables);
  const state = async (id) => {
    const s = {
      note: await noteVersion(client, tables.notesTable, id),
      record: (await records(client, tables.idempotencyTable)).join(', ') || 'none',
    };
    proxy.reset();
    return s;
  };
  try {
    const ids = [randomUUID(), randomUUID()];
    await seedNotes(client, tables.notesTable, ids);
    const env = createHandler({ client, ...tables });
    const run = { answers: [], calls: [] };
    const send = async (r, e, ctx) => {
      r.answers.push(short(await env(e, ctx)));
      r.calls.push(proxy.reset());
    };

    // The record's completion never reaches DynamoDB, every SDK attempt:
    // as if the function died between its second and third call.
    let e = patchEvent(ids[0], randomUUID(), 1, 'after a fault');
    proxy.reset();
    proxy.setFault({ op: 'UpdateItem', table: tables.idempotencyTable, mode: 'drop', times: 100 });
    const started = Date.now();
    await send(run, e, lambdaContext(faultDeadlineMillis));
    proxy.setFault(null);
    run.after_fault = await state(ids[0]);
    await send(run, e, lambdaContext());
    await sleep(Math.max(0, started + faultDeadlineMillis + 200 - Date.now()));
    await send(run, e, lambdaContext());
    out.dropped_completion = { ...run, ...(await state(ids[0])) };

    // One answer of the note's UpdateItem lost: it committed, and the SDK
    // sends it again; then the client retries with its key.
    e = patchEvent(ids[1], randomUUID(), 1, 'after a fault');
    const lost = { answers: [], calls: [] };
    proxy.setFault({ op: 'UpdateItem', table: tables.notesTable, mode: 'lose', times: 1 });
    await send(lost, e, lambdaContext());
    proxy.setFault(null);
    await send(lost, e, lambdaContext());
    out.lost_once = { ...lost, ...(await state(ids[1])) };
  } finally {
    await dropTables(client, tables);
  }
  return out;
}

async function dropTables(client, tables) {
  for (const t of Object.values(tables)) {
    await client.send(new DeleteTableCommand({ TableName: t })).catch(() => {});
  }
}

/** The Go side: its own process, through the same proxy. */
function goSide(proxyURL) {
  return new Promise((resolve, reject) => {
    const child = spawn('go', ['run', '.', '-n', String(N), '-endpoint', proxyURL], {
      cwd: path.join(here, 'notes-go'), stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`notes-go exited ${code}`))));
  });
}

// Report.

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const ms = (xs) => `${pct(xs, 50).toFixed(1)} / ${pct(xs, 95).toFixed(1)}`;
const perRequest = ({ calls, requests }) => {
  const total = Object.values(calls).reduce((a, b) => a + b, 0);
  const fmt = (n) => (Number.isInteger(n / requests) ? String(n / requests) : (n / requests).toFixed(2));
  const ops = Object.entries(calls).sort().map(([op, n]) => `${op} ${fmt(n)}`).join(', ');
  return `**${fmt(total)}**${ops ? ` (${ops})` : ''}`;
};
// One request's calls by operation; requests separated by semicolons.
const callList = (perRequest) => perRequest.map((calls) => Object.entries(calls).sort().map(([op, n]) => `${op} ${n}`).join(', ') || 'none').join('; ');

function row(name, r, atomic) {
  return `| ${name} | ${perRequest(r.fresh)} | ${perRequest(r.warm_replay)} | ${perRequest(r.cold_replay)} | ${ms(r.fresh.millis)} | ${ms(r.warm_replay.millis)} | ${atomic} |`;
}

async function main() {
  const server = await startServer();
  const proxy = await startProxy(server.url);
  const client = localClient(proxy.url);
  const suffix = randomUUID().slice(0, 8);
  const tables = { notesTable: `pt-notes-${suffix}`, idempotencyTable: `pt-idem-${suffix}` };
  const cacheTables = { notesTable: `pt-notes-cache-${suffix}`, idempotencyTable: `pt-idem-cache-${suffix}` };
  const pkg = (name) => JSON.parse(readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
  try {
    await createTables(client, tables);
    await createTables(client, cacheTables);
    const started = Date.now();
    const pt = await powertoolsSide(proxy, client, tables, false);
    const ptCache = await powertoolsSide(proxy, client, cacheTables, true);
    const ptFaults = await powertoolsFaults(proxy, client, suffix);
    await dropTables(client, tables);
    await dropTables(client, cacheTables);
    const go = await goSide(proxy.url);
    const seconds = ((Date.now() - started) / 1000).toFixed(0);

    const lines = [
      `${N} fresh PATCHes, ${N} replays in the same environment, ${N} in a new one, each side; ${server.name}; ` +
        `@aws-lambda-powertools/idempotency ${pkg('@aws-lambda-powertools/idempotency')}, @aws-sdk/client-dynamodb ${pkg('@aws-sdk/client-dynamodb')}, ` +
        `Node ${process.version}; ${execFileSync('go', ['version'], { encoding: 'utf8' }).trim()}; ${seconds} s.`,
      '',
      '| PATCH /notes/{id} | DynamoDB calls per fresh PATCH | per replay, same environment | per replay, new environment | fresh PATCH, median / p95 ms | replay, same environment, median / p95 ms | record and write atomic |',
      '|---|---|---|---|---|---|---|',
      row('notes API (Go, sync-events)', go, 'yes: one TransactWriteItems'),
      row('Powertools TS, defaults', pt, 'no: three calls'),
      row('Powertools TS, `useLocalCache: true`', ptCache, 'no: three calls'),
      '',
      '| fault | side | answers, in order | DynamoDB calls, each request | the note after | the record after |',
      '|---|---|---|---|---|---|',
      `| every answer of the commit lost (it committed); the client retries with its key | notes API | ${go.lost_commit.answers.join('; ')} | ${callList(go.lost_commit.calls)} | ${go.lost_commit.note} | ${go.lost_commit.record} |`,
      `| one answer of the commit lost; the SDK retries | notes API | ${go.lost_once.answers.join('; ')} | ${callList(go.lost_once.calls)} | ${go.lost_once.note} | ${go.lost_once.record} |`,
      `| the record's completion (third call) never reaches DynamoDB, every SDK attempt; the client retries at once, then after the in-progress expiry (${faultDeadlineMillis / 1000} s here, the invocation's deadline in Lambda) | Powertools | ${ptFaults.dropped_completion.answers.join('; ')} | ${callList(ptFaults.dropped_completion.calls)} | ${ptFaults.dropped_completion.after_fault.note} after the fault, ${ptFaults.dropped_completion.note} at the end | ${ptFaults.dropped_completion.after_fault.record} after the fault; ${ptFaults.dropped_completion.record} at the end |`,
      `| one answer of the note's UpdateItem lost (it committed); the SDK retries; then the client | Powertools | ${ptFaults.lost_once.answers.join('; ')} | ${callList(ptFaults.lost_once.calls)} | ${ptFaults.lost_once.note} | ${ptFaults.lost_once.record} |`,
    ];
    console.log(lines.join('\n'));
  } finally {
    await proxy.close();
    await server.stop();
  }
}

await main();
