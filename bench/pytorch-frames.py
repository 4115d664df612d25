"""The PyTorch baseline for bench/gpu-frames.ts: transformers' qwen3_5_moe at Drama 3's real backbone geometry.

Builds Qwen3_5MoeForCausalLM (hidden 2048, 40 layers 3 linear : 1 full, 16 q / 2 kv heads of 256, Gated DeltaNet
16 key / 32 value heads of 128, 256 experts top-8 of 512, shared expert 512, vocab 155840) in bf16 on the GPU with
random weights, with flash-linear-attention's kernels for the delta rule when it can be imported (carry its wheels:
fla-core and flash-linear-attention 0.5.2, installed with `pip install --no-deps --target DIR` and put on PYTHONPATH
before this runs), and times:
  decode steps at batch 1 (experts 'batched_mm') and batch 64 (experts 'grouped_mm'), median of 5 runs of 10 steps,
  prefill of 4096 rows at batch 1 (median of 3).
Backbone only (no tower, no codec, the full-vocabulary head), as transformers runs it. Prints one table and writes
pytorch-frames.json into OUTPUT_DIR.

Usage: python3 bench/pytorch-frames.py OUTPUT_DIR
"""

import json
import os
import statistics
import sys
import time

import torch

try:
    import fla  # noqa: F401  (must be importable before transformers' modeling module is imported)

    FLA = getattr(fla, "__version__", "yes")
except Exception as error:  # the torch fallback still runs, and the table says so
    FLA = f"absent ({type(error).__name__})"

import transformers
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig
from transformers.cache_utils import DynamicCache

VOCAB = 155840
LAYER_TYPES = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 10


def build_model() -> torch.nn.Module:
    config = Qwen3_5MoeTextConfig(
        vocab_size=VOCAB,
        hidden_size=2048,
        num_hidden_layers=40,
        layer_types=LAYER_TYPES,
        num_attention_heads=16,
        num_key_value_heads=2,
        head_dim=256,
        linear_num_key_heads=16,
        linear_num_value_heads=32,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_conv_kernel_dim=4,
        num_experts=256,
        num_experts_per_tok=8,
        moe_intermediate_size=512,
        shared_expert_intermediate_size=512,
        rms_norm_eps=1e-6,
        max_position_embeddings=262144,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
    )
    with torch.device("cuda"):
        model = Qwen3_5MoeForCausalLM._from_config(config, dtype=torch.bfloat16)
    return model.eval()


def set_experts(model: torch.nn.Module, implementation: str) -> None:
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None:
            config._experts_implementation = implementation


def timed(run, repeats: int) -> float:
    """Median milliseconds of `repeats` calls of run() (CUDA events around each)."""
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


@torch.inference_mode()
def decode_ms(model, batch: int, steps: int = 10, prompt: int = 16) -> float:
    """Median milliseconds per decode step at `batch` after a `prompt`-row prefill."""
    generator = torch.Generator(device="cuda").manual_seed(batch)
    ids = torch.randint(0, VOCAB, (batch, prompt), device="cuda", generator=generator)
    cache = DynamicCache(config=model.config)
    out = model(input_ids=ids, past_key_values=cache, use_cache=True)
    next_ids = out.logits[:, -1:].argmax(-1)

    def run():
        nonlocal next_ids
        for _ in range(steps):
            result = model(input_ids=next_ids, past_key_values=cache, use_cache=True)
            next_ids = result.logits[:, -1:].argmax(-1)

    run()  # warm-up (kernel compilation, autotuning)
    return timed(run, 5) / steps


@torch.inference_mode()
def prefill_rows_per_second(model, rows: int = 4096) -> float:
    ids = torch.randint(0, VOCAB, (1, rows), device="cuda")

    def run():
        model(input_ids=ids, past_key_values=DynamicCache(config=model.config), use_cache=True)

    run()
    return rows / (timed(run, 3) / 1000)


def main() -> None:
    output = sys.argv[1] if len(sys.argv) > 1 else "."
    started = time.time()
    model = build_model()
    built_s = time.time() - started
    weight_gib = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**30
    results = {"torch": torch.__version__, "transformers": transformers.__version__, "fla": FLA}
    results["build_s"] = round(built_s, 1)
    results["weights_gib"] = round(weight_gib, 1)
    set_experts(model, "batched_mm")
    results["decode_ms_batch1_batched_mm"] = decode_ms(model, 1)
    set_experts(model, "grouped_mm")
    results["decode_ms_batch1_grouped_mm"] = decode_ms(model, 1)
    results["decode_ms_batch64_grouped_mm"] = decode_ms(model, 64)
    results["prefill_rows_per_s_4096"] = prefill_rows_per_second(model)
    results["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
    print(f"PyTorch baseline: torch {results['torch']}, transformers {results['transformers']}, fla {FLA}")
    print(f"  built in {built_s:.1f} s, weights {weight_gib:.1f} GiB, peak {results['peak_gib']} GiB")
    print("| what | ms per step | frames/s (rows/s) |")
    print("|---|---|---|")
    for key, batch in [
        ("decode_ms_batch1_batched_mm", 1),
        ("decode_ms_batch1_grouped_mm", 1),
        ("decode_ms_batch64_grouped_mm", 64),
    ]:
        print(f"| {key} | {results[key]:.2f} | {batch * 1000 / results[key]:.1f} |")
    print(f"| prefill 4096 rows | | {results['prefill_rows_per_s_4096']:.0f} |")
    os.makedirs(output, exist_ok=True)
    with open(os.path.join(output, "pytorch-frames.json"), "w") as handle:
        json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
