"""Independent check of our .pth writer on a whole file: torch.load(weights_only=True) on a codec.pth that our
`synth` wrote, printing each tensor's dtype, shape and float64 sum as JSON, for comparison with our own reader.

Usage: python tools/oracle/torch_load_check.py CODEC_PTH OUTPUT_JSON
"""

import json
import sys

import torch


def main() -> None:
    state = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
    out = {}
    for name, tensor in state.items():
        out[name] = {
            "dtype": str(tensor.dtype),
            "shape": list(tensor.shape),
            "sum": float(tensor.double().sum()),
        }
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"torch {torch.__version__} loaded {len(out)} tensors with weights_only=True")


if __name__ == "__main__":
    main()
