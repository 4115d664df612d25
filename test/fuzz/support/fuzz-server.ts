// The server the fuzz harness attacks: the null engine with a voice catalog in a fresh folder (so that stray files
// can be seen), a small body limit, and a second app that requires an API key. Also the checks every case ends with:
// the catalog folder holds exactly the listed voices and nothing half-written, and a good request still succeeds.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openVoices } from '../../../src/cli/voices.ts';
import { startTestServer, type TestServer } from '../../server/support.ts';
import { toneWav } from '../../voices/wav-fixture.ts';
import { speechReplyProblems } from './audio-checks.ts';
import { send } from './http-client.ts';
import { jsonRequest, multipartRequest, SPEECH_PATH, speechExpectation, VOICES_PATH } from './requests.ts';

/** The key the keyed app wants. */
export const API_KEY = 'fuzz-key-0123456789';
/** A voice stored before the cases run, for cases that speak with one or clash with its name. */
export const STORED_VOICE = 'fuzz-stored';
/** Bodies over this many bytes are refused with 413. */
export const FUZZ_BODY_LIMIT = 2 * 1024 * 1024;

export interface FuzzServer {
  readonly open: TestServer;
  readonly keyed: TestServer;
  readonly catalogDir: string;
  close(): Promise<void>;
}

export async function startFuzzServer(): Promise<FuzzServer> {
  const catalogDir = await mkdtemp(join(tmpdir(), 'drama3-fuzz-voices-'));
  const open = await startTestServer({
    settings: { lanes: 4 },
    queueLimit: 64,
    app: { ...(await openVoices(catalogDir, { kind: 'null' })), bodyLimit: FUZZ_BODY_LIMIT },
  });
  const keyed = await startTestServer({ app: { apiKeys: [API_KEY] } });
  const stored = await send(
    open.url,
    multipartRequest([
      { name: 'name', value: STORED_VOICE },
      { name: 'text', value: 'A voice stored for the fuzz cases.' },
      { name: 'audio', value: toneWav(1), filename: 'stored.wav' },
    ]),
  );
  if (stored.status !== 201) throw new Error(`could not store the fuzz voice: ${stored.status} ${stored.body}`);
  return {
    open,
    keyed,
    catalogDir,
    async close() {
      await Promise.all([open.close(), keyed.close()]);
      await rm(catalogDir, { recursive: true, force: true });
    },
  };
}

const GOOD_BODY = { input: 'the next good request', response_format: 'pcm', max_frames: 2, seed: 1 };

/** Problems found after a case: the next good request fails, or the catalog folder holds something unlisted. */
export async function afterCaseProblems(server: FuzzServer): Promise<string[]> {
  const problems: string[] = [];
  const good = await send(server.open.url, jsonRequest(SPEECH_PATH, GOOD_BODY));
  for (const problem of speechReplyProblems(good, speechExpectation(GOOD_BODY)))
    problems.push(`the next good request: ${problem} ${good.status >= 400 ? good.body.toString() : ''}`);
  const listed = await send(server.open.url, { method: 'GET', path: VOICES_PATH });
  const names = (JSON.parse(listed.body.toString()) as { voices: { id: string }[] }).voices.map((voice) => voice.id);
  const entries = await readdir(server.catalogDir, { withFileTypes: true });
  const stray = entries.filter((entry) => !entry.isDirectory() || !names.includes(entry.name));
  if (stray.length > 0) problems.push(`stray entries in the catalog folder: ${stray.map((entry) => entry.name)}`);
  if (entries.length !== names.length) problems.push(`${names.length} voices listed, ${entries.length} folders`);
  return problems;
}
