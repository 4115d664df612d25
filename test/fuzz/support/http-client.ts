// Two ways to reach the server under test over loopback: `send` (node:http, which reports trailers and whether a
// chunked reply ended with its terminating chunk) and `exchange` (raw bytes on a socket, for requests that are not
// valid HTTP and that no client library would send).
import http from 'node:http';
import net from 'node:net';

export interface HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Buffer | string;
}

export interface HttpReply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly trailers: NodeJS.Dict<string>;
  readonly body: Buffer;
  /** The reply ended normally (for a chunked reply: its terminating chunk arrived). */
  readonly complete: boolean;
}

/** Most time one exchange may take before the harness calls it a hang. */
const REPLY_TIMEOUT_MS = 15_000;

export function send(base: string, request: HttpRequest): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(base);
    // The path goes out as written (a URL object would resolve dot segments and re-encode it).
    const outgoing = http.request(
      { hostname, port, path: request.path, method: request.method, headers: { ...request.headers }, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        const finish = (complete: boolean) => {
          clearTimeout(timer);
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            trailers: response.trailers,
            body: Buffer.concat(chunks),
            complete,
          });
        };
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => finish(true));
        response.on('error', () => finish(false));
        response.on('aborted', () => finish(false));
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy();
      reject(new Error(`no complete reply to ${request.method} ${request.path} within ${REPLY_TIMEOUT_MS} ms`));
    }, REPLY_TIMEOUT_MS);
    outgoing.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    outgoing.end(request.body);
  });
}

export interface RawReply {
  readonly status: number;
  readonly head: string;
  readonly body: string;
}

/** Writes `bytes` and reads until the server closes the connection (or `REPLY_TIMEOUT_MS` passes). */
export function exchange(base: string, bytes: string | Buffer): Promise<RawReply> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server neither answered nor closed within ${REPLY_TIMEOUT_MS} ms`));
    }, REPLY_TIMEOUT_MS);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, head, body: split < 0 ? '' : text.slice(split + 4) });
    });
    socket.write(bytes);
  });
}
