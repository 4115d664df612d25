"""Independent reference for the codec (MODEL.md section 6): the Fish modified DAC at tiny width, built from torch.nn
primitives with random weights and weight norm on. Writes codec.pth (torch.save of the state dict, weight norm as
weight_g / weight_v pairs), the decode of 40 frames, the encode of 2 s of audio, and each stage's output.

Usage: python tools/oracle/codec.py OUTPUT_DIR
Everything is packed into OUTPUT_DIR/codec-fixtures.tar.gz (one folder, codec-fixtures/).
Float arrays are little-endian float32 .bin files, codes int32; manifest.json lists name, file, dtype, shape.
Activations are channels-first [C, T]; stages sampled at a high rate keep only their first PREFIX_FRAMES frames.
The model runs on the CPU in fp32 (and once in fp64 for the decode, to show the fp32 noise floor).
"""

import json
import math
import os
import sys
import tarfile
import tempfile
import traceback

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

# The tiny codec, in the codec_config form of config.json (mirrors TINY_CODEC_CONFIG in src/codec/config.ts).
TINY_TRANSFORMER = {
    "n_layer": 2,
    "dim": 64,
    "n_head": 2,
    "head_dim": 32,
    "intermediate_size": 192,
    "window_size": 16,
    "rope_base": 10000,
    "norm_eps": 1e-5,
}
CONFIG = {
    "sample_rate": 44100,
    "frame_length": 2048,
    "semantic_codebook_size": 4096,
    "n_codebooks": 9,
    "codebook_size": 1024,
    "codebook_dim": 8,
    "latent_dim": 64,
    "downsample_factor": [2, 2],
    "convnext_hidden_dim": 256,
    "post_module": TINY_TRANSFORMER,
    "pre_module": TINY_TRANSFORMER,
    "decoder_dim": 64,
    "decoder_rates": [8, 8, 4, 2],
    "encoder_dim": 4,
    "encoder_rates": [2, 4, 8, 8],
    "encoder_transformer": dict(TINY_TRANSFORMER, window_size=64),
}
DECODE_FRAMES = 40
ENCODE_SECONDS = 2.0
PREFIX_FRAMES = 4
SEED = 1234


def causal_padding(length, kernel, stride, padding):
    """Right padding so that the strided conv covers every input sample (the modified DAC's rule)."""
    frames = (length - kernel + padding) / stride + 1
    ideal = (math.ceil(frames) - 1) * stride + (kernel - padding)
    return ideal - length


class CausalConv(nn.Module):
    def __init__(self, cin, cout, kernel, stride=1, dilation=1, groups=1, normed=True):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel, stride=stride, dilation=dilation, groups=groups)
        if normed:
            self.conv = weight_norm(self.conv)
        self.stride = stride
        self.span = (kernel - 1) * dilation + 1
        self.padding = self.span - stride

    def forward(self, x):
        extra = causal_padding(x.shape[-1], self.span, self.stride, self.padding)
        return self.conv(F.pad(x, (self.padding, extra)))


class CausalTransConv(nn.Module):
    def __init__(self, cin, cout, kernel, stride, normed=True):
        super().__init__()
        self.conv = nn.ConvTranspose1d(cin, cout, kernel, stride=stride)
        if normed:
            self.conv = weight_norm(self.conv)
        self.trim = kernel - stride

    def forward(self, x):
        y = self.conv(x)
        return y[..., : y.shape[-1] - self.trim] if self.trim > 0 else y


class Snake(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, channels, 1))

    def forward(self, x):
        return x + (self.alpha + 1e-9).reciprocal() * torch.sin(self.alpha * x).pow(2)


class ResidualUnit(nn.Module):
    def __init__(self, dim, dilation):
        super().__init__()
        self.block = nn.Sequential(Snake(dim), CausalConv(dim, dim, 7, dilation=dilation), Snake(dim), CausalConv(dim, dim, 1))

    def forward(self, x):
        return x + self.block(x)


class ConvNeXt(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.dwconv = CausalConv(dim, dim, 7, groups=dim, normed=False)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(hidden, dim)
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = self.dwconv(x).transpose(1, 2)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).transpose(1, 2)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps) * self.weight


class LayerScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.gamma


def rope_table(rows, head_dim, base, dtype):
    """cos, sin [rows, head_dim/2] for interleaved pairs; angles in float64, then cast."""
    inverse = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.outer(torch.arange(rows, dtype=torch.float64), inverse)
    return torch.cos(angles).to(dtype), torch.sin(angles).to(dtype)


def apply_rope(x, cos, sin):
    """x [B, T, H, D]: rotates pairs (2i, 2i+1) by the row's angle."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    real, imag = pairs[..., 0], pairs[..., 1]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack([real * c - imag * s, imag * c + real * s], dim=-1).flatten(3)


class Attention(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.heads, self.head_dim = t["n_head"], t["head_dim"]
        width = self.heads * self.head_dim
        self.wqkv = nn.Linear(t["dim"], 3 * width, bias=False)
        self.wo = nn.Linear(width, t["dim"], bias=False)

    def forward(self, x, cos, sin, mask):
        b, rows, _ = x.shape
        width = self.heads * self.head_dim
        q, k, v = self.wqkv(x).split([width, width, width], dim=-1)
        q = apply_rope(q.view(b, rows, self.heads, self.head_dim), cos, sin).transpose(1, 2)
        k = apply_rope(k.view(b, rows, self.heads, self.head_dim), cos, sin).transpose(1, 2)
        v = v.view(b, rows, self.heads, self.head_dim).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, rows, width))


class FeedForward(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.w1 = nn.Linear(t["dim"], t["intermediate_size"], bias=False)
        self.w3 = nn.Linear(t["dim"], t["intermediate_size"], bias=False)
        self.w2 = nn.Linear(t["intermediate_size"], t["dim"], bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.attention = Attention(t)
        self.feed_forward = FeedForward(t)
        self.ffn_norm = RMSNorm(t["dim"], t["norm_eps"])
        self.attention_norm = RMSNorm(t["dim"], t["norm_eps"])
        self.attention_layer_scale = LayerScale(t["dim"])
        self.ffn_layer_scale = LayerScale(t["dim"])

    def forward(self, x, cos, sin, mask):
        h = x + self.attention_layer_scale(self.attention(self.attention_norm(x), cos, sin, mask))
        return h + self.ffn_layer_scale(self.feed_forward(self.ffn_norm(h)))


class WindowedTransformer(nn.Module):
    """Causal transformer over [B, C, T]: row i attends to rows max(0, i-window+1)..i."""

    def __init__(self, t):
        super().__init__()
        self.t = t
        self.layers = nn.ModuleList(TransformerBlock(t) for _ in range(t["n_layer"]))
        self.norm = RMSNorm(t["dim"], t["norm_eps"])

    def forward(self, x):
        rows = x.shape[-1]
        index = torch.arange(rows)
        mask = (index[None, :] <= index[:, None]) & (index[None, :] > index[:, None] - self.t["window_size"])
        cos, sin = rope_table(rows, self.t["head_dim"], self.t["rope_base"], x.dtype)
        h = x.transpose(1, 2)
        for layer in self.layers:
            h = layer(h, cos, sin, mask[None, None])
        return self.norm(h).transpose(1, 2)


class VectorQuantize(nn.Module):
    def __init__(self, latent, size, dim):
        super().__init__()
        self.in_proj = weight_norm(nn.Conv1d(latent, dim, 1))
        self.out_proj = weight_norm(nn.Conv1d(dim, latent, 1))
        self.codebook = nn.Embedding(size, dim)

    def quantize(self, residual):
        """Nearest codeword by L2 between normalised vectors; returns out_proj(z_q), codes [B, T], margins [B, T]."""
        z_e = self.in_proj(residual)
        encodings = F.normalize(z_e.transpose(1, 2).reshape(-1, z_e.shape[1]))
        codebook = F.normalize(self.codebook.weight)
        distance = encodings.pow(2).sum(1, keepdim=True) - 2 * encodings @ codebook.t() + codebook.pow(2).sum(1, keepdim=True).t()
        codes = (-distance).max(1).indices
        best = torch.topk(-distance, 2, dim=1).values
        margins = best[:, 0] - best[:, 1]
        z_q = self.codebook(codes).view(z_e.shape[0], z_e.shape[2], -1).transpose(1, 2)
        z_q = z_e + (z_q - z_e)
        return self.out_proj(z_q), codes.view(z_e.shape[0], -1), margins.view(z_e.shape[0], -1)

    def lookup(self, codes):
        return self.out_proj(self.codebook(codes).transpose(1, 2))


class ResidualQuantizer(nn.Module):
    def __init__(self, count, latent, size, dim):
        super().__init__()
        self.quantizers = nn.ModuleList(VectorQuantize(latent, size, dim) for _ in range(count))

    def quantize(self, z):
        total, residual, codes, margins = 0.0, z, [], []
        for quantizer in self.quantizers:
            z_q, c, m = quantizer.quantize(residual)
            total = total + z_q
            residual = residual - z_q
            codes.append(c)
            margins.append(m)
        return total, torch.stack(codes, 1), torch.stack(margins, 1)

    def lookup(self, codes):
        total = 0.0
        for index, quantizer in enumerate(self.quantizers):
            total = total + quantizer.lookup(codes[:, index])
        return total


class Quantizer(nn.Module):
    def __init__(self, c):
        super().__init__()
        latent = c["latent_dim"]
        self.semantic_quantizer = ResidualQuantizer(1, latent, c["semantic_codebook_size"], c["codebook_dim"])
        self.quantizer = ResidualQuantizer(c["n_codebooks"], latent, c["codebook_size"], c["codebook_dim"])
        hidden = c["convnext_hidden_dim"]
        factors = c["downsample_factor"]
        self.downsample = nn.Sequential(
            *[nn.Sequential(CausalConv(latent, latent, f, stride=f, normed=False), ConvNeXt(latent, hidden)) for f in factors]
        )
        self.upsample = nn.Sequential(
            *[nn.Sequential(CausalTransConv(latent, latent, f, f, normed=False), ConvNeXt(latent, hidden)) for f in reversed(factors)]
        )
        self.pre_module = WindowedTransformer(c["pre_module"])
        self.post_module = WindowedTransformer(c["post_module"])


class EncoderBlock(nn.Module):
    def __init__(self, width, stride, transformer):
        super().__init__()
        half = width // 2
        parts = [ResidualUnit(half, 1), ResidualUnit(half, 3), ResidualUnit(half, 9), Snake(half), CausalConv(half, width, 2 * stride, stride=stride)]
        if transformer is not None:
            parts.append(WindowedTransformer(transformer))
        self.block = nn.Sequential(*parts)

    def forward(self, x):
        return self.block(x)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        width = c["encoder_dim"]
        blocks = [CausalConv(1, width, 7)]
        strides = c["encoder_rates"]
        for index, stride in enumerate(strides):
            width *= 2
            blocks.append(EncoderBlock(width, stride, c["encoder_transformer"] if index == len(strides) - 1 else None))
        blocks += [Snake(width), CausalConv(width, c["latent_dim"], 3)]
        self.block = nn.Sequential(*blocks)


class DecoderBlock(nn.Module):
    def __init__(self, cin, cout, rate):
        super().__init__()
        self.block = nn.Sequential(
            Snake(cin), CausalTransConv(cin, cout, 2 * rate, rate), ResidualUnit(cout, 1), ResidualUnit(cout, 3), ResidualUnit(cout, 9)
        )

    def forward(self, x):
        return self.block(x)


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        width = c["decoder_dim"]
        layers = [CausalConv(c["latent_dim"], width, 7)]
        for rate in c["decoder_rates"]:
            layers.append(DecoderBlock(width, width // 2, rate))
            width //= 2
        layers += [Snake(width), CausalConv(width, 1, 7), nn.Tanh()]
        self.model = nn.Sequential(*layers)


class Codec(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.encoder = Encoder(c)
        self.quantizer = Quantizer(c)
        self.decoder = Decoder(c)

    def decode(self, codes, stages):
        """codes [B, 10, F] → audio [B, 1, F·frame]; stages[name] = each stage's output."""
        c = self.c
        semantic = codes[:, :1].clamp(max=c["semantic_codebook_size"] - 1)
        residual = codes[:, 1:].clamp(max=c["codebook_size"] - 1)
        z = self.quantizer.semantic_quantizer.lookup(semantic) + self.quantizer.quantizer.lookup(residual)
        stages["decode.z"] = z
        z = self.quantizer.post_module(z)
        stages["decode.post_module"] = z
        for index, stage in enumerate(self.quantizer.upsample):
            z = stage(z)
            stages[f"decode.upsample.{index}"] = z
        for index, layer in enumerate(self.decoder.model):
            z = layer(z)
            stages[f"decode.decoder.{index}"] = z
        return z

    def encode(self, audio, stages):
        """audio [B, 1, S] → codes [B, 10, F], margins [B, 10, F]."""
        frame = self.c["frame_length"]
        length = audio.shape[-1]
        z = F.pad(audio, (0, math.ceil(length / frame) * frame - length))
        for index, layer in enumerate(self.encoder.block):
            z = layer(z)
            stages[f"encode.encoder.{index}"] = z
        for index, stage in enumerate(self.quantizer.downsample):
            z = stage(z)
            stages[f"encode.downsample.{index}"] = z
        z = self.quantizer.pre_module(z)
        stages["encode.pre_module"] = z
        semantic_z, semantic_codes, semantic_margins = self.quantizer.semantic_quantizer.quantize(z)
        _, residual_codes, residual_margins = self.quantizer.quantizer.quantize(z - semantic_z)
        return torch.cat([semantic_codes, residual_codes], 1), torch.cat([semantic_margins, residual_margins], 1)


def randomise(model, generator):
    """Random weights at a scale that keeps activations O(1); weight norm g set away from ‖v‖ so folding matters."""

    def normal(shape, scale):
        return torch.randn(shape, generator=generator) * scale

    def uniform(shape, low, high):
        return low + (high - low) * torch.rand(shape, generator=generator)

    residual_convs = {id(m) for unit in model.modules() if isinstance(unit, ResidualUnit) for m in unit.modules()}
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Conv1d, nn.ConvTranspose1d, nn.Linear)):
                normed = hasattr(module, "parametrizations")
                v = module.parametrizations.weight.original1 if normed else module.weight
                if isinstance(module, nn.ConvTranspose1d):
                    fan_in = v.shape[0] * max(1, v.shape[2] // module.stride[0])
                elif isinstance(module, nn.Conv1d):
                    fan_in = v.shape[1] * v.shape[2]
                else:
                    fan_in = v.shape[1]
                gain = 0.5 if id(module) in residual_convs else 1.0
                v.copy_(normal(v.shape, gain / math.sqrt(fan_in)))
                if normed:
                    g = module.parametrizations.weight.original0
                    g.copy_(v.flatten(1).norm(dim=1).view(g.shape) * uniform(g.shape, 0.5, 1.5))
                if module.bias is not None:
                    module.bias.copy_(normal(module.bias.shape, 0.05))
            elif isinstance(module, nn.Embedding):
                module.weight.copy_(normal(module.weight.shape, 1.0))
            elif isinstance(module, Snake):
                module.alpha.copy_(uniform(module.alpha.shape, 0.5, 1.5))
            elif isinstance(module, (ConvNeXt, LayerScale)):
                module.gamma.copy_(uniform(module.gamma.shape, 0.1, 0.5))
            elif isinstance(module, (RMSNorm, nn.LayerNorm)):
                module.weight.copy_(1.0 + normal(module.weight.shape, 0.1))
                if getattr(module, "bias", None) is not None:
                    module.bias.copy_(normal(module.bias.shape, 0.05))


def calibrate_output(model, codes):
    """Scales the last conv so the pre-tanh signal has std 0.5: audio in range without saturating."""
    stages = {}
    with torch.no_grad():
        model.decode(codes, stages)
        last = len(model.decoder.model) - 2
        pre_tanh = stages[f"decode.decoder.{last}"]
        factor = 0.5 / float(pre_tanh.std())
        conv = model.decoder.model[last].conv
        conv.parametrizations.weight.original0.mul_(factor)
        conv.bias.mul_(factor)


def state_dict_with_weight_g_v(model):
    """The state dict with weight norm spelled as weight_g / weight_v (the form real codec checkpoints use)."""
    out = {}
    for name, tensor in model.state_dict().items():
        name = name.replace(".parametrizations.weight.original0", ".weight_g").replace(".parametrizations.weight.original1", ".weight_v")
        out[name] = tensor.detach().to(torch.float32).contiguous().clone()
    return out


class FixtureWriter:
    def __init__(self, folder):
        self.folder = folder
        self.entries = []
        os.makedirs(folder, exist_ok=True)

    def array(self, name, values, dtype, keep_rows=None):
        array = np.ascontiguousarray(values.detach().cpu().numpy() if torch.is_tensor(values) else values)
        full_shape = list(array.shape)
        if keep_rows is not None and array.shape[-1] > keep_rows:
            array = np.ascontiguousarray(array[..., :keep_rows])
        array = array.astype("<f4" if dtype == "float32" else ("<f8" if dtype == "float64" else "<i4"))
        file = name + ".bin"
        array.tofile(os.path.join(self.folder, file))
        self.entries.append({"name": name, "file": file, "dtype": dtype, "shape": list(array.shape), "full_shape": full_shape})

    def json(self, file, value):
        with open(os.path.join(self.folder, file), "w") as handle:
            json.dump(value, handle, indent=1)


def rows_to_keep(rows_total, frames, prefix_frames):
    """High-rate stages keep their first prefix_frames frames; frame- and latent-rate stages stay whole."""
    rows_per_frame = rows_total // frames
    return None if rows_per_frame <= 4 else rows_per_frame * prefix_frames


def main():
    if len(sys.argv) != 2:
        print("usage: codec.py OUTPUT_DIR", file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    folder = os.path.join(tempfile.mkdtemp(), "codec-fixtures")
    writer = FixtureWriter(folder)
    summary = {"torch": torch.__version__, "seed": SEED}
    try:
        torch.manual_seed(SEED)
        torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
        generator = torch.Generator().manual_seed(SEED)
        model = Codec(CONFIG).eval()
        randomise(model, generator)

        codes = torch.cat(
            [
                torch.randint(0, CONFIG["semantic_codebook_size"], (1, 1, DECODE_FRAMES), generator=generator),
                torch.randint(0, CONFIG["codebook_size"], (1, CONFIG["n_codebooks"], DECODE_FRAMES), generator=generator),
            ],
            1,
        )
        # Out-of-range codes: decode clamps them to the last entry.
        codes[0, 0, 5] = 5000
        codes[0, 3, 7] = 1500
        calibrate_output(model, codes)
        torch.save(state_dict_with_weight_g_v(model), os.path.join(folder, "codec.pth"))
        writer.json("config.json", {"codec_config": CONFIG})
        writer.array("decode.codes", codes[0], "int32")

        stages = {}
        with torch.no_grad():
            audio = model.decode(codes, stages)
        last = f"decode.decoder.{len(model.decoder.model) - 1}"
        for name, value in stages.items():
            if name != last:
                writer.array(name, value[0], "float32", rows_to_keep(value.shape[-1], DECODE_FRAMES, PREFIX_FRAMES))
        writer.array("decode.audio", audio[0, 0], "float32")
        summary["decode_audio_std"] = float(audio.std())
        summary["decode_audio_max_abs"] = float(audio.abs().max())

        try:
            model64 = Codec(CONFIG).eval()
            model64.load_state_dict(model.state_dict())
            model64 = model64.double()
            with torch.no_grad():
                audio64 = model64.decode(codes, {})
            writer.array("decode.audio.f64", audio64[0, 0], "float64")
            difference = (audio.double() - audio64).abs()
            summary["decode_fp32_vs_fp64_max_abs"] = float(difference.max())
            summary["decode_fp32_vs_fp64_max_rel"] = float(difference.max() / audio64.abs().max())
        except Exception:
            summary["fp64_error"] = traceback.format_exc()

        samples = int(ENCODE_SECONDS * CONFIG["sample_rate"])
        time = torch.arange(samples, dtype=torch.float64) / CONFIG["sample_rate"]
        signal = 0.3 * torch.sin(2 * math.pi * 220 * time) + 0.2 * torch.sin(2 * math.pi * 1375.5 * time * (1 + 0.1 * time))
        signal = (signal + 0.05 * torch.randn(samples, generator=generator, dtype=torch.float64)).to(torch.float32)
        writer.array("encode.audio", signal, "float32")
        stages = {}
        with torch.no_grad():
            encoded, margins = model.encode(signal.view(1, 1, -1), stages)
        frames = encoded.shape[-1]
        for name, value in stages.items():
            writer.array(name, value[0], "float32", rows_to_keep(value.shape[-1], frames, PREFIX_FRAMES))
        writer.array("encode.codes", encoded[0], "int32")
        writer.array("encode.margins", margins[0], "float32")
        summary["encode_frames"] = frames
        summary["encode_min_margin"] = float(margins.min())
        summary["encode_margins_below_1e-4"] = int((margins < 1e-4).sum())

    except Exception:
        summary["error"] = traceback.format_exc()
    writer.json("manifest.json", {"config": CONFIG, "prefix_frames": PREFIX_FRAMES, "arrays": writer.entries, "summary": summary})
    with tarfile.open(os.path.join(out_dir, "codec-fixtures.tar.gz"), "w:gz") as archive:
        archive.add(folder, arcname="codec-fixtures")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
