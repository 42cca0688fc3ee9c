"""Beyond the paper: the spread term, which keeps an example's query vectors at least as far apart as
the targets they are matched to (notebook 04's `spread_weight`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F

from amer_lib.core.loss import LossTerm, TermInputs, register_loss_term


@register_loss_term
@dataclass(frozen=True)
class SpreadTerm(LossTerm):
    """`spread_penalty` of the share's vectors against the targets the matching gave them."""

    NAME: ClassVar[str] = "spread"
    FIELDS: ClassVar[dict[str, str]] = {"weight": "spread_weight"}
    ORDER: ClassVar[int] = 10

    def __call__(self, inputs: TermInputs) -> torch.Tensor:
        rows = slice(inputs.first, inputs.first + inputs.outputs.shape[0])
        own = inputs.targets[rows]
        matched_targets = own.gather(1, inputs.assignment.to(own.device)[..., None].expand_as(own))
        return spread_penalty(inputs.outputs, matched_targets, inputs.mask[rows])


def spread_penalty(queries: torch.Tensor, matched_targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Beyond the paper: how much closer an example's query vectors are to each other than the
    targets they are matched to. For each pair of valid queries i < j, `relu(cos(q_i, q_j) -
    cos(t_i, t_j))` with `t_i` query i's matched target, averaged over the example's pairs, then
    over the examples with two or more targets. queries and matched_targets `[b, M, d]`, mask
    `[b, M]` (valid first). Zero when every pair is at least as far apart as its targets."""
    q, t = F.normalize(queries.float(), dim=-1), F.normalize(matched_targets.float(), dim=-1)
    excess = torch.relu(q @ q.transpose(1, 2) - t @ t.transpose(1, 2))
    upper = torch.ones_like(excess[0], dtype=torch.bool).triu(1)
    pairs = mask[:, :, None] & mask[:, None, :] & upper
    per_pair = pairs.sum((1, 2))
    several = per_pair > 0
    if not bool(several.any()):
        return excess.sum() * 0.0
    per_example = (excess * pairs).sum((1, 2))[several] / per_pair[several]
    return per_example.mean()
