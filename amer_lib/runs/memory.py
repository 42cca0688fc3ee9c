"""Memory preflight: a training run's peak GPU memory and host memory per process, projected from
the backbone's description (`backbones.describe`: its public config, no weight loaded) before any
weight is loaded, and the settings that fit when it does not.

The arithmetic (each term is a `MemoryPlan` field; `docs/paper_scale.md` writes it out):

- weights: the backbone's parameters (counted on PyTorch's meta device, no memory) at 2 bytes
  (bfloat16 frozen weights: LoRA with mixed precision) or 4 (float32);
- trained state: every trained parameter at 16 bytes (float32 weight, gradient and AdamW's two
  moments): the LoRA adapters and the two projections, or under full fine-tuning the backbone too
  (its weight's 4 bytes already counted above, so 12 more);
- gradient buckets: with several processes, DistributedDataParallel's buckets hold a float32 copy
  of every trained parameter's gradient (small for LoRA);
- activations: what the backward pass keeps, per token per layer, measured on the step that trains
  (`activation_memory`: the decode path of scheduled sampling, left-padded prompts, on a CPU
  stand-in of the backbone's layer shape), times tokens (a micro-batch's questions x prompt and
  fed-back positions) and layers; with gradient checkpointing, each layer's input and KV cache
  plus one layer's full activations (recomputed one at a time);
- data on the GPU: the negative pool (float16) and the training targets (float32);
- search: validation's exact search copies the corpus to the GPU in blocks of `SEARCH_BLOCK`
  float32 rows, and FAISS keeps `FAISS_TEMPORARY` bytes of its own from the first search on. Both
  come on top of the training step's memory: torch's caching allocator keeps the step's freed
  activation blocks (nothing empties its cache before validation) and FAISS allocates outside it
  (neither where the workload has no corpus);
- a fixed `CUDA_RESERVE` for the CUDA context and the allocator's fragmentation.

`gpu_peak` is one process's sum; `device_peak` counts every process that shares the GPU.
Host memory per process: the backbone is loaded on the CPU first (its weights in their dtype), the
corpus's ids and their row map (`host_bytes_per_document`, measured by
`benchmarks/bench_activation_memory.py`), the negative pool (float16) and the training targets.

A run on the CPU holds all of it in one memory: `cpu_peak` counts the backbone, the negatives and
the targets once (nothing is copied to a device), the search block (made float32 from the shards
on the CPU) and the corpus ids, and neither the CUDA reserve nor FAISS's GPU memory.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from amer_lib.core.backbones import FINETUNE_MODES, Description, describe, frozen_weights_dtype
from amer_lib.runs import activation_memory
from amer_lib.runs.activation_memory import precision_mode

GIB = 2**30
CUDA_RESERVE = 2 * GIB  # CUDA context (about 0.5 GiB) and the caching allocator's fragmentation
SEARCH_BLOCK = 500_000  # rows of a search block (`core.index.ShardedFlatIndex`)
FAISS_TEMPORARY = 1536 * 2**20  # StandardGpuResources' default temporary memory on a GPU over 8 GiB


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
    nproc: int = 1  # processes of one run (torchrun), one GPU each
    negative_bytes: int = 2  # float16 rows of a prepared corpus; the synthetic task's are float32
    processes_per_gpu: int = 1  # training processes that share one GPU (worker processes on one device)

    def __post_init__(self):
        if self.finetune not in FINETUNE_MODES:
            raise ValueError(f"unknown finetune {self.finetune!r}; valid: {', '.join(FINETUNE_MODES)}")
        for name in ("batch_size", "nproc", "processes_per_gpu"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @property
    def micro_batch(self) -> int:
        share = self.batch_size // self.nproc
        return min(share, self.micro_batch_size) if self.micro_batch_size > 0 else share

    @property
    def sequence(self) -> int:
        return self.prompt_tokens + self.max_targets - 1


@dataclass(frozen=True)
class MemoryPlan:
    """Projected bytes per process; `gpu_peak` and `host_peak` the totals, `device_peak` the GPU's
    with every process that shares it."""

    weights: int
    trained_state: int
    gradient_buckets: int
    activations: int
    data: int
    search: int
    faiss_temporary: int
    reserve: int
    processes_per_gpu: int
    host_backbone: int
    host_corpus: int
    host_data: int

    @property
    def gpu_peak(self) -> int:
        return (
            self.weights
            + self.trained_state
            + self.gradient_buckets
            + self.activations
            + self.data
            + self.search
            + self.faiss_temporary
            + self.reserve
        )

    @property
    def device_peak(self) -> int:
        return self.processes_per_gpu * self.gpu_peak

    @property
    def host_peak(self) -> int:
        return self.host_backbone + self.host_corpus + self.host_data

    @property
    def cpu_peak(self) -> int:
        """One process's peak where it trains on the CPU: the GPU's terms without the CUDA reserve and
        FAISS's GPU memory, and the corpus ids beside them (the weights, negatives and targets the
        host holds are those same tensors)."""
        return self.gpu_peak - self.faiss_temporary - self.reserve + self.host_corpus

    def lines(self, gpu: bool = True) -> list[str]:
        """The plan in words: on a GPU (`gpu`), its peak and the host's, term by term; on the CPU,
        the one memory a CPU run uses (`cpu_peak`)."""
        gib = lambda value: f"{value / GIB:.1f} GiB"
        if not gpu:
            return [
                f"peak on the CPU {gib(self.cpu_peak)} per process: weights {gib(self.weights)}, trained weights "
                f"with gradients and AdamW {gib(self.trained_state)}, gradient buckets {gib(self.gradient_buckets)}, "
                f"activations {gib(self.activations)}, negatives and targets {gib(self.data)}, search block "
                f"{gib(self.search)}, corpus ids {gib(self.host_corpus)} (no GPU: no CUDA reserve, no FAISS GPU memory)"
            ]
        sharing = (
            f"; {self.processes_per_gpu} processes share the GPU: {gib(self.device_peak)}"
            if self.processes_per_gpu > 1
            else ""
        )
        return [
            f"GPU peak {gib(self.gpu_peak)} per process{sharing}: weights {gib(self.weights)}, trained weights "
            f"with gradients and AdamW {gib(self.trained_state)}, gradient buckets {gib(self.gradient_buckets)}, "
            f"activations {gib(self.activations)}, negatives and targets {gib(self.data)}, search block "
            f"{gib(self.search)}, FAISS temporary memory {gib(self.faiss_temporary)}, CUDA reserve {gib(self.reserve)}",
            f"host peak {gib(self.host_peak)} per process: backbone loaded on the CPU {gib(self.host_backbone)}, "
            f"corpus ids {gib(self.host_corpus)}, negatives and targets {gib(self.host_data)}",
        ]


def plan(backbone: Description, work: Workload) -> MemoryPlan:
    """The projected memory of one training process (see the module's docstring for each term)."""
    weight_bytes = frozen_weights_dtype(work.finetune, work.mixed_precision).itemsize
    projections = 2 * work.embedding_dim * backbone.hidden_size
    if work.finetune == "lora":
        trained = backbone.lora_parameters + projections
        trained_state = 16 * trained
    else:
        trained = backbone.parameters + projections
        trained_state = 12 * backbone.parameters + 16 * projections
    per_token = activation_memory.per_token(backbone, precision_mode(work.finetune, work.mixed_precision))
    tokens = work.micro_batch * work.sequence
    if work.gradient_checkpointing:
        activations = tokens * (backbone.layers * per_token["checkpointed"] + per_token["plain"])
    else:
        activations = tokens * backbone.layers * per_token["plain"]
    negatives = work.negative_bytes * work.negatives * work.embedding_dim
    targets = 4 * work.training_questions * work.max_targets * work.embedding_dim
    return MemoryPlan(
        weights=backbone.parameters * weight_bytes,
        trained_state=trained_state,
        gradient_buckets=4 * trained if work.nproc > 1 else 0,
        activations=math.ceil(activations),
        data=negatives + targets,
        search=4 * min(SEARCH_BLOCK, work.corpus_size) * work.embedding_dim,
        faiss_temporary=FAISS_TEMPORARY if work.corpus_size > 0 else 0,  # no corpus, no search
        reserve=CUDA_RESERVE,
        processes_per_gpu=work.processes_per_gpu,
        host_backbone=backbone.parameters * weight_bytes,
        host_corpus=work.corpus_size * activation_memory.measured()["host_bytes_per_document"],
        host_data=negatives + targets,
    )


def plan_for(backbone: str | dict, work: Workload) -> MemoryPlan:
    """The plan of `work` on a backbone named (a registry name or a local folder) or given by its
    Hugging Face config dict."""
    return plan(describe(backbone), work)


MICRO_BATCHES = (64, 32, 16, 8, 4, 2, 1)


def settings_that_fit(backbone: Description, work: Workload, capacity: int) -> list[str]:
    """The cheapest layouts whose device peak fits `capacity` bytes of GPU memory, each with its
    peak and what it leaves free: one process on the GPU (where several share it), then on this
    many GPUs the largest micro-batch without and with checkpointing, then on more GPUs (the
    global batch kept)."""
    found = []
    for nproc in sorted({work.nproc, 2 * work.nproc, 4 * work.nproc, 8}):
        if nproc < work.nproc or work.batch_size % nproc:
            continue
        share = work.batch_size // nproc
        for recompute in (False, True):
            for micro in (share, *[m for m in MICRO_BATCHES if m < share]):
                trial = replace(
                    work, nproc=nproc, micro_batch_size=micro, gradient_checkpointing=recompute, processes_per_gpu=1
                )
                peak = plan(backbone, trial).device_peak
                if peak <= capacity:
                    found.append(_setting(trial, work.processes_per_gpu, peak, capacity))
                    break
        if found:
            return found
    return found


def _setting(work: Workload, sharing: int, peak: int, capacity: int) -> str:
    parts = ["workers: 1"] if sharing > 1 else []
    parts += [f"nproc_per_node: {work.nproc}"] if work.nproc > 1 else []
    parts.append(f"micro_batch_size: {work.micro_batch}")
    if work.gradient_checkpointing:
        parts.append("gradient_checkpointing: true")
    return f"{', '.join(parts)} ({peak / GIB:.1f} GiB, {(capacity - peak) / GIB:.1f} GiB free)"


class MemoryPreflightError(RuntimeError):
    """The projected peak does not fit the device."""


def check(backbone: Description, work: Workload, capacity: int, device_name: str) -> MemoryPlan:
    """The plan, or an error naming the settings that fit `capacity` bytes of `device_name`."""
    projected = plan(backbone, work)
    if projected.device_peak <= capacity:
        return projected
    fits = settings_that_fit(backbone, work, capacity)
    advice = "; or ".join(fits) if fits else "nothing on up to 8 GPUs: use LoRA with mixed_precision: true"
    sharing = f" x {work.processes_per_gpu} processes on one GPU" if work.processes_per_gpu > 1 else ""
    raise MemoryPreflightError(
        f"{backbone.name} at batch {work.batch_size} ({work.micro_batch} questions x {work.sequence} tokens per step "
        f"and process) needs about {projected.gpu_peak / GIB:.1f} GiB per process{sharing}, "
        f"{projected.device_peak / GIB:.1f} GiB per GPU, but {device_name} has {capacity / GIB:.1f} GiB. "
        f"Settings that fit: {advice}.\n" + "\n".join(projected.lines())
    )


def workload_of(params, prompt_tokens: int, training_questions: int, max_targets: int, **sizes) -> Workload:
    """The `Workload` of a notebook config (its fine-tuning, precision, batch and layout)."""
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
        **sizes,
    )


def as_json(backbone: Description, work: Workload) -> dict:
    """The plan with its inputs, for the docs' table and the tests."""
    projected = plan(backbone, work)
    return {
        "backbone": backbone.name,
        "workload": asdict(work),
        "plan": asdict(projected),
        "gpu_peak": projected.gpu_peak,
        "device_peak": projected.device_peak,
        "host_peak": projected.host_peak,
        "ceil_gib": math.ceil(projected.device_peak / GIB),
    }
