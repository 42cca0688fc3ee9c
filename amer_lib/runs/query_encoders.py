"""The query encoder a run's config describes, its training configuration, a finished run's
encoder with its kept weights, and generation in batches: every experiment's way from a config
to query vectors."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import numpy as np
import torch

from amer_lib.config import Config
from amer_lib.core.backbones import add_lora, frozen_weights_dtype, get_backbone, load_backbone
from amer_lib.core.loss import LOSS_TERMS, LossTerm
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import SETTING_GROUPS, TrainConfig, load_checkpoint, load_trainable_state
from amer_lib.data.datasets import TextData, token_prompt
from amer_lib.runs.configs import RealConfig, SyntheticConfig
from amer_lib.runs.store import RunStore


@dataclasses.dataclass(frozen=True)
class EncoderRecipe:
    """The query encoder a run builds: `backbone` (resized by `overrides` where given), LoRA adapters
    when `finetune == "lora"`, the frozen weights' precision (`mixed_precision`), a stop head or not."""

    backbone: str
    finetune: str
    mixed_precision: bool
    stop_head: bool = False
    overrides: dict | None = None

    @classmethod
    def of(cls, params: SyntheticConfig | RealConfig) -> EncoderRecipe:
        return cls(
            backbone=params.backbone,
            finetune=params.finetune,
            mixed_precision=params.mixed_precision,
            stop_head=params.stop_weight > 0,
            overrides=getattr(params, "backbone_overrides", None) or None,  # notebook 04 has none
        )


def build_query_encoder(
    params: SyntheticConfig | RealConfig, seed: int, dim: int, device: torch.device
) -> AMERQueryEncoder:
    """`new_query_encoder` of the encoder `params` describe (`EncoderRecipe.of`)."""
    return new_query_encoder(EncoderRecipe.of(params), seed, dim, device)


def new_query_encoder(recipe: EncoderRecipe, seed: int, dim: int, device: torch.device) -> AMERQueryEncoder:
    """A fresh encoder of `recipe` with projections to `dim` (and its stop head), all seeded by `seed`."""
    name = recipe.backbone
    dtype = frozen_weights_dtype(recipe.finetune, recipe.mixed_precision)
    backbone = load_backbone(name, seed=seed, dtype=dtype, config_overrides=recipe.overrides)
    if recipe.finetune == "lora":  # the adapters' initial weights drawn from the seed too
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            backbone = add_lora(backbone, get_backbone(name).lora)
    torch.manual_seed(seed)
    model = AMERQueryEncoder(backbone, dim, stop_head=recipe.stop_head)
    if get_backbone(name).identity_projections:
        model.identity_projections()
    model.mixed_precision = recipe.mixed_precision  # generation runs as training did
    return model.to(device)


def train_config(params: SyntheticConfig | RealConfig, n_outputs: int, seed: int, **options) -> TrainConfig:
    """The training configuration of a notebook's config: every `TrainConfig` field the config
    holds under the same name (mixed precision among them), each group of settings (`SETTING_GROUPS`:
    the optimizer, scheduled sampling, the memory layout, the matched loss) from the fields its
    `FIELDS` names (`setting_group`), the loss terms its fields set (`loss_terms`), checkpoints at the
    validation cadence; `options` sets what the config does not hold (e.g. `group_by_targets`)."""
    own = {field.name: field.name for field in dataclasses.fields(TrainConfig) if field.name not in SETTING_GROUPS}
    shared = _given(TrainConfig, own, params)
    groups = {name: setting_group(group, params) for name, group in SETTING_GROUPS.items()}
    return TrainConfig(
        **{
            **shared,
            **groups,
            "n_outputs": n_outputs,
            "seed": seed,
            "checkpoint_every": params.eval_every,
            "terms": loss_terms(params),
            **options,
        }
    )


def setting_group(group: type, params: Config):
    """A group of training settings (`core.train.SETTING_GROUPS`: `Optimizer`, `ScheduledSampling`,
    `MemoryLayout`, `MatchedLoss`) with the values of the notebook fields its `FIELDS` names that
    `params` holds, the others at their defaults; a float field's value as a float (YAML may give
    lr: 1)."""
    return group(**_given(group, group.FIELDS, params))


def _given(cls: type, names: dict[str, str], params: Config) -> dict:
    """`cls`'s fields whose notebook field (`names`) `params` holds, with its values; a float
    field's as a float (YAML may give lr: 1)."""
    types = {field.name: field.type for field in dataclasses.fields(cls)}
    given = {}
    for field, name in names.items():
        if hasattr(params, name):
            value = getattr(params, name)
            given[field] = float(value) if types[field] in (float, "float") else value
    return given


def loss_terms(params: Config) -> tuple[LossTerm, ...]:
    """The loss terms a notebook config sets: each registered term (`core.loss.LOSS_TERMS`, the
    library's own and amer_lib.beyond's) whose fields the config holds (`LossTerm.FIELDS`), with a
    positive weight, in their `ORDER`."""
    terms = []
    for term in sorted(LOSS_TERMS.values(), key=lambda term: term.ORDER):
        if all(hasattr(params, name) for name in term.FIELDS.values()) and getattr(params, term.FIELDS["weight"]) > 0:
            terms.append(term(**{field: getattr(params, name) for field, name in term.FIELDS.items()}))
    return tuple(terms)


def load_trained(
    store: RunStore, params: Config, name: str, dim: int, device: torch.device, facts: dict | None = None
) -> tuple[AMERQueryEncoder, dict]:
    """The encoder of a finished run with its best checkpoint, in eval mode, and the run's results
    (which name its seed)."""
    result, path = store.best_checkpoint(params, name, facts)
    model = build_query_encoder(params, result["seed"], dim, device)
    retrain = f"delete it and {store.entry(params, name, facts).path()} to train the run again ({store.notebook})"
    load_trainable_state(model, load_checkpoint(path, map_location=device, fix=retrain), path)
    return model.eval(), result


# ----- generation in batches -------------------------------------------------------------------------
# A prompt source yields the model's prompts a batch at a time: input vectors (the synthetic task)
# or tokenised questions (a text benchmark). Each generation below reads any of them.


def vector_prompts(
    model: AMERQueryEncoder, inputs: np.ndarray, device: torch.device, batch_size: int = 1024
) -> Iterator[torch.Tensor]:
    """The prompts of input vectors `[N, d]`, `batch_size` at a time, on `device`."""
    model.eval()
    for start in range(0, len(inputs), batch_size):
        yield model.prompt_from_vectors(torch.from_numpy(inputs[start : start + batch_size]).to(device))


def text_prompts(model: AMERQueryEncoder, data: TextData, batch_size: int = 128) -> Iterator[torch.Tensor]:
    """The prompts of tokenised questions (`data`, on the model's device), `batch_size` at a time."""
    return token_prompts(model, data.input_ids, data.attention_mask, batch_size)


def token_prompts(
    model: AMERQueryEncoder, input_ids: torch.Tensor, attention_mask: torch.Tensor, batch_size: int = 128
) -> Iterator[torch.Tensor]:
    """The prompts of left-padded token rows (on the model's device), `batch_size` at a time."""
    model.eval()
    for start in range(0, len(input_ids), batch_size):
        batch = slice(start, start + batch_size)
        yield token_prompt(model, input_ids[batch], attention_mask[batch])


@torch.no_grad()
def generated_vectors(model: AMERQueryEncoder, prompts: Iterable[torch.Tensor], n: int) -> np.ndarray:
    """`n` generated vectors `[N, n, d]` for every prompt."""
    return np.concatenate([model.generate(prompt, n).float().cpu().numpy() for prompt in prompts])


@torch.no_grad()
def generated_states(
    model: AMERQueryEncoder, prompts: Iterable[torch.Tensor], n: int
) -> tuple[np.ndarray, torch.Tensor]:
    """`generated_vectors` and the hidden states they were read from `[N, n, H]` (float32, on the
    CPU): what a stop head reads (notebook 07)."""
    vectors, states = [], []
    for prompt in prompts:
        generated, hidden = model.generate_with_states(prompt, n)
        vectors.append(generated.float().cpu().numpy())
        states.append(hidden.float().cpu())
    return np.concatenate(vectors), torch.cat(states)


@torch.no_grad()
def generated_until_stop(
    model: AMERQueryEncoder, prompts: Iterable[torch.Tensor], max_n: int, threshold: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Up to `max_n` generated vectors `[N, max_n, d]` per prompt and how many of them each keeps
    `[N]` (the stop head's decision, `AMERQueryEncoder.generate_until_stop`)."""
    vectors, counts = [], []
    for prompt in prompts:
        generated, kept, _ = model.generate_until_stop(prompt, max_n, threshold)
        vectors.append(generated.float().cpu().numpy())
        counts.append(kept.cpu().numpy())
    return np.concatenate(vectors), np.concatenate(counts)
