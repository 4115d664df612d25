// The whole HTTP fuzz table, by route family.
import type { HttpCase } from './case.ts';
import { PROTOCOL_CASES } from './cases-protocol.ts';
import { SPEECH_CASES } from './cases-speech.ts';
import { TTS_CASES } from './cases-tts.ts';
import { VOICE_CASES } from './cases-voices.ts';

export const TABLES: Readonly<Record<string, readonly HttpCase[]>> = {
  speech: SPEECH_CASES,
  tts: TTS_CASES,
  voices: VOICE_CASES,
  protocol: PROTOCOL_CASES,
};

export const TABLE_CASE_COUNT = Object.values(TABLES).reduce((sum, cases) => sum + cases.length, 0);
