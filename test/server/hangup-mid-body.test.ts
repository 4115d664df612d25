// A client that hangs up half-way through its body is a client that left (499 CLIENT_CLOSED), not broken HTTP
// (400 MALFORMED_HTTP): the request is counted once, under its route, and nothing is written back.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, test } from 'node:test';
import { startTestServer } from './support.ts';

const server = await startTestServer();
after(() => server.close());

test('a hang-up mid-body is counted as client-closed, once, under its route', async () => {
  const { hostname, port } = new URL(server.url);
  const body = JSON.stringify({ input: 'a body that never fully arrives', response_format: 'pcm' });
  const socket = net.connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.write(
    `POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  socket.write(body.slice(0, 10));
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.end();
  await new Promise((resolve) => socket.once('close', resolve));
  const deadline = Date.now() + 3000;
  let metrics = '';
  while (!/drama3_requests_total\{route="speech"/.test(metrics) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
  const counted = metrics
    .split('\n')
    .filter((line) => line.startsWith('drama3_requests_total{') && !line.includes('route="metrics"'));
  assert.deepEqual(counted, ['drama3_requests_total{route="speech",status="499",code="CLIENT_CLOSED"} 1']);
  assert.equal(Buffer.concat(received).length, 0, 'a reply was written to a client that had left');
});

test('a hang-up mid-headers is counted as client-closed (unmatched), and nothing is written', async () => {
  const { hostname, port } = new URL(server.url);
  const before = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
  const socket = net.connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.write('POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Ty');
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.end();
  await new Promise((resolve) => socket.once('close', resolve));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
  assert.doesNotMatch(before, /route="unmatched"/);
  assert.match(metrics, /drama3_requests_total\{route="unmatched",status="499",code="CLIENT_CLOSED"\} 1/);
  assert.doesNotMatch(metrics, /MALFORMED_HTTP/);
  assert.equal(Buffer.concat(received).length, 0, 'a reply was written to a client that had left');
});
