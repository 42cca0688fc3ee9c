"""The training loop: AdamW, warmup + linear decay, scheduled sampling, validation, checkpoints.

All randomness of a step (batch order, target order, negatives, scheduled-sampling draws) comes
from generators seeded by (seed, step), and each checkpoint holds every rank's random states (CPU
and CUDA: dropout's draws), so a run resumed from a checkpoint ends exactly where an
uninterrupted run ends, given the same micro-batches (`micro_batch_size` changes the rounding
of a step's gradient sums, not what they sum).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Protocol

import torch
from torch.nn.parallel import DistributedDataParallel

from amer_lib.core import checkpointing, distributed
from amer_lib.core.loss import LossTerm, MatchedLoss, TermInputs, info_nce, stop_loss
from amer_lib.core.model import AMERQueryEncoder, Prompt
from amer_lib.io import StopRequest, recorded_damage, save_torch, stop_requests
from amer_lib.progress import announce_cost, report_done_before, tqdm

SAMPLING_MODES = ("scheduled", "teacher", "predicted")
VALIDATION_FRACTION = 0.1  # the paper's 90/10 train / validation split


class CheckpointError(RuntimeError):
    """A checkpoint file cannot be read or does not belong to this run."""


class TrainingStopped(KeyboardInterrupt):
    """A run stopped at the end of a step, as a SIGINT or SIGTERM asked, its checkpoint written."""


class MultiTargetData(Protocol):
    """What the loop needs from a dataset: prompts and padded target embeddings by index."""

    def __len__(self) -> int: ...

    def prompt(self, model: AMERQueryEncoder, indices: torch.Tensor) -> Prompt: ...

    def targets(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Targets `[B, M, d]` and their mask `[B, M]` (valid targets first)."""
        ...

    def components(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Only for a run with the component term (`amer_lib.beyond.component`): the off-the-shelf
        vectors of the questions each example is made of `[B, C, d]` and their mask `[B, C]`."""
        ...


CHECKPOINT_SECONDS = 600.0  # a checkpoint at least this often, whatever `checkpoint_every` says


@dataclass(frozen=True)
class Optimizer:
    """AdamW at `lr` with decoupled `weight_decay`, the learning rate warmed up linearly over the
    first `warmup` share of the steps and then decayed linearly to 0, each step's gradients
    clipped to a total norm of `grad_clip`. `FIELDS` maps its fields to the notebook config fields
    that set them."""

    FIELDS: ClassVar[dict[str, str]] = {
        "lr": "lr",
        "weight_decay": "weight_decay",
        "warmup": "warmup",
        "grad_clip": "grad_clip",
    }
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup: float = 0.05
    grad_clip: float = 1.0


@dataclass(frozen=True)
class ScheduledSampling:
    """How often a fed-back input is the model's own output instead of the teacher's target:
    `mode` "scheduled" with p = min(`max_prob`, `rate` x step / steps) (the paper's rate is 1; the
    authors' distributed code uses 10 for QAMPARI), "teacher" p = 0, "predicted" p = 1."""

    FIELDS: ClassVar[dict[str, str]] = {"mode": "sampling", "max_prob": "max_sampling_prob", "rate": "sampling_rate"}
    mode: str = "scheduled"
    max_prob: float = 0.8
    rate: float = 1.0

    def __post_init__(self):
        if self.mode not in SAMPLING_MODES:
            raise ValueError(f"unknown sampling mode {self.mode!r}; valid: {', '.join(SAMPLING_MODES)}")


@dataclass(frozen=True)
class MemoryLayout:
    """How a step is laid out in memory, not what it computes (a run may resume with other
    values): each rank's share of a batch back-propagated `micro_batch_size` examples at a time (0:
    all at once), each backbone layer recomputed in the backward pass (`gradient_checkpointing`,
    `core.checkpointing`)."""

    FIELDS: ClassVar[dict[str, str]] = {
        "micro_batch_size": "micro_batch_size",
        "gradient_checkpointing": "gradient_checkpointing",
    }
    micro_batch_size: int = 0
    gradient_checkpointing: bool = False

    def __post_init__(self):
        if self.micro_batch_size < 0:
            raise ValueError(f"micro_batch_size must be >= 0 (0: the whole batch at once), got {self.micro_batch_size}")


# the groups of settings a TrainConfig holds, each built from the notebook fields its FIELDS names
SETTING_GROUPS = {"optimizer": Optimizer, "sampling": ScheduledSampling, "memory": MemoryLayout, "loss": MatchedLoss}


@dataclass
class TrainConfig:
    n_outputs: int  # query vectors per example; 1 is the single-query baseline
    steps: int
    batch_size: int
    optimizer: Optimizer = Optimizer()
    sampling: ScheduledSampling = ScheduledSampling()
    eval_every: int = 100
    checkpoint_every: int = 100
    seed: int = 0
    mixed_precision: bool = False  # bfloat16 autocast, on whichever device the model is
    memory: MemoryLayout = MemoryLayout()
    group_by_targets: bool = False  # batches of examples with equal numbers of targets
    single_target_step: bool = False  # multi-vector runs: an extra single-query step per iteration
    hard_negative_share: float = 0.0  # beyond the paper: share of negatives drawn from the data's mined ones
    loss: MatchedLoss = MatchedLoss()  # the paper's loss and its parameters (temperature, reduction, ...)
    # the terms added to the loss, each weight x its value (`loss.LossTerm`: `loss.StopTerm`, amer_lib.beyond's)
    terms: tuple[LossTerm, ...] = ()

    def __post_init__(self):
        for name, group in SETTING_GROUPS.items():
            if not isinstance(getattr(self, name), group):
                raise TypeError(f"{name} must be a {group.__name__} ({group.__module__}), got {getattr(self, name)!r}")
        for name in ("n_outputs", "steps", "batch_size", "eval_every", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.hard_negative_share <= 1.0:
            raise ValueError(f"hard_negative_share must be between 0 and 1, got {self.hard_negative_share}")
        if not all(isinstance(term, LossTerm) for term in self.terms):
            raise TypeError(f"terms must be loss terms (amer_lib.core.loss.LossTerm), got {self.terms}")
        names = [term.NAME for term in self.terms]
        if len(set(names)) < len(names):
            raise ValueError(f"each loss term at most once, got {names}")

    @staticmethod
    def trained_recipe(fields: dict) -> dict:
        """Of a config's fields (`record`, or a checkpoint's), those a resumed run must match: all but
        the memory layout's."""
        return {k: v for k, v in fields.items() if k not in MemoryLayout.FIELDS.values()}

    def record(self) -> dict:
        """The fields as plain values, as a checkpoint keeps them: the optimizer's, sampling's and
        memory layout's under their notebook names (`FIELDS`), the loss's as a dict, each term as its
        name and fields."""
        grouped = ("optimizer", "sampling", "memory", "loss", "terms")
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in grouped}
        for name in ("optimizer", "sampling", "memory"):
            group = getattr(self, name)
            fields.update({notebook: getattr(group, field) for field, notebook in group.FIELDS.items()})
        terms = [{"term": term.NAME, **asdict(term)} for term in self.terms]
        return {**fields, "loss": asdict(self.loss), "terms": terms}

    def term(self, name: str) -> LossTerm | None:
        """The run's term called `name` (`LossTerm.NAME`), or None."""
        return next((term for term in self.terms if term.NAME == name), None)

    def sampling_prob(self, step: int) -> float:
        """Scheduled sampling's p at `step` (`ScheduledSampling`)."""
        if self.sampling.mode == "teacher":
            return 0.0
        if self.sampling.mode == "predicted":
            return 1.0
        return min(self.sampling.max_prob, self.sampling.rate * step / self.steps)

    def lr_factor(self, step: int) -> float:
        """The learning rate's factor at `step` (`Optimizer`): linear warmup, then linear decay to 0."""
        warmup = max(1, math.ceil(self.optimizer.warmup * self.steps))
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (self.steps - step) / max(1, self.steps - warmup))


@dataclass
class TrainResult:
    best_step: int
    best_val_loss: float
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def step_generator(seed: int, step: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


def batches_per_epoch(n_examples: int, batch_size: int) -> int:
    """Full batches in one pass over `n_examples` (`batch_indices` drops the last partial batch)."""
    return max(1, n_examples // batch_size)


def steps_for_epochs(epochs: int, n_examples: int, batch_size: int) -> int:
    """Optimizer steps of `epochs` passes over all `n_examples` questions of a training split: the
    10% validation part is taken out first (`validation_size`), and an epoch is `batches_per_epoch`.
    The paper states epochs; the paper files and the tuning grid turn them into steps with this."""
    return epochs * batches_per_epoch(n_examples - validation_size(n_examples), batch_size)


def validation_size(n_examples: int, fraction: float = VALIDATION_FRACTION) -> int:
    return max(1, round(fraction * n_examples))


def batch_indices(
    n_examples: int, batch_size: int, seed: int, step: int, group_sizes: torch.Tensor | None = None
) -> torch.Tensor:
    """Step `step`'s batch: epochs are seeded permutations, the last partial batch dropped.

    With `group_sizes` (each example's number of targets), an epoch's shuffled examples are
    sorted by it before they are cut into batches, and the batches are shuffled: a batch then
    holds examples with (nearly) one number of targets, so AMER decodes as many vectors as its
    examples need instead of the batch maximum (the authors' code also groups batches by k).
    """
    per_epoch = batches_per_epoch(n_examples, batch_size)
    epoch, position = divmod(step, per_epoch)
    generator = torch.Generator().manual_seed(seed * 7919 + epoch)
    order = torch.randperm(n_examples, generator=generator)
    if group_sizes is not None:
        order = order[torch.argsort(group_sizes[order], stable=True)]
        batches = order[: per_epoch * batch_size].view(per_epoch, batch_size)
        return batches[torch.randperm(per_epoch, generator=generator)[position]]
    return order[position * batch_size : (position + 1) * batch_size]


@dataclass
class Batch:
    """One step's batch with every random draw made for the whole of it: the examples' `indices`,
    their targets `[B, M, d]` (valid ones first, in random order) and mask `[B, M]`, one negative
    per target `[B, M, d]`, and for AMER where scheduled sampling feeds the model's own output
    `sample_mask [B, M-1]`. Any share of it (a rank's, a micro-batch) is scored against all of it."""

    indices: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    negatives: torch.Tensor
    sample_mask: torch.Tensor | None


def draw_batch(
    data: MultiTargetData,
    indices: torch.Tensor,
    negative_pool: torch.Tensor,
    config: TrainConfig,
    p: float,
    generator: torch.Generator,
) -> Batch:
    """The batch of `indices` with its draws: target order, negatives, and (AMER) where scheduled
    sampling with probability p per example and position feeds the model's own output."""
    targets, mask = data.targets(indices)
    width = int(mask.sum(-1).max())  # AMER decodes as many vectors as this batch's largest target set
    targets, mask = targets[:, :width], mask[:, :width]
    batch, max_targets, _ = targets.shape
    device = targets.device
    keys = torch.rand(batch, max_targets, generator=generator).to(device).masked_fill(~mask, 2.0)
    order = keys.argsort(dim=1)  # valid targets first, in random order
    targets = targets.gather(1, order[..., None].expand_as(targets))
    negative_ids = torch.randint(len(negative_pool), (batch, max_targets), generator=generator)
    # a pool kept in the shards' float16 is made float32 here, batch by batch
    negatives = negative_pool[negative_ids.to(negative_pool.device)].to(device, targets.dtype)
    if config.hard_negative_share > 0:  # drawn only then: a run without them keeps the paper's draws
        negatives = with_hard_negatives(negatives, data.hard_negatives(indices), config.hard_negative_share, generator)
    sample_mask = None
    if config.n_outputs > 1:
        sample_mask = (torch.rand(batch, max_targets - 1, generator=generator) < p).to(device)
    return Batch(indices, targets, mask, negatives, sample_mask)


def with_hard_negatives(
    negatives: torch.Tensor, hard: torch.Tensor, share: float, generator: torch.Generator
) -> torch.Tensor:
    """`negatives [B, M, d]` with each one replaced, with probability `share`, by one of its
    example's mined hard negatives `hard [B, H, d]` drawn uniformly."""
    batch, slots, _ = negatives.shape
    swap = (torch.rand(batch, slots, generator=generator) < share).to(negatives.device)
    pick = torch.randint(hard.shape[1], (batch, slots), generator=generator).to(hard.device)
    mined = hard.gather(1, pick[..., None].expand(-1, -1, hard.shape[-1])).to(negatives.device, negatives.dtype)
    return torch.where(swap[..., None], mined, negatives)


def batch_loss(
    model: AMERQueryEncoder | DistributedDataParallel,
    data: MultiTargetData,
    batch: Batch,
    rows: slice,
    config: TrainConfig,
) -> torch.Tensor:
    """The mean loss of the batch's examples `rows`, run through the model and scored against the
    candidates of the whole batch. AMER: matched InfoNCE; single-query: plain InfoNCE against the
    first (random) target; either plus weight x value of each of the run's terms (`config.terms`)
    that scores it."""
    encoder = model.module if isinstance(model, DistributedDataParallel) else model
    prompt = data.prompt(encoder, batch.indices[rows])
    targets, negatives, mask = batch.targets, batch.negatives, batch.mask
    inputs = dict(
        targets=targets,
        negatives=negatives,
        mask=mask,
        first=rows.start,
        temperature=config.loss.temperature,
        data=data,
        indices=batch.indices[rows],
    )
    if config.n_outputs == 1:
        output = model(prompt, 1)
        loss = info_nce(
            output[:, 0], targets[:, 0], negatives[:, 0], temperature=config.loss.temperature, first=rows.start
        )
        share = TermInputs(output, torch.ones_like(mask[rows].sum(-1)), assignment=None, stop_logits=None, **inputs)
        return _with_terms(loss, [term for term in config.terms if term.scores_single_query], share)
    n = targets.shape[1]
    sample_mask = batch.sample_mask[rows]
    if any(term.uses_stop_head for term in config.terms):
        outputs, stop_logits = model(prompt, n, targets[rows], sample_mask, with_stop=True)
    else:
        outputs, stop_logits = model(prompt, n, targets[rows], sample_mask), None
    loss, assignment = config.loss(outputs, targets, negatives, mask, first=rows.start, sample_mask=sample_mask)
    share = TermInputs(outputs, mask[rows].sum(-1), assignment=assignment, stop_logits=stop_logits, **inputs)
    return _with_terms(loss, config.terms, share)


def _with_terms(loss: torch.Tensor, terms, inputs: TermInputs) -> torch.Tensor:
    """`loss` plus weight x value of each term, in the run's order."""
    for term in terms:
        loss = loss + term.weight * term(inputs)
    return loss


def example_loss(
    model: AMERQueryEncoder | DistributedDataParallel,
    data: MultiTargetData,
    indices: torch.Tensor,
    negative_pool: torch.Tensor,
    config: TrainConfig,
    p: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """Loss of one batch (`draw_batch`, `batch_loss`). Every random draw is made for the whole
    batch; under torch.distributed the model runs on this rank's share of the examples
    (`amer_lib.core.distributed`), scored against the whole batch."""
    batch = draw_batch(data, indices, negative_pool, config, p, generator)
    return batch_loss(model, data, batch, distributed.local_share(len(indices)), config)


def micro_batches(rows: slice, size: int) -> list[slice]:
    """`rows` cut into consecutive micro-batches of at most `size` examples (all of it for 0)."""
    if size <= 0 or rows.stop - rows.start <= size:
        return [rows]
    return [slice(start, min(start + size, rows.stop)) for start in range(rows.start, rows.stop, size)]


def accumulate_gradients(
    model: AMERQueryEncoder | DistributedDataParallel,
    data: MultiTargetData,
    batch: Batch,
    config: TrainConfig,
) -> torch.Tensor:
    """Back-propagate this rank's share of the batch, `config.memory.micro_batch_size` examples at a time,
    and return its loss (detached). Each micro-batch's loss is the mean over its examples scored
    against the whole batch's candidates, weighted by its share of the rank's examples, so the
    gradients add up to those of the share's mean loss: the paper's reduction (a mean over the
    batch's examples; DistributedDataParallel then averages equal shares over the ranks)."""
    own = distributed.local_share(len(batch.indices))
    parts = micro_batches(own, config.memory.micro_batch_size)
    total = torch.zeros(())
    for number, rows in enumerate(parts):
        last = number == len(parts) - 1
        synced = contextlib.nullcontext() if last or not isinstance(model, DistributedDataParallel) else model.no_sync()
        with synced:
            with training_autocast(model, config):
                loss = batch_loss(model, data, batch, rows, config)
            if len(parts) > 1:
                loss = loss * ((rows.stop - rows.start) / (own.stop - own.start))
            loss.backward()
        total = total + loss.detach().float().cpu()
    return total


@torch.no_grad()
def validation_loss(
    model: AMERQueryEncoder,
    data: MultiTargetData,
    negative_pool: torch.Tensor,
    config: TrainConfig,
    batch_size: int = 512,
) -> float:
    """Mean loss with every input predicted (p = 1), on fixed negatives, under the training steps'
    autocast (`training_autocast`: a mixed-precision run keeps the checkpoint its training path scores
    best; studies/validation_autocast/validation_autocast.md measured what float32 would change); under
    torch.distributed each rank scores its share of every batch."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(data), batch_size):
        indices = torch.arange(start, min(start + batch_size, len(data)))
        own = distributed.local_share(len(indices))
        share = own.stop - own.start
        if share:
            generator = step_generator(config.seed, -1 - start)
            with training_autocast(model, config):
                loss = example_loss(model, data, indices, negative_pool, config, 1.0, generator)
            total, count = total + loss.item() * share, count + share
    model.train(was_training)
    total, count = distributed.sum_over_ranks([total, count], negative_pool.device)
    return total / count


def split_train_validation(
    n_examples: int, seed: int, fraction: float = VALIDATION_FRACTION
) -> tuple[torch.Tensor, torch.Tensor]:
    order = torch.randperm(n_examples, generator=torch.Generator().manual_seed(seed))
    n_val = validation_size(n_examples, fraction)
    return order[n_val:], order[:n_val]


def _device_type(model: torch.nn.Module) -> str:
    return next(model.parameters()).device.type


def load_checkpoint(
    path: Path, map_location: str | torch.device = "cpu", fix: str = "delete it to start the run again"
) -> dict:
    """A checkpoint's contents, loaded weights-only (a file that would run code is refused), once its
    bytes are the ones its record says were written (`io.recorded_damage`); a file cut short,
    changed, garbled or not a checkpoint is a `CheckpointError` naming it and `fix`, never torch's
    own advice (to load it without `weights_only`: unsafe on a file of unknown origin)."""
    damage = recorded_damage(path)
    if damage is not None:
        raise CheckpointError(f"checkpoint {path} is damaged ({damage}); {fix}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many types for truncated or foreign files
        raise CheckpointError(
            f"checkpoint {path} is corrupted or unreadable ({type(exc).__name__}: not a checkpoint this "
            f"library wrote, or cut short); {fix}"
        ) from None


def _evaluated(model: AMERQueryEncoder, evaluate: Callable[[AMERQueryEncoder], dict]) -> dict:
    was_training = model.training
    try:
        return evaluate(model)
    finally:
        model.train(was_training)


def optimizer_step(
    model: AMERQueryEncoder | DistributedDataParallel,
    data: MultiTargetData,
    batch: Batch,
    config: TrainConfig,
    params: list[torch.Tensor],
    optimizer: torch.optim.Optimizer,
) -> torch.Tensor:
    """One optimizer step on `batch` (its gradients accumulated over micro-batches, clipped); its loss."""
    optimizer.zero_grad(set_to_none=True)
    loss = accumulate_gradients(model, data, batch, config)
    torch.nn.utils.clip_grad_norm_(params, config.optimizer.grad_clip)
    optimizer.step()
    return loss


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights training changes: all of them under full fine-tuning, the LoRA adapters and
    the two projections under LoRA. Checkpoints hold only these, so that a frozen 8B backbone
    (16 GB in bf16) is neither copied at every validation nor written to disk."""
    return {name: p.detach() for name, p in model.named_parameters() if p.requires_grad}


def load_trainable_state(model: torch.nn.Module, state: dict[str, torch.Tensor], source: str | Path) -> None:
    """Load `trainable_state`'s weights (or a whole state dict) into a model built like the
    trained one; the frozen weights are the backbone's own."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    absent = sorted({name for name, p in model.named_parameters() if p.requires_grad} & set(missing))
    if absent or unexpected:
        raise CheckpointError(
            f"{source} does not hold this model's trained weights (missing {absent[:5]}, "
            f"unexpected {sorted(unexpected)[:5]}): was it trained with other parameters?"
        )


def adamw(model: torch.nn.Module, config: TrainConfig):
    """The trained weights, AdamW over them (the paper's betas; eps 1e-6 from the authors' code, which
    the paper does not state: docs/departures.md) and the warmup-decay schedule."""
    params = [p for p in model.parameters() if p.requires_grad]
    # the fused kernel: on one CPU thread a 22M-parameter step takes 0.03 s instead of 0.23 s
    optimizer = torch.optim.AdamW(
        params,
        lr=config.optimizer.lr,
        betas=(0.9, 0.98),
        eps=1e-6,
        weight_decay=config.optimizer.weight_decay,
        fused=_device_type(model) in ("cpu", "cuda"),
    )
    # a plain function, whose state LambdaLR does not save (a bound method's attributes it pickles)
    return params, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: config.lr_factor(step))


def _resume(
    ckpt_path: Path | None, best_path: Path | None, config: TrainConfig, model: torch.nn.Module, optimizer, scheduler
) -> tuple[int, TrainResult, dict | None]:
    """The step to start from, the results so far and the best weights so far: a fresh start, or
    everything the checkpoint holds (weights, optimizer, schedule and random state restored)."""
    if ckpt_path is None or not ckpt_path.exists():
        return 0, TrainResult(best_step=-1, best_val_loss=math.inf), None
    ckpt = load_checkpoint(ckpt_path)
    if TrainConfig.trained_recipe(ckpt.get("config") or {}) != TrainConfig.trained_recipe(config.record()):
        raise CheckpointError(
            f"checkpoint {ckpt_path} was written with another configuration "
            f"({ckpt.get('config')}); use a new run directory"
        )
    load_trainable_state(model, ckpt["model"], ckpt_path)
    optimizer.load_state_dict(ckpt["optimizer"])
    scheduler.load_state_dict(ckpt["scheduler"])
    _restore_rng_states(ckpt, ckpt_path, config)
    result = TrainResult(ckpt["best_step"], ckpt["best_val_loss"], ckpt["history"], ckpt["seconds"])
    return ckpt["step"], result, load_checkpoint(best_path) if best_path.exists() else None


def _rng_states() -> dict:
    """This process's random states: the CPU's and, once CUDA is in use, every GPU's (dropout's
    draws on a GPU)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return dict(rng=torch.get_rng_state(), cuda_rng=cuda)


def _resume_seed(seed: int, step: int, rank: int) -> int:
    """The seed of a resumed rank whose random states the checkpoint does not hold."""
    return (seed * 1_000_003 + step) * 1_009 + rank


def _restore_rng_states(ckpt: dict, ckpt_path: Path, config: TrainConfig) -> None:
    """Each rank takes back the random states it saved (`rank_rng`, `_checkpoint`), so a resumed
    run draws every rank's dropout masks as the uninterrupted run would. A checkpoint written by
    another number of ranks (`nproc_per_node` is not part of the run key) resumes too: a rank the
    checkpoint holds no states for draws from `_resume_seed(seed, step, rank)` (distinct for every
    rank), which rank 0 says; such a run trains on, but does not end exactly where an uninterrupted
    run on either number of ranks ends. A checkpoint from before the ranks' own states holds the
    one process's (rank 0's) states alone."""
    saved = ckpt.get("rank_rng") or [dict(rng=ckpt["rng"], cuda_rng=ckpt.get("cuda_rng"))]
    rank, size = distributed.rank_and_size()
    if len(saved) != size and rank == 0:
        others = ", ".join(map(str, range(min(size, len(saved)), max(size, len(saved)))))
        fate = f"rank(s) {others} draw from new seeds" if size > len(saved) else f"those of rank(s) {others} go unused"
        print(
            f"{ckpt_path} holds the random states of {len(saved)} rank(s) and resumes on {size}: {fate}, "
            "so the run will not end exactly where an uninterrupted run ends",
            flush=True,
        )
    if rank >= len(saved):
        torch.manual_seed(_resume_seed(config.seed, ckpt["step"], rank))  # the CPU's and every GPU's
        return
    torch.set_rng_state(saved[rank]["rng"])
    if saved[rank]["cuda_rng"] is not None and torch.cuda.is_available():  # dropout's draws on the GPUs
        torch.cuda.set_rng_state_all(saved[rank]["cuda_rng"])


def _after_step(
    due: bool, since_saved: float, checkpoint_seconds: float, stop: StopRequest, device: torch.device
) -> tuple[bool, str | None]:
    """Whether a checkpoint is written after this step, and the signal the run then stops for (None:
    it goes on). A checkpoint at a `due` step (`checkpoint_every`, the last), once rank 0's clock
    says `checkpoint_seconds` have passed since the last, or before a stop; a stop once any rank was
    asked to (`stop`: SIGINT before SIGTERM when ranks were asked both ways). Every rank of a group
    gets the same answers (one small all-reduce a step): each gives its random states to the
    checkpoint, so all must come to it at the same step."""
    late = distributed.is_main() and since_saved >= checkpoint_seconds
    asked = distributed.sum_over_ranks([float(late), *(float(stop.signal == s) for s in STOP_SIGNALS)], device)
    stopping = next((name for name, count in zip(STOP_SIGNALS, asked[1:]) if count > 0), None)
    return due or asked[0] > 0 or stopping is not None, stopping


STOP_SIGNALS = ("SIGINT", "SIGTERM")  # what `io.stop_requests` notes


def _checkpoint(model, optimizer, scheduler, config: TrainConfig, done: int, result: TrainResult) -> dict | None:
    """The checkpoint after `done` steps, which rank 0 writes (None on the other ranks): the trained
    weights, the optimizer and schedule, the results so far and every rank's random states
    (`rank_rng`, in rank order: a rank's dropout masks are its own, so rank 0's states would not
    resume the others). Gathers from every rank: each calls it at the same step (`_after_step`)."""
    states = distributed.gathered(_rng_states())
    if not distributed.is_main():
        return None
    return dict(
        model=trainable_state(model),
        optimizer=optimizer.state_dict(),
        scheduler=scheduler.state_dict(),
        rank_rng=states,
        step=done,
        config=config.record(),
        best_step=result.best_step,
        best_val_loss=result.best_val_loss,
        history=result.history,
        seconds=result.seconds,
    )


def training_autocast(model: torch.nn.Module, config: TrainConfig) -> torch.autocast:
    """bfloat16 autocast for the training steps and validation of a mixed-precision run, on a GPU or
    the CPU (what `AMERQueryEncoder.autocast` gives its generation)."""
    return torch.autocast(_device_type(model), dtype=torch.bfloat16, enabled=config.mixed_precision)


def _validation_record(
    model: AMERQueryEncoder,
    val_data: MultiTargetData,
    negative_pool: torch.Tensor,
    config: TrainConfig,
    loss: torch.Tensor,
    evaluate: Callable[[AMERQueryEncoder], dict] | None,
    step: int,
    p: float,
    lr: float,
) -> dict:
    """The history entry of one validation: the step, the last batch's loss averaged over ranks,
    the validation loss, the sampling probability and learning rate, and `evaluate`'s metrics."""
    size = distributed.rank_and_size()[1]
    val = validation_loss(model, val_data, negative_pool, config)
    train_loss = distributed.sum_over_ranks([loss.item()], negative_pool.device)[0] / size
    metrics = _evaluated(model, evaluate) if evaluate is not None else {}
    return dict(step=step, train_loss=train_loss, val_loss=val, p=p, lr=lr, **metrics)


def train(
    model: AMERQueryEncoder,
    train_data: MultiTargetData,
    val_data: MultiTargetData,
    negative_pool: torch.Tensor,
    config: TrainConfig,
    run_dir: str | Path | None = None,
    progress: bool = True,
    on_step: Callable[[], None] | None = None,
    evaluate: Callable[[AMERQueryEncoder], dict] | None = None,
    checkpoint_seconds: float = CHECKPOINT_SECONDS,
) -> TrainResult:
    """Train `model` in place and leave it holding the weights with the lowest validation loss.

    With `run_dir`, a checkpoint is written atomically every `checkpoint_every` steps and at the
    first step after `checkpoint_seconds` without one (slow steps lose little to an interruption),
    and an existing one is resumed from, saying so; the best weights are kept in `best.pt`. With
    `progress`, a run whose second step says it will be long announces its cost. `on_step` is called
    after every optimizer step (progress reporting from worker processes), and told the steps a
    resumed run had done (`progress.report_done_before`). `evaluate(model)`, at
    every validation, returns retrieval metrics recorded in the history beside the losses (the
    learning curves); it runs on rank 0 only and must not change the weights.

    Inside a torch.distributed process group (torchrun) every rank calls this with the same
    arguments: the global batch `config.batch_size` is shared among the ranks, gradients are
    averaged by DistributedDataParallel, and only rank 0 writes files and shows progress.
    """
    rank, size = distributed.rank_and_size()
    if config.batch_size % size:
        raise ValueError(f"batch_size {config.batch_size} must divide evenly among the {size} ranks")
    main = rank == 0
    # some trainable weights get no gradient in some runs (input_projection of a single-query text
    # run, a BERT backbone's pooler): DDP must not wait for them
    forward = (
        model if size == 1 else DistributedDataParallel(model, broadcast_buffers=False, find_unused_parameters=True)
    )
    if config.memory.gradient_checkpointing:
        checkpointing.enable(model.backbone)
    params, optimizer, scheduler = adamw(model, config)
    ckpt_path, best_path = (
        (None, None) if run_dir is None else (Path(run_dir) / "checkpoint.pt", Path(run_dir) / "best.pt")
    )
    start, result, best_state = _resume(ckpt_path, best_path, config, model, optimizer, scheduler)
    if start and main:
        print(f"resuming {run_dir} at step {start} of {config.steps}", flush=True)
        report_done_before(on_step, start)
    model.train()
    began = time.perf_counter() - result.seconds
    saved = first_done = time.perf_counter()
    bar = tqdm(
        range(start, config.steps),
        initial=start,
        total=config.steps,
        disable=not (progress and main),
        desc=f"train n={config.n_outputs}",
        leave=False,
    )
    group_sizes = (
        train_data.targets(torch.arange(len(train_data)))[1].sum(-1).cpu() if config.group_by_targets else None
    )
    # Ctrl-C, a kernel's interrupt or SIGTERM: the step in progress ends, a checkpoint is written and
    # the run stops saying where the same command resumes (a second Ctrl-C stops it at once)
    where = StoppedAt(done=start, kept=start, steps=config.steps, checkpoint=ckpt_path if main else None)
    with where.said_on_interrupt(), stop_requests() as stop:
        for step in bar:
            p = config.sampling_prob(step)
            indices = batch_indices(len(train_data), config.batch_size, config.seed, step, group_sizes)
            batch = draw_batch(train_data, indices, negative_pool, config, p, step_generator(config.seed, step))
            loss = optimizer_step(forward, train_data, batch, config, params, optimizer)
            if config.single_target_step and config.n_outputs > 1:
                # the authors' code (mix_one_label_shuffled, not in the paper): the same examples
                # again, the first vector trained against one random target as single-query is
                single_config = replace(config, n_outputs=1)
                generator = step_generator(config.seed, config.steps + step)
                single = draw_batch(train_data, indices, negative_pool, single_config, p, generator)
                optimizer_step(forward, train_data, single, single_config, params, optimizer)
            scheduler.step()
            done = where.done = step + 1
            if on_step is not None and main:
                on_step()
            if done == start + 1:
                first_done = time.perf_counter()  # the first step pays for warm-up: the second is timed
            elif done == start + 2 and progress and main:
                timed = time.perf_counter() - first_done
                announce_cost(f"training n={config.n_outputs}", 1, timed, config.steps - done)
            if done % config.eval_every == 0 or done == config.steps:
                lr = scheduler.get_last_lr()[0]
                record = _validation_record(
                    model, val_data, negative_pool, config, loss, evaluate if main else None, step=done, p=p, lr=lr
                )
                result.history.append(record)
                bar.set_postfix(loss=f"{record['train_loss']:.3f}", val=f"{record['val_loss']:.3f}", p=f"{p:.2f}")
                if record["val_loss"] < result.best_val_loss:
                    result.best_step, result.best_val_loss = done, record["val_loss"]
                    best_state = {name: weight.clone() for name, weight in trainable_state(model).items()}
                    if best_path is not None and main:
                        save_torch(best_path, best_state)
            due = done % config.checkpoint_every == 0 or done == config.steps
            since_saved = time.perf_counter() - saved
            checkpoint_now, stopping = _after_step(due, since_saved, checkpoint_seconds, stop, negative_pool.device)
            if ckpt_path is not None and checkpoint_now:
                result.seconds = time.perf_counter() - began
                checkpoint = _checkpoint(model, optimizer, scheduler, config, done, result)  # on every rank
                if main:
                    save_torch(ckpt_path, checkpoint)
                    where.kept = done
                saved = time.perf_counter()
            if stopping is not None:
                raise where.stopped(stopping)
    result.seconds = time.perf_counter() - began
    if best_state is not None:
        load_trainable_state(model, best_state, "the best weights")
    model.eval()
    return result


@dataclass
class StoppedAt:
    """Where a training run is: steps done, the step its last checkpoint holds (where the same
    command resumes), of how many; `checkpoint`: its file (None: nothing is kept, or not this rank's
    to say)."""

    done: int
    kept: int
    steps: int
    checkpoint: Path | None

    def stopped(self, signal: str) -> TrainingStopped:
        """The stop asked for by `signal`, after the checkpoint of step `done` was written: said in one
        line on rank 0, and returned to be raised."""
        if distributed.is_main():
            kept = (
                f"the same command resumes there ({self.checkpoint})"
                if self.checkpoint is not None
                else "nothing is kept (no run folder)"
            )
            print(f"stopped at step {self.done} of {self.steps} ({signal}); {kept}", flush=True)
        return TrainingStopped(f"training stopped at step {self.done} of {self.steps} by {signal}")

    @contextlib.contextmanager
    def said_on_interrupt(self):
        """On KeyboardInterrupt (a second Ctrl-C, mid-step), one line saying where the run stopped,
        then the interrupt goes on."""
        try:
            yield
        except TrainingStopped:
            raise
        except KeyboardInterrupt:
            if self.checkpoint is not None:
                resumes = f"step {self.kept}, its last checkpoint" if self.kept else "step 0: no checkpoint yet"
                print(
                    f"stopped at step {self.done} of {self.steps}; the same command resumes at {resumes} "
                    f"({self.checkpoint})",
                    flush=True,
                )
            raise


def fit_stop_head(
    model: AMERQueryEncoder,
    hidden: torch.Tensor,
    counts: torch.Tensor,
    steps: int = 500,
    lr: float = 1e-2,
    weight_decay: float = 1e-2,
    seed: int = 0,
) -> list[float]:
    """Give a trained encoder a stop head fitted on its frozen hidden states `hidden [N, n, H]`
    (`AMERQueryEncoder.generate_with_states`: fully autoregressive, as at inference) of inputs
    with `counts [N]` targets: `loss.stop_loss` alone, full batch, AdamW. The encoder itself is
    untouched, so the first n of its vectors are what they were. Returns the loss at each step."""
    features = hidden.detach().float()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        head = torch.nn.Linear(features.shape[-1], 1).to(features.device)
    optimizer = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    for _ in range(steps):
        loss = stop_loss(head(features).squeeze(-1), counts.to(features.device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.stop_head = head.to(next(model.parameters()).device)
    return losses
