// Errors raised before any route runs take the same envelope as every other: bad URL encoding, an over-long path
// parameter, broken HTTP framing, oversize headers and a header timeout each get a stable code and the right status,
// are counted in /metrics, and the server keeps serving.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from './support.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ app: { timeouts: { requestMs: 400, bodyMs: 0 } } });
});
after(() => server.close());

/** Writes raw bytes to the server (optionally leaving the request unfinished); resolves with all it answers. */
function exchange(bytes: string): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
    socket.write(bytes);
    setTimeout(() => socket.destroy(), 5000).unref();
  });
}

function parse(answer: string): { status: number; headers: string; error: Record<string, unknown> } {
  const [head, body] = [answer.slice(0, answer.indexOf('\r\n\r\n')), answer.slice(answer.indexOf('\r\n\r\n') + 4)];
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  const parsed = JSON.parse(body) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(parsed), ['error'], answer);
  return { status, headers: head, error: parsed.error };
}

const CASES = [
  {
    name: 'bad URL encoding in a path',
    bytes: 'GET /v1/audio/voices/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    status: 400,
    code: 'INVALID_URL_ENCODING',
  },
  {
    name: 'an over-long path parameter',
    bytes: `GET /v1/audio/voices/${'a'.repeat(300)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    status: 414,
    code: 'PATH_PARAMETER_TOO_LONG',
  },
  { name: 'malformed HTTP framing', bytes: 'NOT HTTP AT ALL\r\n\r\n', status: 400, code: 'MALFORMED_HTTP' },
  {
    name: 'a broken chunked body',
    bytes: 'POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    status: 400,
    code: 'MALFORMED_HTTP',
  },
  {
    name: 'oversize headers',
    bytes: `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20000)}\r\n\r\n`,
    status: 431,
    code: 'HEADERS_TOO_LARGE',
  },
  {
    name: 'headers that never end',
    bytes: 'GET /health HTTP/1.1\r\nHost: x\r\n',
    status: 408,
    code: 'REQUEST_TIMEOUT',
  },
];

for (const bad of CASES) {
  test(`${bad.name}: ${bad.status} ${bad.code} in the envelope; the next request is served`, async () => {
    const answer = parse(await exchange(bad.bytes));
    assert.equal(answer.status, bad.status, JSON.stringify(answer));
    assert.equal(answer.error.code, bad.code);
    assert.equal(typeof answer.error.message, 'string');
    assert.equal(typeof answer.error.type, 'string');
    const good = await fetch(`${server.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'still here', response_format: 'pcm', max_frames: 2 }),
    });
    assert.equal(good.status, 200);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(
      metrics,
      new RegExp(`drama3_requests_total\\{route="[a-z]+",status="${bad.status}",code="${bad.code}"\\}`),
    );
  });
}
