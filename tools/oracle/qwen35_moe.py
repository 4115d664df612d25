"""Reference outputs of a small random transformers Qwen3.5-MoE text model, for the backbone parity tests.

Builds a Qwen3_5MoeForCausalLM of one of the geometries in qwen35_moe_geometries.json: `tiny` (the default: hidden
128, 8 layers in the 3 linear : 1 full pattern, 8 experts top-2, GQA 8:1, Gated DeltaNet 2 key : 4 value heads, head
dims 32: the committed fixture the cpu backbone is held to) or `cuda` (the head dims the CUDA kernels serve: attention
256, Gated DeltaNet 128, bf16 experts 256 wide; made on the GPU machine where test/kernels/transformers-parity-cuda
reads it). Gives every weight a non-trivial random value (every norm weight included, so that the (1 + w) form
matters), rounds all weights to bf16, and writes into OUTPUT_DIR:
  checkpoint/config.json, checkpoint/model.safetensors (bf16; experts in the on-disk per-expert form),
  checkpoint/model.safetensors.index.json,
  outputs-fp32.safetensors  (the model in fp32 on the CPU; eager attention),
  outputs-bf16.safetensors  (the model in bf16 on the GPU when one is present; eager attention),
each outputs file holding input_ids [T] (I32), hidden.N [T, H] (each decoder layer's output), norm [T, H] (after the
final norm) and logits [T, V]. Finally OUTPUT_DIR/qwen35-moe-<geometry>.tar.gz packs all of it.

Usage: python3 tools/oracle/qwen35_moe.py OUTPUT_DIR [tiny|cuda]
"""

import json
import os
import sys
import tarfile

import torch
import transformers
from safetensors.torch import save_file
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

SEED = 20261129
TOKENS = 150
GEOMETRIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qwen35_moe_geometries.json")


def build_config(geometry: str) -> Qwen3_5MoeTextConfig:
    with open(GEOMETRIES) as handle:
        geometries = json.load(handle)
    if geometry not in geometries:
        raise SystemExit(f"unknown geometry {geometry}: one of {', '.join(geometries)}")
    return Qwen3_5MoeTextConfig(**geometries[geometry])


def randomise(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Every parameter gets a random value at a scale that keeps each layer's contribution visible."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            shape = parameter.shape
            noise = torch.randn(shape, generator=generator, dtype=torch.float32)
            if name.endswith("linear_attn.norm.weight"):
                value = 1.0 + 0.3 * noise  # plain-weight gated norm
            elif name.endswith("norm.weight"):
                value = 0.3 * noise  # zero-centred norms: (1 + w)
            elif name.endswith("A_log"):
                value = torch.log(torch.rand(shape, generator=generator) * 1.9 + 0.1)
            elif name.endswith("dt_bias"):
                value = 0.5 * noise
            elif name.endswith("conv1d.weight"):
                value = 0.5 * noise
            elif name.endswith("embed_tokens.weight"):
                value = noise
            elif name.endswith("experts.gate_up_proj"):
                value = noise / shape[-1] ** 0.5
            elif name.endswith("experts.down_proj"):
                value = noise / shape[-1] ** 0.5
            elif parameter.ndim == 2:
                value = noise / shape[-1] ** 0.5
            else:
                raise SystemExit(f"no rule for parameter {name} {tuple(shape)}")
            parameter.copy_(value.to(torch.bfloat16).to(torch.float32))


def on_disk_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict in bf16, with the fused experts split into the per-expert on-disk names."""
    state = {}
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().to(torch.bfloat16).contiguous()
        if name.endswith("mlp.experts.gate_up_proj"):
            prefix = name[: -len("gate_up_proj")]
            half = tensor.shape[1] // 2
            for expert in range(tensor.shape[0]):
                state[f"{prefix}{expert}.gate_proj.weight"] = tensor[expert, :half].clone()
                state[f"{prefix}{expert}.up_proj.weight"] = tensor[expert, half:].clone()
        elif name.endswith("mlp.experts.down_proj"):
            prefix = name[: -len("down_proj")]
            for expert in range(tensor.shape[0]):
                state[f"{prefix}{expert}.down_proj.weight"] = tensor[expert].clone()
        else:
            state[name] = tensor
    return state


def run(model: torch.nn.Module, input_ids: torch.Tensor, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    captured: dict[str, torch.Tensor] = {}
    hooks = []
    for index, layer in enumerate(model.model.layers):
        hooks.append(layer.register_forward_hook(lambda _m, _i, output, index=index: captured.__setitem__(
            f"hidden.{index}", (output[0] if isinstance(output, tuple) else output)[0].detach())))
    hooks.append(model.model.norm.register_forward_hook(
        lambda _m, _i, output: captured.__setitem__("norm", output[0].detach())))
    with torch.no_grad():
        logits = model(input_ids=input_ids, use_cache=False).logits
    for hook in hooks:
        hook.remove()
    captured["logits"] = logits[0].detach()
    out = {name: tensor.to("cpu", dtype).contiguous() for name, tensor in captured.items()}
    out["input_ids"] = input_ids[0].to("cpu", torch.int32).contiguous()
    return out


def main() -> None:
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: qwen35_moe.py OUTPUT_DIR [tiny|cuda]")
    output_dir = sys.argv[1]
    geometry = sys.argv[2] if len(sys.argv) == 3 else "tiny"
    checkpoint_dir = os.path.join(output_dir, "checkpoint")
    os.makedirs(checkpoint_dir, exist_ok=True)
    print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())

    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    config = build_config(geometry)
    model = Qwen3_5MoeForCausalLM(config).eval()
    try:
        model.set_attn_implementation("eager")
    except Exception as error:  # older API: set it on the config
        print("set_attn_implementation failed:", error)
        model.config._attn_implementation = "eager"
    try:
        model.set_experts_implementation("eager")
    except Exception as error:
        print("set_experts_implementation failed:", error)
    print("attention implementation:", model.config._attn_implementation)
    print("experts implementation:", getattr(model.config, "_experts_implementation", None))
    print("rope parameters:", model.config.rope_parameters)
    print("layer types:", model.config.layer_types)
    randomise(model, generator)
    model = model.float()
    for name, tensor in model.state_dict().items():
        print("state", name, tuple(tensor.shape), tensor.dtype)

    state = on_disk_state(model)
    save_file(state, os.path.join(checkpoint_dir, "model.safetensors"), metadata={"format": "pt"})
    index = {"metadata": {}, "weight_map": {name: "model.safetensors" for name in sorted(state)}}
    with open(os.path.join(checkpoint_dir, "model.safetensors.index.json"), "w") as handle:
        json.dump(index, handle, indent=1)
    with open(os.path.join(checkpoint_dir, "config.json"), "w") as handle:
        handle.write(model.config.to_json_string())

    input_ids = torch.randint(0, config.vocab_size, (1, TOKENS), generator=generator)
    fp32 = run(model, input_ids, torch.float32)
    save_file(fp32, os.path.join(output_dir, "outputs-fp32.safetensors"))
    print("fp32 top-1 of the first rows:", fp32["logits"].argmax(-1)[:16].tolist())

    if torch.cuda.is_available():
        model_bf16 = model.to("cuda", torch.bfloat16)
        bf16 = run(model_bf16, input_ids.to("cuda"), torch.bfloat16)
        save_file(bf16, os.path.join(output_dir, "outputs-bf16.safetensors"))
        agree = (bf16["logits"].float().argmax(-1) == fp32["logits"].argmax(-1)).sum().item()
        print(f"bf16 vs fp32 top-1 agreement: {agree}/{TOKENS}")
        for index in range(config.num_hidden_layers):
            name = f"hidden.{index}"
            error = (bf16[name].float() - fp32[name]).abs().max() / fp32[name].abs().max()
            print(f"bf16 vs fp32 {name} relative max error {error.item():.3e}")
    else:
        print("no GPU: the bf16 run is skipped")

    archive = os.path.join(output_dir, f"qwen35-moe-{geometry}.tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        for entry in ("checkpoint", "outputs-fp32.safetensors", "outputs-bf16.safetensors"):
            path = os.path.join(output_dir, entry)
            if os.path.exists(path):
                tar.add(path, arcname=entry)
    for root, _dirs, files in os.walk(output_dir):
        for file in files:
            path = os.path.join(root, file)
            print("wrote", os.path.relpath(path, output_dir), os.path.getsize(path))


if __name__ == "__main__":
    main()
