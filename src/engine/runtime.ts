// What the engine drives: a speech model, a codec and a text front end, loaded together in the engine's thread (where
// a decode thread decodes, it loads the codec and the runtime holds only its rate and frame).
// Frames are [K] int32 (K = 10 codes); PCM is mono fp32 at `codec.sampleRate`, `codec.frameLength` samples a frame.
import type { CodecStream, Frame, PromptRows, SpeechModel } from '../model/types.ts';
import type { TextLimits } from '../text/limits.ts';
import type { RuntimeMemory } from './lane-budget.ts';

/** A reference voice ready for the prompt: its transcript and its encoded frames. */
export interface EncodedReference {
  readonly text: string;
  readonly frames: readonly Frame[];
}

/** The text side: long-text split and prompt assembly (which refuses structural tokens by name). */
export interface TextFrontEnd {
  /** Splits text into pieces of at most `budget` code points, at sentence or word boundaries where possible. */
  split(text: string, budget: number): string[];
  /** One piece's prompt rows and how many text tokens the user's text took. */
  prompt(request: PromptRequest): BuiltPrompt;
}

export interface PromptRequest {
  readonly text: string;
  readonly instructions: string | undefined;
  readonly references: readonly EncodedReference[];
  /** Normalise numbers, dates and units to words before tokenizing. */
  readonly normalize: boolean;
  /** The piece's text limits where the engine's differ from the defaults. */
  readonly limits?: Partial<TextLimits>;
}

export interface BuiltPrompt {
  readonly rows: PromptRows;
  readonly textTokens: number;
}

/** The codec as the engine uses it: streaming decode (references arrive encoded). */
/** One stream's new frames in a decode of several streams together. */
export interface StreamPush {
  readonly stream: CodecStream;
  readonly frames: readonly Frame[];
}

export interface EngineCodec {
  readonly sampleRate: number;
  readonly frameLength: number;
  openStream(): CodecStream;
  /**
   * Decodes several streams' new frames in one pass (a GPU codec's launch sequence for every lane), each result the
   * samples its push would have returned, or the error that refused it alone. Absent: each stream is pushed in turn.
   */
  decodeTogether?(pushes: readonly StreamPush[]): (Float32Array | Error)[];
}

export interface SpeechRuntime {
  readonly modelId: string;
  readonly model: SpeechModel;
  readonly codec: EngineCodec;
  readonly text: TextFrontEnd;
  /** Facts about the loaded checkpoint worth one line at start (tokenizer in use, config keys ignored or defaulted). */
  readonly notices?: readonly string[];
  /** Which backend runs the speech model (absent for the null runtime of tests). */
  readonly backend?: 'cpu' | 'cuda';
  /** Where the lane state lives on a device and its ledger (absent: host memory, budgeted in rows). */
  readonly memory?: RuntimeMemory;
}
