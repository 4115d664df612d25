// Clients that are too slow: one dribbling its body is cut off with BODY_TIMEOUT (408, in the envelope) whether the
// body is JSON or multipart; one that never reads its stream is cut off once its unsent bytes pass the bound, its
// request cancelled and counted as CLIENT_NOT_READING, instead of every frame being buffered for it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openVoices } from '../../src/cli/voices.ts';
import { startTestServer, type TestServer } from './support.ts';

/** Sends the head, then one body byte every 100 ms; resolves with what the server answered and when. */
function dribble(server: TestServer, path: string, contentType: string, body: string) {
  const { port } = new URL(server.url);
  const started = performance.now();
  return new Promise<{ answer: string; ms: number }>((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < body.length && !socket.destroyed) socket.write(body[sent++]!);
    }, 100);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer: Buffer.concat(chunks).toString('latin1'), ms: performance.now() - started });
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
  });
}

function envelopeOf(answer: string): { status: number; code: string } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: { code: string } };
  return { status, code: body.error.code };
}

test('a body dribbled past the body timeout is cut off with BODY_TIMEOUT, JSON or multipart', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'drama3-slow-'));
  const server = await startTestServer({
    app: { timeouts: { requestMs: 0, bodyMs: 400 }, ...(await openVoices(dir, { kind: 'null' })) },
  });
  try {
    const json = await dribble(
      server,
      '/v1/audio/speech',
      'application/json',
      JSON.stringify({ input: 'x'.repeat(200) }),
    );
    assert.deepEqual(envelopeOf(json.answer), { status: 408, code: 'BODY_TIMEOUT' });
    assert.ok(json.ms < 3000, `cut off after ${json.ms.toFixed(0)} ms`);
    const boundary = 'slowboundary';
    const form = `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n${'n'.repeat(100)}\r\n--${boundary}--\r\n`;
    const multipart = await dribble(server, '/v1/audio/voices', `multipart/form-data; boundary=${boundary}`, form);
    assert.deepEqual(envelopeOf(multipart.answer), { status: 408, code: 'BODY_TIMEOUT' });
    assert.ok(multipart.ms < 3000, `cut off after ${multipart.ms.toFixed(0)} ms`);
    const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /route="speech",status="408",code="BODY_TIMEOUT"\} 1/);
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a stream its client never reads is cut off at the buffer bound and its request cancelled', async () => {
  const server = await startTestServer({
    model: { framesPerRow: 1000 },
    app: { maxBufferedReplyBytes: 64 * 1024 },
  });
  const { port } = new URL(server.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  try {
    // 4000 frames of 44.1 kHz pcm are 16 MB: far more than the socket buffers hold.
    const body = JSON.stringify({
      input: 'never read',
      response_format: 'pcm',
      stream_format: 'audio',
      max_frames: 4000,
    });
    socket.write(
      `POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    socket.pause();
    const deadline = Date.now() + 10_000;
    let metrics = '';
    while (!/code="CLIENT_NOT_READING"\} 1/.test(metrics) || server.engine.requestsInFlight > 0) {
      assert.ok(Date.now() < deadline, `the reply was never cut off:\n${metrics}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    }
    const frames = Number(/drama3_frames_total (\d+)/.exec(metrics)?.[1]);
    assert.ok(frames < 4000, `all ${frames} frames were generated for a client that reads nothing`);
  } finally {
    socket.destroy();
    await server.close();
  }
});
