"""The query encoder a run's parameters describe, on the device they ask for, and a finished
run's encoder with its kept weights."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from amer_lib.core.backbones import add_lora, get_backbone, load_backbone
from amer_lib.core.config import Config
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainConfig, TrainResult, load_trainable_state, split_train_validation, train
from amer_lib.data.datasets import VectorData
from amer_lib.data.synthetic import SyntheticTask
from amer_lib.runs.configs import RealConfig, SyntheticConfig
from amer_lib.runs.store import SYNTHETIC_RUNS, RunStore, synthetic_run_name


def weights_dtype(params: SyntheticConfig | RealConfig, device: torch.device) -> torch.dtype:
    """bfloat16 for the frozen weights of a LoRA run with mixed precision on a GPU (an 8B
    backbone then takes half the memory); float32 for every weight that is trained."""
    lora_on_gpu = params.finetune == "lora" and device.type == "cuda"
    return torch.bfloat16 if params.mixed_precision and lora_on_gpu else torch.float32


def build_query_encoder(
    params: SyntheticConfig | RealConfig, seed: int, dim: int, device: torch.device
) -> AMERQueryEncoder:
    """A fresh encoder: the backbone of `params` (resized by `backbone_overrides` where given),
    LoRA adapters when `finetune == "lora"`, projections to `dim` (and a stop head when
    `stop_weight > 0`), all seeded by `seed`."""
    name = params.backbone
    overrides = getattr(params, "backbone_overrides", None) or None  # notebook 04 has none
    backbone = load_backbone(name, seed=seed, dtype=weights_dtype(params, device), config_overrides=overrides)
    if params.finetune == "lora":
        backbone = add_lora(backbone, get_backbone(name).lora)
    torch.manual_seed(seed)
    model = AMERQueryEncoder(backbone, dim, stop_head=params.stop_weight > 0)
    if get_backbone(name).identity_projections:
        model.identity_projections()
    return model.to(device)


def train_config(
    params: SyntheticConfig | RealConfig, n_outputs: int, seed: int, device: torch.device, **options
) -> TrainConfig:
    """The training configuration notebook 02's or 04's parameters describe (validation and
    checkpoints at the same cadence); `options` sets what only one notebook has."""
    return TrainConfig(
        n_outputs=n_outputs,
        steps=params.steps,
        batch_size=params.batch_size,
        lr=float(params.lr),
        sampling=params.sampling,
        eval_every=params.eval_every,
        checkpoint_every=params.eval_every,
        seed=seed,
        temperature=float(params.temperature),
        matched_loss=params.matched_loss,
        mixed_precision=params.mixed_precision and device.type == "cuda",
        stop_weight=float(params.stop_weight),
        **options,
    )


def load_trained(
    store: RunStore, params: Config, name: str, dim: int, device: torch.device, facts: dict | None = None
) -> AMERQueryEncoder:
    """The encoder of a finished run (its results name its seed) with its best checkpoint, in eval mode."""
    result, path = store.best_checkpoint(params, name, facts)
    model = build_query_encoder(params, result["seed"], dim, device)
    load_trainable_state(model, torch.load(path, map_location=device, weights_only=True), path)
    return model.eval()


def trained_synthetic_encoder(
    params: SyntheticConfig, transform: str, setting: str, device: torch.device
) -> AMERQueryEncoder:
    """The AMER encoder of a finished notebook-02 run of these parameters, with its kept weights."""
    name = synthetic_run_name(transform, setting, "amer", params.seed)
    return load_trained(SYNTHETIC_RUNS, params, name, params.dim, device)


@torch.no_grad()
def generate_queries(
    model: AMERQueryEncoder, inputs: np.ndarray, n: int, device: torch.device, batch_size: int = 1024
) -> np.ndarray:
    """`n` generated vectors `[N, n, d]` for every input vector `[N, d]` (the synthetic prompts)."""
    return np.concatenate(
        [
            model.generate(prompt, n).float().cpu().numpy()
            for prompt in _vector_prompts(model, inputs, device, batch_size)
        ]
    )


def _vector_prompts(model: AMERQueryEncoder, inputs: np.ndarray, device: torch.device, batch_size: int):
    """The prompts of `inputs [N, d]`, `batch_size` at a time, on `device`."""
    for start in range(0, len(inputs), batch_size):
        yield model.prompt_from_vectors(torch.from_numpy(inputs[start : start + batch_size]).to(device))


@torch.no_grad()
def generate_queries_until_stop(
    model: AMERQueryEncoder,
    inputs: np.ndarray,
    max_n: int,
    device: torch.device,
    threshold: float = 0.5,
    batch_size: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """Up to `max_n` generated vectors `[N, max_n, d]` per input vector and how many of them each
    input keeps `[N]` (the stop head's decision, `AMERQueryEncoder.generate_until_stop`)."""
    vectors, counts = [], []
    for prompt in _vector_prompts(model, inputs, device, batch_size):
        generated, kept, _ = model.generate_until_stop(prompt, max_n, threshold)
        vectors.append(generated.float().cpu().numpy())
        counts.append(kept.cpu().numpy())
    return np.concatenate(vectors), np.concatenate(counts)


def task_data(task: SyntheticTask, device: torch.device) -> tuple[VectorData, torch.Tensor]:
    """A synthetic task's training examples and the pool their negatives are drawn from (no test
    target); a target id of -1 is no target (the varying task)."""
    corpus = torch.from_numpy(task.corpus).to(device)
    ids = torch.from_numpy(task.train_target_ids).to(device)
    data = VectorData(torch.from_numpy(task.train_inputs).to(device), corpus[ids.clamp(min=0)], ids >= 0)
    return data, corpus[torch.from_numpy(task.training_negative_ids).to(device)]


def train_on_task(
    params: SyntheticConfig,
    task: SyntheticTask,
    n_outputs: int,
    device: torch.device,
    run_dir: Path,
    progress: bool = True,
    on_step: Callable[[], None] | None = None,
) -> tuple[AMERQueryEncoder, TrainResult]:
    """A fresh encoder of `params` trained on a synthetic task's training inputs (10% held out
    for validation), with its kept weights, and the training's record."""
    data, negative_pool = task_data(task, device)
    train_idx, val_idx = split_train_validation(len(data), params.seed)
    model = build_query_encoder(params, params.seed, params.dim, device)
    config = train_config(params, n_outputs, params.seed, device, sampling_rate=float(params.sampling_rate))
    trained = train(
        model,
        data.subset(train_idx.to(device)),
        data.subset(val_idx.to(device)),
        negative_pool,
        config,
        run_dir=run_dir,
        progress=progress,
        on_step=on_step,
    )
    return model, trained
