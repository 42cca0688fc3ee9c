"""InfoNCE and the Hungarian-matched InfoNCE of the paper (Section 4.1, Eq. 2), and the loss terms
that training adds beside it.

Candidates in a batch are every valid positive plus one random negative per positive; scores
are cosine similarities over a temperature. A query's own other positives stay in its
denominator. Variable numbers of targets are padded at the end and masked.

The paper's loss owns its parameters (`MatchedLoss`, which `TrainConfig.loss` holds). A loss term is
one class with its own parameters (a frozen dataclass subclassing `LossTerm`, which holds its `weight`), called on a
step's `TermInputs` by `train.batch_loss`, which adds `weight` x its value to the matched loss;
`TrainConfig.terms` lists a run's terms. The stop head's (`StopTerm`) is here; the terms beyond the
paper are in `amer_lib.beyond`. `register_loss_term` lets a notebook config set a term by its fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment

TEMPERATURE = 0.05


def candidate_log_probs(
    queries: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor,
    target_mask: torch.Tensor,
    temperature: float = TEMPERATURE,
) -> torch.Tensor:
    """Log-softmax `[b, n, B*M + B*M]` of every query against every valid candidate of the batch.

    Columns `e*M .. e*M+M-1` are example e's positives; the negatives follow. Padded candidates
    get probability zero.
    """
    batch, max_targets, dim = positives.shape
    candidates = torch.cat([positives.reshape(-1, dim), negatives.reshape(-1, dim)])
    valid = torch.cat([target_mask.reshape(-1), target_mask.reshape(-1)])
    scores = (F.normalize(queries, dim=-1) / temperature) @ F.normalize(candidates, dim=-1).T
    if not bool(valid.all()):
        scores = scores.masked_fill(~valid, float("-inf"))
    return scores.log_softmax(dim=-1)


def own_positive_block(log_probs: torch.Tensor, max_targets: int, first: int = 0) -> torch.Tensor:
    """`[b, n, M]`: each example's queries against its own positives. The b queries belong to
    the candidate batch's examples `first .. first + b - 1` (a rank's share of a distributed batch)."""
    queries, n_queries, columns = log_probs.shape
    batch = columns // (2 * max_targets)
    positives = log_probs[..., : batch * max_targets].reshape(queries, n_queries, batch, max_targets)
    index = torch.arange(queries, device=log_probs.device)
    return positives[index, :, first + index, :]


def info_nce_log_probs(
    queries: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor,
    *,
    temperature: float = TEMPERATURE,
    first: int = 0,
) -> torch.Tensor:
    """`[b]`: each query's log-probability of its positive under plain InfoNCE, one query `[b, d]`
    per example against one positive `[B, d]` and one negative per example of the batch; the
    queries are examples `first ..` of the batch."""
    mask = torch.ones(positives.shape[0], 1, dtype=torch.bool, device=positives.device)
    log_probs = candidate_log_probs(queries[:, None], positives[:, None], negatives[:, None], mask, temperature)
    return own_positive_block(log_probs, 1, first)[:, 0, 0]


def info_nce(
    queries: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor,
    *,
    temperature: float = TEMPERATURE,
    first: int = 0,
) -> torch.Tensor:
    """Plain InfoNCE: the mean negative of `info_nce_log_probs`."""
    return -info_nce_log_probs(queries, positives, negatives, temperature=temperature, first=first).mean()


def hungarian_assignment(
    block: np.ndarray, counts: np.ndarray, forbidden: np.ndarray | None = None, fixed: int = 0
) -> np.ndarray:
    """For each example, the target matched to each of its first `counts[b]` queries
    (maximising the summed log-probability), never a `forbidden [B, n, M]` pair. The first `fixed`
    queries keep their own targets (query j target j) and the others are matched among the rest.
    Unused rows point at column 0."""
    if forbidden is not None:
        block = np.where(forbidden, -np.inf, block)
    assignment = np.zeros(block.shape[:2], dtype=np.int64)
    assignment[:, :fixed] = np.arange(fixed)
    for b, count in enumerate(counts):
        if count > fixed:
            rows, cols = linear_sum_assignment(block[b, fixed:count, fixed:count], maximize=True)
            assignment[b, rows + fixed] = cols + fixed
    return assignment


def fed_target_pairs(sample_mask: torch.Tensor, n_queries: int, max_targets: int) -> torch.Tensor:
    """`[B, n, M]`, True where query j would be matched to target t although the gold target t
    was fed to the model before query j (teacher forcing feeds target t at position t + 1 unless
    `sample_mask [B, n-1]` put the model's own output there).

    Matching such a pair rewards copying the input: a model whose residual stream carries the fed
    vector to the output (a pretrained encoder with identity projections) learns to repeat it
    (measured in notebook 04's notes), and at inference stays near its own previous query.
    """
    batch = sample_mask.shape[0]
    fed = torch.zeros(batch, max_targets, dtype=torch.bool, device=sample_mask.device)
    fed[:, : n_queries - 1] = ~sample_mask[:, : n_queries - 1]
    query = torch.arange(n_queries, device=sample_mask.device)[:, None]
    target = torch.arange(max_targets, device=sample_mask.device)[None, :]
    return fed[:, None, :] & (target < query)[None]


MATCHED_REDUCTIONS = ("mean", "sum")  # of an example's matched terms: the authors' code, Equation 2
# the first query vector: matched like the others (the paper), or trained as single-query is (beyond it)
FIRST_VECTOR_MODES = ("matched", "single")


def matched_info_nce(
    queries: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor,
    target_mask: torch.Tensor,
    *,
    temperature: float = TEMPERATURE,
    forbidden: torch.Tensor | None = None,
    first: int = 0,
    reduction: str = "mean",
    first_vector: str = "matched",
    with_assignment: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Hungarian-matched InfoNCE.

    queries `[b, M, d]` (query j of an example is valid when its target j is), positives and
    negatives `[B, M, d]`, target_mask `[B, M]` with the valid targets first; the queries are
    those of the batch's examples `first .. first + b - 1` (all of them unless the batch is
    shared among ranks). The matching is solved on the detached block of log-probabilities. Per
    example, `reduction` "sum" adds the matched negative log-probabilities (the paper's Equation 2:
    an example with more targets weighs more) and "mean" averages them (the authors' code); the
    loss averages the examples.
    `forbidden [b, n, M]` excludes pairs from the matching (see `fed_target_pairs`); a perfect
    matching must remain. `first_vector` "single" (beyond the paper) trains query 0 as the single-query model is
    trained (`info_nce` against the example's first target, in its random order: the batch's first
    targets and negatives the candidates) and matches queries 1.. to targets 1..: one vector stays
    the whole question's query, the others share out the rest. `with_assignment`: also the target
    each query is matched to, `[b, M]` (what a loss term may read: `TermInputs.assignment`).
    """
    if first_vector not in FIRST_VECTOR_MODES:
        raise ValueError(f"unknown first_vector {first_vector!r}; valid: {', '.join(FIRST_VECTOR_MODES)}")
    own_mask = target_mask[first : first + queries.shape[0]]
    counts = own_mask.sum(-1)
    if bool((counts == 0).any()):
        empty = (torch.nonzero(counts == 0).flatten() + first).tolist()
        raise ValueError(f"examples at batch positions {empty} have no targets")
    max_targets = positives.shape[1]
    log_probs = candidate_log_probs(queries, positives, negatives, target_mask, temperature)
    block = own_positive_block(log_probs, max_targets, first)
    fixed = int(first_vector == "single")
    assignment = hungarian_assignment(
        block.detach().float().cpu().numpy(),
        counts.cpu().numpy(),
        None if forbidden is None else forbidden.cpu().numpy(),
        fixed,
    )
    assignment = torch.as_tensor(assignment, device=block.device)
    matched = block.gather(-1, assignment[..., None]).squeeze(-1)
    if fixed:  # query 0 scored as single-query's vector is
        single = info_nce_log_probs(
            queries[:, 0], positives[:, 0], negatives[:, 0], temperature=temperature, first=first
        )
        matched = torch.cat([single[:, None], matched[:, 1:]], dim=1)
    per_example = -(matched * own_mask).sum(-1)
    loss = (per_example if reduction == "sum" else per_example / counts).mean()
    return (loss, assignment) if with_assignment else loss


def stop_loss(stop_logits: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of the stop head (`AMERQueryEncoder.stop_head`), `stop_logits [B, n]`.

    The matched loss trains an example's first `counts[b]` outputs (one per target), so output j
    is labelled "stop" when it is the last of them (j = count - 1) and "go on" before it; outputs
    past the count are not scored."""
    position = torch.arange(stop_logits.shape[1], device=stop_logits.device)[None]
    scored = position < counts[:, None]
    labels = (position == counts[:, None] - 1).float()
    return F.binary_cross_entropy_with_logits(stop_logits.float()[scored], labels[scored])


@dataclass(frozen=True)
class MatchedLoss:
    """The paper's loss with its parameters: AMER's vectors scored by `matched_info_nce` at
    `temperature` (single-query's one vector by `info_nce` at the same temperature), an example's
    matched terms averaged or summed (`reduction`); beyond the paper, the first vector trained as
    single-query's (`first_vector` "single") and teacher-forced targets kept from later vectors'
    matching (`exclude_fed_targets`). `FIELDS` maps its fields to the notebook config fields that
    set them."""

    FIELDS: ClassVar[dict[str, str]] = {
        "temperature": "temperature",
        "reduction": "matched_loss",
        "first_vector": "first_vector",
        "exclude_fed_targets": "exclude_fed_targets",
    }
    temperature: float = TEMPERATURE
    reduction: str = "mean"
    first_vector: str = "matched"
    exclude_fed_targets: bool = False

    def __post_init__(self):
        if self.reduction not in MATCHED_REDUCTIONS:
            raise ValueError(f"unknown reduction {self.reduction!r}; valid: {', '.join(MATCHED_REDUCTIONS)}")
        if self.first_vector not in FIRST_VECTOR_MODES:
            raise ValueError(f"unknown first_vector {self.first_vector!r}; valid: {', '.join(FIRST_VECTOR_MODES)}")

    def __call__(
        self,
        queries: torch.Tensor,
        positives: torch.Tensor,
        negatives: torch.Tensor,
        target_mask: torch.Tensor,
        *,
        first: int = 0,
        sample_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The loss of examples `first ..`'s `queries` and the target each is matched to; `sample_mask`
        (where scheduled sampling fed the model's own output) says which targets were fed."""
        n = positives.shape[1]
        forbidden = fed_target_pairs(sample_mask, n, n) if self.exclude_fed_targets else None
        return matched_info_nce(
            queries,
            positives,
            negatives,
            target_mask,
            temperature=self.temperature,
            forbidden=forbidden,
            first=first,
            reduction=self.reduction,
            first_vector=self.first_vector,
            with_assignment=True,
        )


@dataclass(frozen=True)
class TermInputs:
    """What a loss term reads of one share of a step (the examples `first ..` of the batch): the
    share's query vectors `outputs [b, n, d]` and how many of each example's are valid
    (`query_counts [b]`: one per target, one for single-query), the whole batch's candidates
    (`targets`, `negatives [B, M, d]`, `mask [B, M]`), the temperature they are scored at, the
    target each query is matched to (`assignment [b, M]`; None for single-query), the stop head's
    logits (`stop_logits [b, n]`, where a term uses the stop head), and the share's examples:
    the training data and their indices in it."""

    outputs: torch.Tensor
    query_counts: torch.Tensor
    targets: torch.Tensor
    negatives: torch.Tensor
    mask: torch.Tensor
    first: int
    temperature: float
    assignment: torch.Tensor | None
    stop_logits: torch.Tensor | None
    data: Any
    indices: torch.Tensor


@dataclass(frozen=True)
class LossTerm:
    """A term added to the matched loss: `weight` x `term(inputs)`, a subclass a frozen dataclass
    of its own parameters. `NAME` names it in checkpoints; `FIELDS` maps its fields to the notebook
    config fields that set it (`weight` first); `ORDER`: where a notebook config's terms add it (the
    float sum's order, so a run's numbers do not depend on which module registered first);
    `uses_stop_head`: it reads the stop head's logits; `scores_single_query`: it is added to the
    single-query model's InfoNCE too (otherwise to AMER's matched loss only)."""

    NAME: ClassVar[str]
    FIELDS: ClassVar[dict[str, str]]
    ORDER: ClassVar[int]
    uses_stop_head: ClassVar[bool] = False
    scores_single_query: ClassVar[bool] = False
    weight: float

    def __post_init__(self):
        if self.weight < 0:
            raise ValueError(f"{type(self).__name__}'s weight must be >= 0, got {self.weight}")

    def __call__(self, inputs: TermInputs) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} gives no value: a loss term defines __call__")


LOSS_TERMS: dict[str, type] = {}  # NAME -> term class


def register_loss_term(term: type) -> type:
    """Make a term class one a notebook config can set (`runs.query_encoders.train_config` builds it
    from the config's `FIELDS` when its weight is positive); returns it, so it decorates a class."""
    if LOSS_TERMS.get(term.NAME, term) is not term:
        raise ValueError(f"a loss term named {term.NAME!r} is registered already; registered: {', '.join(LOSS_TERMS)}")
    LOSS_TERMS[term.NAME] = term
    return term


@register_loss_term
@dataclass(frozen=True)
class StopTerm(LossTerm):
    """The stop head's binary cross-entropy (`stop_loss`) beside the matched loss (notebook 07)."""

    NAME: ClassVar[str] = "stop"
    FIELDS: ClassVar[dict[str, str]] = {"weight": "stop_weight"}
    ORDER: ClassVar[int] = 20
    uses_stop_head: ClassVar[bool] = True

    def __call__(self, inputs: TermInputs) -> torch.Tensor:
        return stop_loss(inputs.stop_logits, inputs.query_counts)
