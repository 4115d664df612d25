"""PyTorch baseline for bench/gpu-codec.ts: the codec decode at the real geometry on the GPU, built from the
independent reference (tools/oracle/codec.py) with random weights, weight norm folded (removed) as a server would.
Decodes each batch whole (as the official Python servers decode a chunk), B lanes of F frames at once, in fp32 and
in fp16 (model.half(), the release's precision), timed with CUDA events after a warm-up, median of 3; and one frame
alone. Prints one table and writes pytorch-codec.json to OUTPUT_DIR.

Usage: python bench/pytorch-codec.py OUTPUT_DIR
"""

import json
import os
import sys
import time

import torch
from torch.nn.utils import parametrize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "oracle"))
import codec as reference  # noqa: E402

TRANSFORMER = {
    "n_layer": 8,
    "dim": 1024,
    "n_head": 16,
    "head_dim": 64,
    "intermediate_size": 3072,
    "window_size": 128,
    "rope_base": 10000,
    "norm_eps": 1e-5,
}
# The real codec (src/codec/config.ts REAL_CODEC_CONFIG), in the oracle's config form.
REAL = dict(
    reference.CONFIG,
    latent_dim=1024,
    convnext_hidden_dim=4096,
    post_module=TRANSFORMER,
    pre_module=TRANSFORMER,
    decoder_dim=1536,
    encoder_dim=64,
    encoder_transformer=dict(TRANSFORMER, n_layer=4, window_size=512),
)
LANES = [1, 8, 64]
FRAMES = 52  # bench/gpu-codec.ts decodes 4 + 16 + 16 + 16 frames per lane
RUNS = 3


def fold_weight_norm(model):
    for module in list(model.modules()):
        if parametrize.is_parametrized(module, "weight"):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)


def random_codes(lanes, frames, device):
    semantic = torch.randint(0, REAL["semantic_codebook_size"], (lanes, 1, frames), device=device)
    residual = torch.randint(0, REAL["codebook_size"], (lanes, REAL["n_codebooks"], frames), device=device)
    return torch.cat([semantic, residual], 1)


def time_decode(model, codes):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    model.decode(codes, {})
    times = []
    for _ in range(RUNS):
        torch.cuda.synchronize()
        start.record()
        model.decode(codes, {})
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    device = torch.device("cuda")
    started = time.time()
    # The reference builds its masks and RoPE tables with torch.arange: on the GPU, beside the activations.
    model = reference.Codec(REAL)
    reference.randomise(model, torch.Generator().manual_seed(reference.SEED))
    fold_weight_norm(model)
    model = model.to(device).eval()
    torch.set_default_device(device)
    print(f"PyTorch {torch.__version__}, codec built in {time.time() - started:.1f} s on {torch.cuda.get_device_name()}")
    frames_per_second = REAL["sample_rate"] / REAL["frame_length"]
    rows = []
    with torch.inference_mode():
        for dtype, name in [(torch.float16, "fp16"), (torch.float32, "fp32")]:
            model = model.to(dtype)
            first = time_decode(model, random_codes(1, 1, device))
            for lanes in LANES:
                try:
                    ms = time_decode(model, random_codes(lanes, FRAMES, device))
                    rate = lanes * FRAMES / frames_per_second / (ms / 1000)
                    rows.append({"precision": name, "lanes": lanes, "ms": ms, "audioSecondsPerSecond": rate, "firstFrameMs": first})
                except torch.cuda.OutOfMemoryError as error:
                    rows.append({"precision": name, "lanes": lanes, "error": str(error).splitlines()[0]})
                torch.cuda.empty_cache()
    print(f"\n## PyTorch codec decode, whole batches of {FRAMES} frames per lane, median of {RUNS}")
    print("| precision | lanes | ms per batch | audio-s/s | first frame ms |")
    print("|---|---|---|---|---|")
    for row in rows:
        if "error" in row:
            print(f"| {row['precision']} | {row['lanes']} | {row['error']} | | |")
        else:
            print(
                f"| {row['precision']} | {row['lanes']} | {row['ms']:.1f} | {row['audioSecondsPerSecond']:.1f} | "
                f"{row['firstFrameMs']:.2f} |"
            )
    with open(os.path.join(out_dir, "pytorch-codec.json"), "w") as handle:
        json.dump({"torch": torch.__version__, "framesPerLane": FRAMES, "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
