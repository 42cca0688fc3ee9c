"""Memory preflight: a training run's peak GPU memory and host memory per process, projected from
the backbone's architecture before any weight is loaded, and the settings that fit when it does not.

The arithmetic (each term is a `MemoryPlan` field; `docs/paper_scale.md` writes it out):

- weights: the backbone's parameters (counted on PyTorch's meta device, no memory) at 2 bytes
  (bfloat16 frozen weights: LoRA with mixed precision) or 4 (float32);
- trained state: every trained parameter at 16 bytes (float32 weight, gradient and AdamW's two
  moments): the LoRA adapters and the two projections, or under full fine-tuning the backbone too
  (its weight's 4 bytes already counted above, so 12 more);
- activations: what the backward pass keeps, per token per layer, measured on a CPU stand-in of
  one layer at the backbone's real shape (`measure_layer_activations`, saved-tensor bytes, in the
  run's precision), times tokens (a micro-batch's questions x prompt and fed-back positions) and
  layers; with gradient checkpointing, each layer's input plus one layer's full activations
  (recomputed one at a time);
- data on the GPU: the negative pool (float16) and the training targets (float32);
- search: validation's exact search streams the corpus in blocks of `SEARCH_BLOCK` float32 rows,
  after the step's activations are freed, so the peak is the larger of training and validation;
- a fixed `CUDA_RESERVE` for the CUDA context and the allocator's fragmentation.

Host memory per process: the backbone is loaded on the CPU first (its weights in their dtype), the
corpus's ids and their row map (`HOST_BYTES_PER_DOCUMENT`, measured by
`benchmarks/bench_activation_memory.py`), the negative pool (float16) and the training targets.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

import torch

from amer_lib.core import checkpointing
from amer_lib.core.backbones import LoraSettings, add_lora, frozen_weights_dtype, get_backbone, meta_model

GIB = 2**30
CUDA_RESERVE = 2 * GIB  # CUDA context (about 0.5 GiB) and the caching allocator's fragmentation
SEARCH_BLOCK = 500_000  # rows of a search block (`core.search.ShardedFlatIndex`)
MEASURED = Path(__file__).with_name("activation_memory.json")  # written by benchmarks/bench_activation_memory.py
MODES = ("lora_bf16", "lora_fp32", "full_bf16", "full_fp32")  # fine-tuning mode x precision


def precision_mode(finetune: str, mixed_precision: bool) -> str:
    return f"{finetune}_{'bf16' if mixed_precision else 'fp32'}"


@dataclass(frozen=True)
class Workload:
    """What sizes a training run's memory, apart from the backbone."""

    finetune: str  # "lora" or "full"
    mixed_precision: bool
    batch_size: int  # the global batch
    micro_batch_size: int  # 0: each process's whole share at once
    gradient_checkpointing: bool
    prompt_tokens: int  # a padded prompt's length
    max_targets: int  # training decodes as many vectors as a batch's largest target set (fed back: one less)
    embedding_dim: int
    negatives: int  # rows of the negative pool
    training_questions: int  # their targets sit on the GPU, [N, max_targets, d] float32
    corpus_size: int
    nproc: int = 1  # processes, one GPU each
    lora_rank: int = 64
    negative_bytes: int = 2  # float16 rows of a prepared corpus; the synthetic task's are float32

    @property
    def micro_batch(self) -> int:
        share = self.batch_size // self.nproc
        return min(share, self.micro_batch_size) if self.micro_batch_size > 0 else share

    @property
    def sequence(self) -> int:
        return self.prompt_tokens + self.max_targets - 1


@dataclass(frozen=True)
class MemoryPlan:
    """Projected bytes per process; `gpu_peak` and `host_peak` the totals."""

    weights: int
    trained_state: int
    activations: int
    data: int
    search: int
    reserve: int
    host_backbone: int
    host_corpus: int
    host_data: int

    @property
    def gpu_peak(self) -> int:
        return self.weights + self.trained_state + self.data + max(self.activations, self.search) + self.reserve

    @property
    def host_peak(self) -> int:
        return self.host_backbone + self.host_corpus + self.host_data

    def lines(self) -> list[str]:
        gib = lambda value: f"{value / GIB:.1f} GiB"
        return [
            f"GPU peak {gib(self.gpu_peak)} per process: weights {gib(self.weights)}, trained weights with "
            f"gradients and AdamW {gib(self.trained_state)}, activations {gib(self.activations)}, negatives "
            f"and targets {gib(self.data)}, search block {gib(self.search)}, CUDA reserve {gib(self.reserve)}",
            f"host peak {gib(self.host_peak)} per process: backbone loaded on the CPU {gib(self.host_backbone)}, "
            f"corpus ids {gib(self.host_corpus)}, negatives and targets {gib(self.host_data)}",
        ]


@dataclass(frozen=True)
class Architecture:
    """A backbone's size: its parameters, LoRA's per unit of rank, layers, hidden size and the
    measured activation bytes per token per layer of each mode (plain, checkpointed)."""

    name: str
    parameters: int
    lora_parameters_per_rank: int
    layers: int
    hidden_size: int
    activations: dict  # mode -> {"plain": bytes, "checkpointed": bytes} per token per layer


def plan(arch: Architecture, work: Workload) -> MemoryPlan:
    """The projected memory of one training process (see the module's docstring for each term)."""
    weight_bytes = frozen_weights_dtype(work.finetune, work.mixed_precision).itemsize
    projections = 2 * work.embedding_dim * arch.hidden_size
    if work.finetune == "lora":
        trained = 16 * (arch.lora_parameters_per_rank * work.lora_rank + projections)
    else:
        trained = 12 * arch.parameters + 16 * projections
    per_token = arch.activations[precision_mode(work.finetune, work.mixed_precision)]
    tokens = work.micro_batch * work.sequence
    if work.gradient_checkpointing:
        activations = tokens * (arch.layers * per_token["checkpointed"] + per_token["plain"])
    else:
        activations = tokens * arch.layers * per_token["plain"]
    negatives = work.negative_bytes * work.negatives * work.embedding_dim
    targets = 4 * work.training_questions * work.max_targets * work.embedding_dim
    return MemoryPlan(
        weights=arch.parameters * weight_bytes,
        trained_state=trained,
        activations=activations,
        data=negatives + targets,
        search=4 * min(SEARCH_BLOCK, work.corpus_size) * work.embedding_dim,
        reserve=CUDA_RESERVE,
        host_backbone=arch.parameters * weight_bytes,
        host_corpus=work.corpus_size * _measured()["host_bytes_per_document"],
        host_data=negatives + targets,
    )


MICRO_BATCHES = (64, 32, 16, 8, 4, 2, 1)


def settings_that_fit(arch: Architecture, work: Workload, capacity: int) -> list[str]:
    """The cheapest layouts that fit `capacity` bytes of GPU memory: on this many GPUs the largest
    micro-batch without and with checkpointing, then on more GPUs (the global batch kept)."""
    found = []
    for nproc in sorted({work.nproc, 2 * work.nproc, 4 * work.nproc, 8}):
        if nproc < work.nproc or work.batch_size % nproc:
            continue
        share = work.batch_size // nproc
        for recompute in (False, True):
            for micro in (share, *[m for m in MICRO_BATCHES if m < share]):
                trial = replace(work, nproc=nproc, micro_batch_size=micro, gradient_checkpointing=recompute)
                if plan(arch, trial).gpu_peak <= capacity:
                    found.append(_setting(trial, arch))
                    break
        if found:
            return found
    return found


def _setting(work: Workload, arch: Architecture) -> str:
    parts = [f"nproc_per_node: {work.nproc}"] if work.nproc > 1 else []
    parts.append(f"micro_batch_size: {work.micro_batch}")
    if work.gradient_checkpointing:
        parts.append("gradient_checkpointing: true")
    return f"{', '.join(parts)} ({plan(arch, work).gpu_peak / GIB:.1f} GiB)"


class MemoryPreflightError(RuntimeError):
    """The projected peak does not fit the device."""


def check(arch: Architecture, work: Workload, capacity: int, device_name: str) -> MemoryPlan:
    """The plan, or an error naming the settings that fit `capacity` bytes of `device_name`."""
    projected = plan(arch, work)
    if projected.gpu_peak <= capacity:
        return projected
    fits = settings_that_fit(arch, work, capacity)
    advice = "; or ".join(fits) if fits else "nothing on up to 8 GPUs: use LoRA with mixed_precision: true"
    raise MemoryPreflightError(
        f"{arch.name} at batch {work.batch_size} ({work.micro_batch} questions x {work.sequence} tokens per step "
        f"and process) needs about {projected.gpu_peak / GIB:.1f} GiB per GPU, but {device_name} has "
        f"{capacity / GIB:.1f} GiB. Settings that fit: {advice}.\n" + "\n".join(projected.lines())
    )


# ----- architectures: counted on the meta device, activations measured on CPU stand-ins ------------------------------


@lru_cache(maxsize=1)
def _measured() -> dict:
    return json.loads(MEASURED.read_text())


def architecture(
    name: str, config: dict, lora_targets: tuple[str, ...], modes: tuple[str, ...] = MODES
) -> Architecture:
    """The `Architecture` of a backbone with Hugging Face `config` (a dict): parameters counted on
    the meta device; activations from `activation_memory.json` for a registry backbone, measured
    now for any other (`modes` of them; about 15 s a mode at 8B's width on 2 cores)."""
    model = meta_model(config)
    parameters = sum(p.numel() for p in model.parameters())
    per_rank = sum(
        m.in_features + m.out_features
        for module_name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and any(module_name.endswith(target) for target in lora_targets)
    )
    layers = int(config["num_hidden_layers"])
    measured = _measured()["backbones"].get(name)
    if measured is None or measured["shape"] != layer_shape(config):
        measured = {"activations": {mode: measure_layer_activations(config, mode, lora_targets) for mode in modes}}
    return Architecture(name, parameters, per_rank, layers, int(config["hidden_size"]), measured["activations"])


SHAPE_KEYS = (
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
)


def layer_shape(config: dict) -> dict:
    """What sizes one layer's activations (the measurement's key)."""
    return {key: config.get(key) for key in SHAPE_KEYS}


def measure_layer_activations(
    config: dict, mode: str, lora_targets: tuple[str, ...], sequence: int = 70, lora_rank: int = 64
) -> dict[str, float]:
    """Bytes per token that one decoder layer of this shape keeps for the backward pass, plain and
    under gradient checkpointing: randomly initialised models of the real width in `mode`'s
    precision (bfloat16 frozen weights with LoRA and CPU bfloat16 autocast, or float32 weights with
    or without autocast), trained on one and on two sequences of `sequence` tokens; the difference
    of the saved tensors' bytes (parameters and autocast's weight copies excluded, each storage
    once) divided by `sequence`, for a two-layer model less a one-layer model."""
    finetune, precision = mode.split("_")
    per_layer = {"plain": 0.0, "checkpointed": 0.0}
    for layers, sign in ((2, 1), (1, -1)):  # two layers less one: the final norm and the like drop out
        model = _stand_in(config, layers, finetune, precision, lora_targets, lora_rank)
        for checkpointed in (False, True):
            if checkpointed:
                checkpointing.enable(model)
            kept = [_saved_bytes(model, batch, sequence, precision == "bf16") for batch in (1, 2)]
            per_layer["checkpointed" if checkpointed else "plain"] += sign * (kept[1] - kept[0]) / sequence
    return per_layer


def _stand_in(config: dict, layers: int, finetune: str, precision: str, lora_targets: tuple[str, ...], rank: int):
    """A randomly initialised model of `config`'s shape with `layers` layers, as `mode` trains it."""
    from transformers import AutoConfig, AutoModel

    per_layer = {  # lists of one value per layer (Qwen3's `layer_types`) cut to the stand-in's layers
        key: value[:layers]
        for key, value in config.items()
        if isinstance(value, list) and len(value) == config.get("num_hidden_layers")
    }
    shape = AutoConfig.for_model(**{**config, **per_layer, "num_hidden_layers": layers, "vocab_size": 16})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModel.from_config(shape)
        model = model.to(frozen_weights_dtype(finetune, precision == "bf16"))
        if finetune == "lora":
            model = add_lora(model, LoraSettings(r=rank, targets=lora_targets))
    return model.train()


def _saved_bytes(model: torch.nn.Module, batch: int, sequence: int, autocast: bool) -> int:
    """Bytes of the distinct storages the backward pass of `model` on `batch` x `sequence` keeps."""
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    hidden = model.config.hidden_size
    dtype = torch.bfloat16 if autocast and next(model.parameters()).dtype == torch.bfloat16 else torch.float32
    inputs = torch.randn(batch, sequence, hidden, dtype=dtype, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            output = model(inputs_embeds=inputs, use_cache=False).last_hidden_state
    output.float().sum().backward()
    # autocast's bfloat16 copies of float32 weights are saved too: the same for any batch, so the
    # difference of two batches leaves them out
    return sum(storages.values())


def workload_of(params, prompt_tokens: int, training_questions: int, max_targets: int, **sizes) -> Workload:
    """The `Workload` of a notebook config (its fine-tuning, precision, batch and layout)."""
    lora = get_backbone(params.backbone).lora if params.finetune == "lora" else None
    return Workload(
        finetune=params.finetune,
        mixed_precision=bool(params.mixed_precision),
        batch_size=params.batch_size,
        micro_batch_size=params.micro_batch_size,
        gradient_checkpointing=params.gradient_checkpointing,
        prompt_tokens=prompt_tokens,
        training_questions=training_questions,
        max_targets=max_targets,
        nproc=params.nproc_per_node,
        lora_rank=lora.r if lora else 0,
        **sizes,
    )


def as_json(arch: Architecture, work: Workload) -> dict:
    """The plan with its inputs, for the docs' table and the tests."""
    projected = plan(arch, work)
    return {
        "backbone": arch.name,
        "workload": asdict(work),
        "plan": asdict(projected),
        "gpu_peak": projected.gpu_peak,
        "host_peak": projected.host_peak,
        "ceil_gib": math.ceil(projected.gpu_peak / GIB),
    }
