// The property pass: fast-check draws bodies for /v1/audio/speech, /v1/tts (JSON and msgpack) and multipart voice
// uploads, sends each over loopback and holds the server to the harness's rules: valid audio (a body drawn only from
// valid values must be spoken), or the error envelope with a 4xx status and a code that the same request gets again;
// never a 5xx; the next good request succeeds; the catalog folder holds only its voices.
import fc from 'fast-check';
import { type Drawn, type DrawnUpload, msgpackBody, speechBody, ttsBody, upload } from './arbitraries.ts';
import { speechReplyProblems } from './audio-checks.ts';
import { afterCaseProblems, type FuzzServer, STORED_VOICE } from './fuzz-server.ts';
import { type HttpReply, type HttpRequest, send } from './http-client.ts';
import { parseEnvelope } from './reply-checks.ts';
import {
  jsonRequest,
  msgpackRequest,
  multipartBody,
  multipartRequest,
  SPEECH_PATH,
  speechExpectation,
  TTS_PATH,
  ttsExpectation,
  VOICES_PATH,
} from './requests.ts';

const STRUCTURAL = /<\|(im_start|im_end|voice|text|interleave|semantic:)/;
const hasStructuralToken = (text: string) => STRUCTURAL.test(text);

const CLIENT_ERROR_STATUSES = [400, 404, 409, 413, 415];
/** What a valid body may still be refused for: a format that cannot take the rate or bit rate asked. */
const VALID_BODY_REFUSALS = ['AUDIO_SAMPLE_RATE_UNSUPPORTED', 'AUDIO_BITRATE_UNSUPPORTED'];

interface RouteProperty<T> {
  readonly name: string;
  readonly arbitrary: fc.Arbitrary<T>;
  request(drawn: T): HttpRequest;
  /** Problems of a 2xx reply. */
  success(drawn: T, reply: HttpReply, server: FuzzServer): string[] | Promise<string[]>;
  /** Whether an error reply is allowed for this draw (a valid body must be spoken). */
  mayRefuse(drawn: T, code: string): boolean;
}

async function errorProblems(server: FuzzServer, request: HttpRequest, reply: HttpReply): Promise<string[]> {
  const envelope = parseEnvelope(reply.body.toString('utf8'));
  if (Array.isArray(envelope)) return envelope;
  if (!CLIENT_ERROR_STATUSES.includes(reply.status)) return [`status ${reply.status} ${envelope.code}`];
  const again = await send(server.open.url, request);
  const second = parseEnvelope(again.body.toString('utf8'));
  const code = Array.isArray(second) ? second.join() : second.code;
  if (again.status !== reply.status || code !== envelope.code)
    return [`unstable: ${reply.status} ${envelope.code}, then ${again.status} ${code}`];
  return [];
}

async function check<T>(server: FuzzServer, property: RouteProperty<T>, drawn: T): Promise<string[]> {
  const request = property.request(drawn);
  const reply = await send(server.open.url, request);
  const problems: string[] = [];
  if (reply.status >= 200 && reply.status < 300) problems.push(...(await property.success(drawn, reply, server)));
  else {
    problems.push(...(await errorProblems(server, request, reply)));
    const code = (parseEnvelope(reply.body.toString('utf8')) as { code?: string }).code ?? '';
    if (problems.length === 0 && !property.mayRefuse(drawn, code))
      problems.push(
        `refused, which this body may not be: ${reply.status} ${reply.body.toString('utf8').slice(0, 300)}`,
      );
  }
  problems.push(...(await afterCaseProblems(server)));
  return problems;
}

type Body = Drawn<Record<string, unknown>>;

/** The top-level field of a msgpack body that is bytes, if any. */
const binaryField = (drawn: Body) => Object.keys(drawn.body).find((key) => drawn.body[key] instanceof Uint8Array);

const mayRefuseValid = (drawn: Body, code: string) => !drawn.valid || VALID_BODY_REFUSALS.includes(code);

const speech: RouteProperty<Body> = {
  name: 'speech',
  arbitrary: speechBody,
  request: (drawn) => jsonRequest(SPEECH_PATH, drawn.body),
  success: (drawn, reply) => speechReplyProblems(reply, speechExpectation(drawn.body)),
  mayRefuse: mayRefuseValid,
};

const ttsJson: RouteProperty<Body> = {
  name: 'tts json',
  arbitrary: ttsBody,
  request: (drawn) => jsonRequest(TTS_PATH, drawn.body),
  success: (drawn, reply) => speechReplyProblems(reply, ttsExpectation(drawn.body)),
  mayRefuse: mayRefuseValid,
};

const ttsMsgpack: RouteProperty<Body> = {
  name: 'tts msgpack',
  arbitrary: msgpackBody,
  request: (drawn) => msgpackRequest(drawn.body),
  success(drawn, reply) {
    const binary = binaryField(drawn);
    if (binary !== undefined) return [`binary '${binary}' was accepted (and spoken as text)`];
    return speechReplyProblems(reply, ttsExpectation(drawn.body));
  },
  // Bytes are refused while the body is parsed, before any field is validated.
  mayRefuse: (drawn, code) =>
    binaryField(drawn) === undefined ? mayRefuseValid(drawn, code) : code === 'BINARY_NOT_ALLOWED',
};

const voices: RouteProperty<DrawnUpload> = {
  name: 'voices multipart',
  arbitrary: upload,
  request(drawn) {
    const body = multipartBody(drawn.parts);
    return multipartRequest(drawn.cutAt === undefined ? body : body.subarray(0, Math.floor(body.length * drawn.cutAt)));
  },
  async success(drawn, reply, server) {
    if (reply.status !== 201) return [`status ${reply.status} for an upload`];
    const voice = JSON.parse(reply.body.toString()) as { id?: string; frames?: number; ref_text?: string };
    if (typeof voice.id !== 'string' || !(Number(voice.frames) > 0)) return [`upload reply ${reply.body}`];
    const problems = hasStructuralToken(voice.ref_text ?? '')
      ? [`a transcript with a structural token was stored`]
      : [];
    if (drawn.cutAt !== undefined) problems.push('a body cut short was stored');
    // The stored voice the other properties speak with stays (an overwrite keeps its name).
    if (voice.id === STORED_VOICE) return problems;
    // Keep the catalog small: each stored voice is deleted again, which must succeed.
    const removed = await send(server.open.url, { method: 'DELETE', path: `${VOICES_PATH}/${voice.id}` });
    if (removed.status !== 200) problems.push(`deleting ${voice.id}: ${removed.status} ${removed.body}`);
    return problems;
  },
  mayRefuse: () => true,
};

export const ROUTE_PROPERTIES = [speech, ttsJson, ttsMsgpack, voices] as const;

export interface PropertyReport {
  readonly runs: Record<string, number>;
  readonly failures: string[];
}

/** Runs each route's property for `runs` draws or, with `seconds`, for its share of that time. */
export async function runPropertyPass(
  server: FuzzServer,
  options: { seed: number; runs?: number; seconds?: number },
): Promise<PropertyReport> {
  const runs: Record<string, number> = {};
  const failures: string[] = [];
  for (const property of ROUTE_PROPERTIES as readonly RouteProperty<unknown>[]) {
    let count = 0;
    const details = await fc.check(
      fc.asyncProperty(property.arbitrary, async (drawn) => {
        count += 1;
        const problems = await check(server, property, drawn);
        if (problems.length > 0) throw new Error(problems.join('\n'));
      }),
      options.seconds === undefined
        ? { seed: options.seed, numRuns: options.runs ?? 50 }
        : {
            seed: options.seed,
            numRuns: Number.MAX_SAFE_INTEGER,
            interruptAfterTimeLimit: (options.seconds * 1000) / ROUTE_PROPERTIES.length,
            markInterruptAsFailure: false,
          },
    );
    runs[property.name] = count;
    if (details.failed) {
      const example = JSON.stringify(details.counterexample, (_key, value) =>
        value instanceof Uint8Array ? `<${value.length} bytes>` : value,
      );
      failures.push(
        `${property.name} (seed ${options.seed}, path ${details.counterexamplePath}): ${example?.slice(0, 600)}\n${String(details.errorInstance)}`,
      );
    }
  }
  return { runs, failures };
}
