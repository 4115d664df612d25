"""Independent reference for the checkpoint readers and the dtype conversions (src/checkpoint/).

Usage: python tools/oracle/torch_save.py OUTPUT_DIR

Writes into OUTPUT_DIR:
  torch-save.pth            a codec.pth-like state dict saved by torch.save (protocol 2): an OrderedDict with
                            _metadata from a module with weight norm, fp32 / bf16 / fp16 / float8_e4m3fn / int64
                            tensors, a view with a storage offset, a transposed (non-contiguous) view, two tensors
                            sharing one storage, a nested dict and a non-tensor leaf
  torch-save.json           what torch.load reads back: per flattened name ('.'-joined), dtype, shape, the raw
                            little-endian bytes as hex, and the values widened to float (non-finite as strings)
  torch-save-protocol4.pth  a small state dict saved with pickle_protocol=4 (STACK_GLOBAL, MEMOIZE, FRAME)
  torch-save-protocol4.json the same description for it (read with weights_only=False: torch 2.11's weights_only
                            unpickler refuses protocol 4's FRAME opcode; the file is our own, just written)
  written-by-drama3.json    what torch.load(weights_only=True) reads from test/fixtures/checkpoint/
                            written-by-drama3.pth (our writer's output), or the error it raised
  dtype-oracle.json         torch's float32 -> bf16 / fp16 / float8_e4m3fn rounding of edge and tie values
                            (e4m3 after clamping to +-448, the saturating form), and e4m3 -> float32 for all 256
Runs on the CPU; needs only torch.
"""

import collections
import json
import math
import os
import random
import struct
import sys
import traceback
import zipfile

import torch
from torch import nn

OUR_DTYPE = {
    torch.float32: "F32",
    torch.bfloat16: "BF16",
    torch.float16: "F16",
    torch.float8_e4m3fn: "F8_E4M3",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.uint8: "U8",
}


def plain_float(value):
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def describe_tensor(tensor):
    flat = tensor.detach().reshape(-1).contiguous()
    entry = {
        "dtype": OUR_DTYPE[tensor.dtype],
        "shape": list(tensor.shape),
        "hex": bytes(flat.view(torch.uint8).tolist()).hex(),
        "storage_offset": tensor.storage_offset(),
        "stride": list(tensor.stride()),
        "contiguous": tensor.is_contiguous(),
    }
    if tensor.dtype in (torch.int64, torch.int32, torch.uint8):
        entry["values"] = [str(v) for v in flat.tolist()]
    else:
        entry["values"] = [plain_float(v) for v in flat.float().tolist()]
    return entry


def flatten(tree, prefix, out):
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flatten(value, f"{name}.", out)
        elif isinstance(value, torch.Tensor):
            out[name] = describe_tensor(value)
    return out


def archive_entries(path):
    with zipfile.ZipFile(path) as archive:
        return [
            {"name": info.filename, "size": info.file_size, "compress_type": info.compress_type}
            for info in archive.infolist()
        ]


def describe_file(path, weights_only=True):
    loaded = torch.load(path, weights_only=weights_only)
    return {
        "torch_version": torch.__version__,
        "root_type": type(loaded).__name__,
        "metadata": {k: dict(v) for k, v in getattr(loaded, "_metadata", {}).items()},
        "entries": archive_entries(path),
        "tensors": flatten(loaded, "", {}),
    }


def weight_normed_conv():
    """Conv1d(2, 3, 3) with weight norm stored as weight_g / weight_v, as codec.pth holds it."""
    conv = nn.Conv1d(2, 3, 3)
    if hasattr(torch.nn.utils, "weight_norm"):
        return torch.nn.utils.weight_norm(conv)
    # Without the old hook: keep the same two tensors as plain parameters.
    conv.weight_g = nn.Parameter(conv.weight.detach().norm(dim=(1, 2), keepdim=True))
    conv.weight_v = nn.Parameter(conv.weight.detach().clone())
    del conv.weight
    return conv


class TinyCodecBlock(nn.Module):
    """A codec-shaped module: a weight-normed conv (weight_g / weight_v), a Snake alpha and a norm."""

    def __init__(self):
        super().__init__()
        self.conv = weight_normed_conv()
        self.alpha = nn.Parameter(torch.ones(1, 3, 1) * 0.5)
        self.norm = nn.LayerNorm(3)


def codec_like_state_dict():
    torch.manual_seed(7)
    state = TinyCodecBlock().state_dict()  # an OrderedDict with _metadata
    edge = [1.0, -2.5, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, 3.0e38, 1.0 / 3.0]
    state["edge.f32"] = torch.tensor(edge, dtype=torch.float32)
    state["edge.bf16"] = torch.tensor(edge, dtype=torch.float32).to(torch.bfloat16)
    state["edge.f16"] = torch.tensor([1.0, -2.5, 0.0, -0.0, 65504.0, 6.0e-8, 1e-5, float("inf"), float("nan")]).half()
    state["edge.f8"] = torch.tensor([448.0, -448.0, 0.001953125, -0.0, 1.0, 0.1, -3.25]).to(torch.float8_e4m3fn)
    state["steps"] = torch.tensor([0, -1, 2**40, -(2**40), 7], dtype=torch.int64)
    base = torch.arange(24, dtype=torch.float32) * 0.5
    state["view.offset"] = base[5:11].view(2, 3)  # storage offset 5, shares base's storage
    state["view.base"] = base
    matrix = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    state["view.transposed"] = matrix.t()  # strides (1, 4): not contiguous
    shared = torch.arange(8, dtype=torch.float32).to(torch.bfloat16)
    state["shared.first"] = shared[:4]
    state["shared.second"] = shared[4:]
    state["nested"] = {"inner": {"weight": torch.full((2, 2), -1.5)}, "count": 3}
    state["epoch"] = 12  # a non-tensor leaf: readers skip it
    return state


def protocol4_state_dict():
    return collections.OrderedDict(
        [("a.weight", torch.tensor([[1.0, 2.0], [3.0, 4.0]])), ("a.bias", torch.tensor([0.5, -0.5]).bfloat16())]
    )


def bits_of(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


def dtype_oracle():
    inputs = set()
    for value in [0.0, -0.0, 1.0, -1.0, 0.5, 448.0, 464.0, 480.0, 500.0, -1000.0, 65504.0, 65519.0, 65520.0,
                  65536.0, 1e-45, 1e-40, 6e-8, 3e-8, 2.0**-24, 2.0**-25, 2.0**-14, 2.0**-6, 2.0**-9, 2.0**-10,
                  3.0e38, 3.4028234e38, float("inf"), float("-inf"), float("nan")]:
        inputs.add(bits_of(value))
    rng = random.Random(1234)
    for _ in range(150):
        inputs.add(rng.getrandbits(32))
        exponent = rng.randrange(100, 145)
        mantissa = rng.getrandbits(23)
        sign = rng.getrandbits(1) << 31
        inputs.add(sign | (exponent << 23) | mantissa)
        # exact ties for bf16 (low 16 bits 0x8000), fp16 normal (low 13 bits 0x1000) and e4m3 normal (low 20 bits)
        inputs.add(sign | (exponent << 23) | (mantissa & ~0xFFFF) | 0x8000)
        inputs.add(sign | (rng.randrange(113, 143) << 23) | (mantissa & ~0x1FFF) | 0x1000)
        inputs.add(sign | (rng.randrange(121, 136) << 23) | (mantissa & ~0xFFFFF) | 0x80000)
        # subnormal ranges of fp16 (below 2^-14) and e4m3 (below 2^-6), ties included
        inputs.add(sign | (rng.randrange(100, 113) << 23) | mantissa)
        inputs.add(sign | (rng.randrange(110, 121) << 23) | mantissa)
        inputs.add(bits_of((rng.randrange(0, 2048) + 0.5) * 2.0**-24))
        inputs.add(bits_of((rng.randrange(0, 16) + 0.5) * 2.0**-9))
    ordered = sorted(inputs)
    # Built from the bit patterns themselves, so NaN payloads and subnormals reach torch unchanged.
    x = torch.tensor([b - (1 << 32) if b >= 1 << 31 else b for b in ordered], dtype=torch.int32).view(torch.float32)
    return {
        "torch_version": torch.__version__,
        "f32_bits": ordered,
        "bf16_bits": (x.bfloat16().view(torch.int16).int() & 0xFFFF).tolist(),
        "f16_bits": (x.half().view(torch.int16).int() & 0xFFFF).tolist(),
        "e4m3_bits_saturated": x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8).int().tolist(),
        "e4m3_bits_torch": x.to(torch.float8_e4m3fn).view(torch.uint8).int().tolist(),
        "e4m3_decode_f32_bits": [
            bits_of(v) for v in torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float().tolist()
        ],
    }


def write_json(path, value, indent=1):
    with open(path, "w") as handle:
        json.dump(value, handle, indent=indent, allow_nan=False)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_save.py OUTPUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    failures = 0

    steps = [
        ("torch-save", lambda: torch.save(codec_like_state_dict(), os.path.join(out, "torch-save.pth"))),
        ("torch-save describe", lambda: write_json(os.path.join(out, "torch-save.json"),
                                                   describe_file(os.path.join(out, "torch-save.pth")))),
        ("protocol 4", lambda: torch.save(protocol4_state_dict(), os.path.join(out, "torch-save-protocol4.pth"),
                                          pickle_protocol=4)),
        ("protocol 4 describe", lambda: write_json(os.path.join(out, "torch-save-protocol4.json"),
                                                   describe_file(os.path.join(out, "torch-save-protocol4.pth"),
                                                                 weights_only=False))),
        ("dtype oracle", lambda: write_json(os.path.join(out, "dtype-oracle.json"), dtype_oracle(), None)),
    ]
    for name, step in steps:
        try:
            step()
            print(f"ok: {name}")
        except Exception:
            failures += 1
            print(f"FAILED: {name}")
            traceback.print_exc()

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ours = os.path.join(root, "test", "fixtures", "checkpoint", "written-by-drama3.pth")
    try:
        report = {"loaded": True, **describe_file(ours)}
        print(f"ok: torch.load(weights_only=True) of our writer's file: {len(report['tensors'])} tensors")
    except Exception as error:
        failures += 1
        report = {"loaded": False, "error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
        print("FAILED: torch.load of our writer's file")
        traceback.print_exc()
    write_json(os.path.join(out, "written-by-drama3.json"), report)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
