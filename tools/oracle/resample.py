"""Reference outputs of torchaudio.functional.resample for the TypeScript resampler's tests.

Usage: python resample.py OUTPUT_DIR

Writes OUTPUT_DIR/resample_fixtures.tar.gz holding, per case (signal x rate pair):
  <case>.input.f32    the float32 input signal (little-endian float32, mono)
  <case>.float32.f32  torchaudio.functional.resample on the float32 input (CPU, float32 kernel and conv)
  <case>.float64.f32  the same call on the input widened to float64, rounded to float32 at the end
and manifest.json (rates, lengths, versions, file names). The float32 kernels torchaudio builds go to a
separate kernels.tar.gz that is for debugging and is not committed.
Defaults of the call: sinc_interp_hann, lowpass_filter_width 6, rolloff 0.99.
"""

import io
import json
import math
import sys
import tarfile

import numpy as np
import torch
import torchaudio
import torchaudio.functional as audio_functional

RATE_PAIRS = [(44100, 24000), (24000, 44100), (16000, 44100), (48000, 44100)]
SECONDS = 0.1
# An odd extra length so that the input length is not a multiple of the reduced input rate.
EXTRA_SAMPLES = 37


def chirp(rate: int, length: int) -> np.ndarray:
    """Linear sweep from 50 Hz to 0.45 * rate at amplitude 0.5 (crosses the lowpass when downsampling)."""
    t = np.arange(length, dtype=np.float64) / rate
    duration = length / rate
    start, stop = 50.0, 0.45 * rate
    phase = 2.0 * math.pi * (start * t + (stop - start) * t * t / (2.0 * duration))
    return (0.5 * np.sin(phase)).astype(np.float32)


def noise(rate: int, length: int) -> np.ndarray:
    """Uniform white noise in [-0.5, 0.5), seeded by the rate so each case is reproducible."""
    generator = np.random.default_rng(1000 + rate)
    return generator.uniform(-0.5, 0.5, length).astype(np.float32)


def add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    archive.addfile(info, io.BytesIO(data))


def float32_bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array, dtype="<f4").tobytes()


def dump_kernel(archive: tarfile.TarFile, from_rate: int, to_rate: int) -> None:
    """The float32 kernel torchaudio builds for a float32 input; a private helper, so failure is not fatal."""
    try:
        from torchaudio.functional import functional as implementation

        gcd = math.gcd(from_rate, to_rate)
        kernel, width = implementation._get_sinc_resample_kernel(
            from_rate, to_rate, gcd, 6, 0.99, "sinc_interp_hann", None, torch.device("cpu"), torch.float32
        )
        kernel_array = kernel.reshape(kernel.shape[0], -1).numpy()
        add_bytes(archive, f"kernel_{from_rate}_{to_rate}.f32", float32_bytes(kernel_array))
        shape = {"width": width, "shape": list(kernel_array.shape)}
        add_bytes(archive, f"kernel_{from_rate}_{to_rate}.json", json.dumps(shape).encode())
    except Exception as error:  # noqa: BLE001
        print("kernel dump failed", from_rate, to_rate, repr(error))


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python resample.py OUTPUT_DIR")
    output_dir = sys.argv[1]
    torch.set_num_threads(1)
    cases = []
    fixtures = tarfile.open(f"{output_dir}/resample_fixtures.tar.gz", "w:gz")
    kernels = tarfile.open(f"{output_dir}/kernels.tar.gz", "w:gz")
    for from_rate, to_rate in RATE_PAIRS:
        length = int(round(SECONDS * from_rate)) + EXTRA_SAMPLES
        for signal_name, make in (("chirp", chirp), ("noise", noise)):
            signal = make(from_rate, length)
            x32 = torch.from_numpy(signal)[None, :]
            y32 = audio_functional.resample(x32, from_rate, to_rate)[0].numpy()
            y64 = audio_functional.resample(x32.to(torch.float64), from_rate, to_rate)[0].numpy()
            case = f"{signal_name}_{from_rate}_{to_rate}"
            add_bytes(fixtures, f"{case}.input.f32", float32_bytes(signal))
            add_bytes(fixtures, f"{case}.float32.f32", float32_bytes(y32))
            add_bytes(fixtures, f"{case}.float64.f32", float32_bytes(y64))
            torch_disagreement = float(np.max(np.abs(y32.astype(np.float64) - y64)))
            cases.append(
                {
                    "name": case,
                    "signal": signal_name,
                    "fromRate": from_rate,
                    "toRate": to_rate,
                    "inputLength": length,
                    "outputLength": int(y32.shape[0]),
                    "float32VsFloat64MaxAbs": torch_disagreement,
                    "files": {
                        "input": f"{case}.input.f32",
                        "float32": f"{case}.float32.f32",
                        "float64": f"{case}.float64.f32",
                    },
                }
            )
            print(case, length, y32.shape[0], "float32 vs float64 max abs", torch_disagreement)
        dump_kernel(kernels, from_rate, to_rate)
    manifest = {
        "torch": torch.__version__,
        "torchaudio": torchaudio.__version__,
        "call": "torchaudio.functional.resample(x, fromRate, toRate) with defaults, CPU, one thread",
        "layout": "little-endian float32, mono, one file per array",
        "cases": cases,
    }
    add_bytes(fixtures, "manifest.json", json.dumps(manifest, indent=2).encode())
    fixtures.close()
    kernels.close()
    print(json.dumps({k: v for k, v in manifest.items() if k != "cases"}))


if __name__ == "__main__":
    main()
