// Table cases for everything around the bodies: the GET routes, unknown routes and methods, API keys (checked
// before the body is read), and requests that are not valid HTTP at all, sent as raw bytes, which must still get
// the envelope.
import { type HttpCase, refused, SPEECH, speaks } from './case.ts';
import { API_KEY, FUZZ_BODY_LIMIT } from './fuzz-server.ts';
import { jsonRequest, SPEECH_PATH } from './requests.ts';

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') => ({ method, path, headers });
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

function jsonHas(test: (value: Record<string, unknown>) => boolean): (body: Buffer) => string[] {
  return (body) =>
    test(JSON.parse(body.toString()) as Record<string, unknown>) ? [] : [`unexpected ${body.slice(0, 200)}`];
}

function routes(): HttpCase[] {
  return [
    {
      name: 'GET /v1/models',
      request: get('/v1/models'),
      expect: { ok: 200, check: jsonHas((v) => (v.data as { speech?: unknown }[])[0]?.speech !== undefined) },
    },
    { name: 'GET /health', request: get('/health'), expect: { ok: 200, check: jsonHas((v) => v.status === 'ready') } },
    { name: 'GET /health with a query', request: get('/health?x=%zz&y'), expect: { ok: 200 } },
    {
      name: 'GET /metrics',
      request: get('/metrics'),
      expect: {
        ok: 200,
        check: (body) => (/drama3_requests_total/.test(body.toString()) ? [] : ['no request counter']),
      },
    },
    {
      name: 'GET /openapi.json',
      request: get('/openapi.json'),
      expect: { ok: 200, check: jsonHas((v) => /^3\./.test(String(v.openapi))) },
    },
    { name: 'GET /', request: get('/'), expect: { ok: 200 } },
    { name: 'an unknown route', request: get('/v1/nothing'), expect: refused(404, 'ROUTE_NOT_FOUND') },
    { name: 'GET on the speech route', request: get(SPEECH_PATH), expect: refused(405, 'METHOD_NOT_ALLOWED') },
    { name: 'PUT on the tts route', request: get('/v1/tts', {}, 'PUT'), expect: refused(405, 'METHOD_NOT_ALLOWED') },
    {
      name: 'DELETE without an id',
      request: get('/v1/audio/voices', {}, 'DELETE'),
      expect: refused(405, 'METHOD_NOT_ALLOWED'),
    },
    {
      name: 'a trailing slash',
      request: jsonRequest(`${SPEECH_PATH}/`, SPEECH),
      expect: refused(404, 'ROUTE_NOT_FOUND'),
    },
    {
      name: 'a double slash',
      request: jsonRequest('/v1//audio/speech', SPEECH),
      expect: refused(404, 'ROUTE_NOT_FOUND'),
    },
    {
      name: 'bad URL encoding in an unknown path',
      request: get('/v1/%zz'),
      expect: refused(400, 'INVALID_URL_ENCODING'),
    },
  ];
}

function auth(): HttpCase[] {
  const keyed = (name: string, request: HttpCase['request'], expect: HttpCase['expect']): HttpCase => ({
    name: `keys: ${name}`,
    target: 'keyed',
    request,
    expect,
  });
  const unauthorized = refused(401, 'INVALID_API_KEY');
  return [
    keyed('speech without a key', jsonRequest(SPEECH_PATH, SPEECH), unauthorized),
    keyed('speech with a wrong key', jsonRequest(SPEECH_PATH, SPEECH, bearer('wrong')), unauthorized),
    keyed(
      'speech with a Basic credential',
      jsonRequest(SPEECH_PATH, SPEECH, { authorization: `Basic ${API_KEY}` }),
      unauthorized,
    ),
    keyed('an empty bearer token', get('/v1/models', { authorization: 'Bearer ' }), unauthorized),
    keyed('the key with one byte more', get('/v1/models', bearer(`${API_KEY}x`)), unauthorized),
    keyed('a key of 8 KiB', get('/v1/models', bearer('k'.repeat(8192))), unauthorized),
    keyed('/metrics without a key', get('/metrics'), unauthorized),
    keyed('an unknown route without a key', get('/v1/nothing'), unauthorized),
    keyed(
      'an oversize body without a key (refused before reading it)',
      jsonRequest(SPEECH_PATH, { input: 'a'.repeat(FUZZ_BODY_LIMIT) }),
      unauthorized,
    ),
    keyed('/health without a key', get('/health'), { ok: 200 }),
    keyed('/ without a key', get('/'), { ok: 200 }),
    keyed('/v1/models with the key', get('/v1/models', bearer(API_KEY)), { ok: 200 }),
    keyed('the key padded with spaces', get('/v1/models', { authorization: `Bearer   ${API_KEY}  ` }), { ok: 200 }),
    {
      ...speaks('speech with the key', { ...SPEECH }, 'keyed'),
      request: jsonRequest(SPEECH_PATH, SPEECH, bearer(API_KEY)),
    },
  ];
}

function rawHttp(): HttpCase[] {
  const raw = (name: string, bytes: string, status: number, code: string): HttpCase => ({
    name: `raw: ${name}`,
    request: { raw: bytes },
    expect: refused(status, code),
  });
  const close = 'Host: fuzz\r\nConnection: close\r\n';
  return [
    raw('not HTTP at all', 'NOT HTTP AT ALL\r\n\r\n', 400, 'MALFORMED_HTTP'),
    raw(
      'a broken chunked body',
      `POST ${SPEECH_PATH} HTTP/1.1\r\n${close}Transfer-Encoding: chunked\r\n\r\nzz\r\n`,
      400,
      'MALFORMED_HTTP',
    ),
    raw(
      'Content-Length with Transfer-Encoding',
      `POST ${SPEECH_PATH} HTTP/1.1\r\n${close}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      400,
      'MALFORMED_HTTP',
    ),
    raw(
      'two different Content-Lengths',
      `POST ${SPEECH_PATH} HTTP/1.1\r\n${close}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      400,
      'MALFORMED_HTTP',
    ),
    raw(
      'a negative Content-Length',
      `POST ${SPEECH_PATH} HTTP/1.1\r\n${close}Content-Length: -1\r\n\r\n`,
      400,
      'MALFORMED_HTTP',
    ),
    raw('a space in a header name', `GET /health HTTP/1.1\r\n${close}X Bad: 1\r\n\r\n`, 400, 'MALFORMED_HTTP'),
    raw(
      'a control character in a header value',
      `GET /health HTTP/1.1\r\n${close}X-Bad: a\u0001b\r\n\r\n`,
      400,
      'MALFORMED_HTTP',
    ),
    raw('an unknown HTTP version', 'GET /health HTTP/9.9\r\nHost: fuzz\r\n\r\n', 400, 'MALFORMED_HTTP'),
    raw(
      'oversize headers',
      `GET /health HTTP/1.1\r\n${close}X-Big: ${'b'.repeat(20000)}\r\n\r\n`,
      431,
      'HEADERS_TOO_LARGE',
    ),
    raw('a request line of 100 KB', `GET /${'p'.repeat(100_000)} HTTP/1.1\r\n${close}\r\n`, 431, 'HEADERS_TOO_LARGE'),
    raw('bad URL encoding', `GET /v1/audio/voices/%zz HTTP/1.1\r\n${close}\r\n`, 400, 'INVALID_URL_ENCODING'),
    raw(
      'an over-long path parameter',
      `GET /v1/audio/voices/${'a'.repeat(300)} HTTP/1.1\r\n${close}\r\n`,
      414,
      'PATH_PARAMETER_TOO_LONG',
    ),
    raw(
      'a JSON body cut at its Content-Length',
      `POST ${SPEECH_PATH} HTTP/1.1\r\n${close}Content-Type: application/json\r\nContent-Length: 1\r\n\r\n{`,
      400,
      'MALFORMED_JSON',
    ),
  ];
}

export const PROTOCOL_CASES: readonly HttpCase[] = [...routes(), ...auth(), ...rawHttp()];
