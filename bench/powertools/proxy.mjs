// A counting proxy between the SDKs and the DynamoDB-compatible server:
// both sides of the comparison go through it, so both are counted by the
// same code, by the operation each request names in X-Amz-Target. It can
// also fail chosen calls, to show what each design leaves behind.
//
// Control, for the Go side that runs in another process:
//   POST /__bench/reset         the counts since the last reset, then zero
//   POST /__bench/fault  SPEC   fail the calls SPEC matches; null ends it
// SPEC: {op, table?, mode, times}; mode "drop" never forwards the call
// (the client sees a reset connection: a crash before the call), "lose"
// forwards it and drops its answer (it takes effect, the client never
// learns); times is how many matching calls, SDK retries included.
import http from 'node:http';

export async function startProxy(upstream) {
  const target = new URL(upstream);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  let counts = {};
  let fault = null;

  const takeCounts = () => {
    const out = counts;
    counts = {};
    return out;
  };

  const matches = (op, body) => {
    if (!fault || fault.times <= 0 || fault.op !== op) return false;
    if (fault.table) {
      try {
        if (JSON.parse(body).TableName !== fault.table) return false;
      } catch {
        return false;
      }
    }
    fault.times--;
    return true;
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url.startsWith('/__bench/')) return control(req, res, body);
      const op = (req.headers['x-amz-target'] ?? 'unknown').split('.').pop();
      counts[op] = (counts[op] ?? 0) + 1;
      const mode = matches(op, body.toString()) ? fault.mode : null;
      if (mode === 'drop') return req.socket.destroy();
      const up = http.request({
        host: target.hostname, port: target.port, method: req.method, path: req.url,
        headers: req.headers, agent,
      }, (upRes) => {
        if (mode === 'lose') {
          upRes.resume();
          upRes.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(upRes.statusCode, upRes.headers);
        upRes.pipe(res);
      });
      up.on('error', (err) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
      up.end(body);
    });
  });

  function control(req, res, body) {
    const reply = (v) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    switch (req.url) {
      case '/__bench/reset':
        return reply(takeCounts());
      case '/__bench/fault':
        fault = JSON.parse(body.toString() || 'null');
        return reply({});
      default:
        res.writeHead(404);
        res.end();
    }
  }

  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    reset: takeCounts,
    setFault: (spec) => {
      fault = spec;
    },
    close: () => {
      agent.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
