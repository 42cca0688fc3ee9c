"""Activation memory per token per layer of every registry backbone, measured on CPU stand-ins of
its real layer shape through the step that trains, and the host bytes per corpus document: the
constants of the memory preflight (`amer_lib/runs/memory.py`), written to
`amer_lib/runs/activation_memory.json`.

    .venv/bin/python benchmarks/bench_activation_memory.py   # minutes on one thread (the JSON's "seconds")

Each backbone's published shape (hidden size, MLP width, heads, KV heads, head size) is built with
random weights at two layers and at one, in each mode's precision (LoRA r = 64 on bfloat16 frozen
weights under CPU bfloat16 autocast, as a GPU run with `mixed_precision: true`; float32 with or
without autocast), and trained through `AMERQueryEncoder.forward` on the decode path of scheduled
sampling: two and four questions whose prompts are left-padded to 65 tokens (every other one half as
long), then 9 positions decoded one at a time with the model's own outputs fed back (AmbigQA's
largest target set, 10). The saved tensors' bytes and the KV cache's
(`activation_memory.measure_layer_activations`), differenced over layers and questions, give one
layer's bytes per token, plain and under gradient checkpointing. On a GPU the attention kernels
keep less than the CPU's (flash attention keeps no probabilities: heads x sequence x 2 bytes per
token, 4 KiB at 8B), so the CPU figure should be an upper bound by about that much (not checked on
a GPU).
"""

from __future__ import annotations

import platform
import sys
import time
import tracemalloc
from pathlib import Path

import torch
import transformers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from amer_lib.core.backbones import BACKBONES, backbone_config  # noqa: E402
from amer_lib.io import write_json  # noqa: E402
from amer_lib.runs.activation_memory import (  # noqa: E402
    FED_BACK,
    MEASURED,
    MODES,
    PROMPT_TOKENS,
    layer_shape,
    measure_layer_activations,
)

MEASURED_BACKBONES = ("llama8b", "qwen4b", "llama3b", "llama1b", "smollm2", "minilm")


def host_bytes_per_document(n: int = 1_000_000) -> float:
    """Python memory of `n` corpus ids (QAMPARI's `<page>__<chunk>` form) in a list and their
    row map, as `EmbeddingShards` holds them, per document."""
    tracemalloc.start()
    ids = [f"{10_000_000 + i // 7}__{i % 7}" for i in range(n)]
    row_of = {doc_id: row for row, doc_id in enumerate(ids)}
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del ids, row_of
    return current / n


def main() -> None:
    torch.set_num_threads(1)  # the bytes do not depend on the threads; one shares the cores best
    began = time.perf_counter()
    backbones = {}
    for name in MEASURED_BACKBONES:
        config = backbone_config(name)
        targets = BACKBONES[name].lora.targets
        started = time.perf_counter()
        activations = {mode: measure_layer_activations(config, mode, targets) for mode in MODES}
        backbones[name] = {"shape": layer_shape(config), "activations": activations}
        kib = {mode: round(v["plain"] / 1024, 1) for mode, v in activations.items()}
        print(f"{name}: {kib} KiB per token per layer ({time.perf_counter() - started:.0f} s)", flush=True)
    per_document = host_bytes_per_document()
    print(f"host: {per_document:.0f} bytes per corpus document (ids and their row map)")
    write_json(
        MEASURED,
        {
            "backbones": backbones,
            "host_bytes_per_document": round(per_document),
            "measured_with": {
                "command": "python benchmarks/bench_activation_memory.py",
                "path": "decode: scheduled sampling, the model's own outputs fed back, KV cache",
                "prompt_tokens": PROMPT_TOKENS,
                "padding": "left, every other prompt half as long",
                "fed_back": FED_BACK,
                "questions": [2, 4],
                "lora_rank": 64,
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "cpu": platform.processor() or platform.machine(),
                "seconds": round(time.perf_counter() - began),
            },
        },
    )
    print(f"wrote {MEASURED.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
