"""Independent reference ids for drama3's tokenizer: Python `tokenizers` on the synthetic checkpoint's tokenizer.json.

Runs on any machine with Python `tokenizers` 0.23.2 (`pip install tokenizers==0.23.2`); it needs no GPU, so the
committed fixture was produced on the development machine with that same package, the same independent reference
the GPU machine carries.

Usage:
    python tools/oracle/tokenizer.py CHECKPOINT_DIR OUTPUT_DIR

CHECKPOINT_DIR holds the tokenizer.json that `drama3 synth` writes (buildSyntheticTokenizerFiles in
src/text/vocabulary.ts). Writes into OUTPUT_DIR (test/fixtures/text/):
- tokenizer-ids.json: the file's SHA-256, the `tokenizers` version and, for each of 60 strings, the ids of
  `encode(text, add_special_tokens=False)`;
- prompt-golden.json: three requests and their reference-bracket-v1 rows (MODEL.md section 5), laid out here
  independently of src/text/prompt.ts: token ids [P], codes [P][10] (-1 on text rows) and reference_rows.
"""

import hashlib
import json
import sys
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer


def every_added_token(tokenizer_json: dict) -> str:
    """All added tokens (Qwen's and Drama's) back to back, in id order."""
    return "".join(token["content"] for token in sorted(tokenizer_json["added_tokens"], key=lambda t: t["id"]))


CASES = [
    # ASCII
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "",
    " leading space",
    "trailing space ",
    "It's we're they've I'm you'll he'd",
    "UPPER lower MiXeD CaSe",
    "email: first.last@example.com",
    "https://example.com/path?q=1&r=two#frag",
    "C:\\path\\to\\file.txt",
    "supercalifragilisticexpialidocious",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "...!!!???---***",
    # runs of spaces, tabs and line breaks
    "   ",
    "multiple     spaces    here",
    "a\tb\t\tc\t\t\t",
    "line one\nline two\r\nline three",
    "\n\n\n",
    " \t \n \t ",
    # digits
    "0123456789",
    "3.14159 and 2,718,281",
    "$1,234.56 or 45% off",
    "1st 2nd 3rd 4th 21st",
    "12:30 PM on 2024-03-05",
    # CJK and other scripts
    "你好，世界！",
    "日本語のテキストです。",
    "한국어 문장입니다.",
    "中文English混合123",
    "Привет, мир",
    "Γειά σου Κόσμε",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    # emoji
    "🎉🎊",
    "👍🏽 family 👨‍👩‍👧‍👦",
    "flags 🇺🇸🇯🇵",
    # accents, composed and decomposed (the normalizer is NFC)
    "café naïve résumé",
    "Ångström Ørsted",
    "Straße groß",
    "e\u0301 and n\u0303",
    "ﬁ ligature ①②③",
    "“smart quotes” ‘single’ — em dash",
    "a\u200bb a\u00a0b",
    "\u0001control\u007f",
    # inline directions (plain text)
    "[sighs] I can't believe it.",
    "<whisper>quiet now</whisper>",
    # structural and added tokens inside text
    "<|semantic:12|>",
    "before<|semantic:12|>after",
    "<|semantic:12",
    "<|semantic:4096|>",
    "<|speaker:0|>Hello<|speaker:1|>Hi there",
    "<|im_start|>user\nhi<|im_end|>\n",
    "<|voice|><|text|><|interleave|>",
    "<|endoftext|>",
    "<think>hmm</think>",
    "<tool_call>{}</tool_call>",
    "<|vision_start|><|image_pad|><|vision_end|>",
    "<|speaker:15|><|speaker:16|>",
    "∑∫√∞ ≠ ≤",
]


def reference_codes(frames: int, seed: int) -> list[list[int]]:
    """Deterministic code rows [F][10]: code[0] in 0..4095, code[1..9] in 0..1023."""
    return [[(seed * 977 + f * 131 + k * 37) % (4096 if k == 0 else 1024) for k in range(10)] for f in range(frames)]


PROMPT_REQUESTS = [
    {"name": "default voice", "request": {"text": "Hello there, how are you today?"}},
    {
        "name": "two references",
        "request": {
            "text": "Nice to meet you.",
            "references": [
                {"text": "This is the first voice.", "codes": reference_codes(3, 1)},
                {"text": "And here is another one.", "codes": reference_codes(2, 2)},
            ],
        },
    },
    {
        "name": "three-speaker dialogue",
        "request": {
            "text": "<|speaker:0|>Where were you?<|speaker:1|>Out. [sighs] Walking.<|speaker:2|>Both of you, hush.",
            "instructions": "tense, quiet",
        },
    },
]


def prompt_rows(tokenizer: Tokenizer, request: dict) -> dict:
    """The layout: system turn (with references: tagged transcripts, then every code row), user turn, open voice."""
    tokens: list[int] = []
    codes: list[list[int]] = []

    def text(value: str) -> None:
        for token in tokenizer.encode(value, add_special_tokens=False).ids:
            tokens.append(token)
            codes.append([-1] * 10)

    references = request.get("references", [])
    if not references:
        text("<|im_start|>system\nconvert the provided text to speech<|im_end|>\n")
    else:
        text("<|im_start|>system\nconvert the provided text to speech reference to the following:\n\nText:\n")
        text("\n".join(f"<|speaker:{i}|>{reference['text']}" for i, reference in enumerate(references)))
        text("\n\nSpeech:\n")
        semantic_begin = tokenizer.token_to_id("<|semantic:0|>")
        for reference in references:
            for row in reference["codes"]:
                tokens.append(semantic_begin + row[0])
                codes.append(list(row))
        text("<|im_end|>\n")
    reference_rows = len(tokens)
    user = request["text"] if request["text"].startswith("<|speaker:") else "<|speaker:0|>" + request["text"]
    if "instructions" in request:
        tag_end = user.index("|>") + 2
        user = f"{user[:tag_end]}[{request['instructions']}] {user[tag_end:]}"
    text("<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n<|voice|>")
    return {"tokens": tokens, "codes": codes, "reference_rows": reference_rows}


def main() -> None:
    checkpoint_dir = Path(sys.argv[1])
    output_dir = Path(sys.argv[2])
    tokenizer_path = checkpoint_dir / "tokenizer.json"
    raw = tokenizer_path.read_bytes()
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    texts = [*CASES, every_added_token(json.loads(raw))]
    assert len(texts) == 60, len(texts)
    cases = [{"text": text, "ids": tokenizer.encode(text, add_special_tokens=False).ids} for text in texts]
    fixture = {
        "tokenizers_version": tokenizers.__version__,
        "tokenizer_json_sha256": hashlib.sha256(raw).hexdigest(),
        "vocabulary_size": tokenizer.get_vocab_size(with_added_tokens=True),
        "semantic_begin": tokenizer.token_to_id("<|semantic:0|>"),
        "cases": cases,
    }
    (output_dir / "tokenizer-ids.json").write_text(json.dumps(fixture, ensure_ascii=True) + "\n")
    golden = [{**case, **prompt_rows(tokenizer, case["request"])} for case in PROMPT_REQUESTS]
    (output_dir / "prompt-golden.json").write_text(json.dumps({"cases": golden}) + "\n")
    print(f"wrote {len(cases)} tokenizer cases and {len(golden)} prompt cases to {output_dir}")


if __name__ == "__main__":
    main()
