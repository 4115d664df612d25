// Errors Node's HTTP parser raises before fastify sees a request (malformed framing, oversize headers, header and
// request timeouts): answered on the raw socket in the same OpenAI envelope as every other error, then closed.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { DramaError } from '../errors.ts';
import { envelope, errorHeaders, statusOf } from './errors.ts';
import { CLIENT_CLOSED_STATUS, replyOpenOn } from './outcomes.ts';

/** A parser or timeout error → the named error a client sees. */
export function fromClientError(error: Error & { code?: string }): DramaError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new DramaError('HEADERS_TOO_LARGE', 'the request headers are larger than the server accepts', {
        param: 'headers',
      });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new DramaError('REQUEST_TIMEOUT', 'the request did not arrive in time (headers and body)', {
        param: 'body',
      });
    case 'HPE_HEADER_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return new DramaError('REQUEST_TIMEOUT', 'the request headers did not arrive in time', { param: 'headers' });
  }
  return new DramaError('MALFORMED_HTTP', `the request is not valid HTTP/1.1: ${error.code ?? error.message}`, {
    param: 'request',
  });
}

/** The bytes of a complete error response with the envelope. */
export function clientErrorResponse(error: DramaError): string {
  const status = statusOf(error);
  const body = JSON.stringify(envelope(status, error));
  const headers = {
    ...errorHeaders(status, error.code),
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** The parser's error for a connection that ended part-way through a request: the client left. */
const ENDED_MID_REQUEST = 'HPE_INVALID_EOF_STATE';

/**
 * fastify's `clientErrorHandler`: one envelope per broken connection, written only when nothing else was. A client
 * that hung up part-way through its request is no HTTP error: it is counted as client-closed (by its reply's own
 * count when its headers had arrived, here otherwise) and nothing is written.
 */
export function clientErrorHandler(
  onError: (error: DramaError, status: number) => void,
): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    if (error.code === ENDED_MID_REQUEST) {
      if (!replyOpenOn(socket)) {
        const closed = new DramaError('CLIENT_CLOSED', 'the client closed the connection mid-request', {
          param: 'request',
        });
        onError(closed, CLIENT_CLOSED_STATUS);
      }
      socket.destroy();
      return;
    }
    const dramaError = fromClientError(error);
    onError(dramaError, statusOf(dramaError));
    // As Node's own handler does: the write goes out at once on a writable socket, then the connection closes.
    if (socket.writable && socket.bytesWritten === 0) socket.write(clientErrorResponse(dramaError));
    socket.destroy();
  };
}
