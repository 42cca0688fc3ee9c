"""Beyond the paper: the component term, which holds a compound question's query vectors to the
off-the-shelf encoder's vectors of the questions it is made of (notebook 04's `component_weight`
and `component_distance`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment

from amer_lib.core.loss import TEMPERATURE, LossTerm, TermInputs, candidate_log_probs, register_loss_term

# how a component's vector and its query are compared: 1 - cosine, or the KL divergence of the
# query's softmax over the batch's candidates from the component vector's (a ranking distillation)
COMPONENT_DISTANCES = ("cosine", "ranking")


def component_loss(
    queries: torch.Tensor,
    query_counts: torch.Tensor,
    components: torch.Tensor,
    component_mask: torch.Tensor,
    *,
    distance: str = "cosine",
    candidates: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    temperature: float = TEMPERATURE,
) -> torch.Tensor:
    """How far an example's query vectors are from the off-the-shelf encoder's
    vectors of the questions it is made of (a compound question's components; a plain question
    itself), each component matched to a query of its own by the Hungarian algorithm on cosine
    similarity. `queries [b, n, d]` of which an example's first `query_counts[b]` are valid (one
    per target, as in `matched_info_nce`; one for single-query), `components [b, C, d]` with
    `component_mask [b, C]` (valid first). With fewer valid queries than components, each query
    gets one component and the others are left out. A matched pair costs `1 - cos(q, c)`
    ("cosine"), or ("ranking") the KL divergence of the query's softmax over the batch's
    `candidates` (positives `[B, M, d]`, negatives, target mask, as `candidate_log_probs` takes
    them) from the component vector's, held fixed: the query ranks the documents as the
    component's own vector does. Averaged over an example's pairs, then over the examples.

    One valid query against several components (single-query with `component_single` on a
    compound): the cosine distance matches it to its nearest component, as above; the ranking
    distance holds it to the mixture of its components' softmaxes (their mean), the one ranking
    a single vector can be asked for when the question has several parts."""
    if distance not in COMPONENT_DISTANCES:
        raise ValueError(f"unknown component distance {distance!r}; valid: {', '.join(COMPONENT_DISTANCES)}")
    counts = component_mask.sum(-1)
    empty = torch.nonzero((counts == 0) | (query_counts == 0)).flatten().tolist()
    if empty:
        raise ValueError(f"examples {empty} have no components or no query vectors")
    cosine = F.normalize(queries.float(), dim=-1) @ F.normalize(components.float(), dim=-1).transpose(1, 2)
    detached = cosine.detach().float().cpu().numpy()  # under bfloat16 autocast the product is bfloat16
    chosen = np.zeros(component_mask.shape, dtype=np.int64)  # the query each component is matched to
    paired = torch.zeros(component_mask.shape, dtype=torch.bool)  # the components that got one
    for b, (n, count) in enumerate(zip(query_counts.tolist(), counts.tolist())):
        rows, cols = linear_sum_assignment(detached[b, :n, :count], maximize=True)
        chosen[b, cols], paired[b, cols] = rows, True
    paired, chosen = paired.to(cosine.device), torch.as_tensor(chosen, device=cosine.device)
    if distance == "cosine":
        matched = cosine.gather(1, chosen[:, None]).squeeze(1)  # [b, C]
        return 1.0 - ((matched * paired).sum(-1) / paired.sum(-1)).mean()
    if candidates is None:
        raise ValueError("the ranking distance needs the batch's candidates (positives, negatives, target mask)")
    matched = queries.gather(1, chosen[..., None].expand(-1, -1, queries.shape[-1]))  # [b, C, d]
    student = candidate_log_probs(matched.float(), *candidates, temperature)
    teacher = candidate_log_probs(components.float(), *candidates, temperature).detach()
    terms = torch.where(torch.isfinite(teacher), teacher.exp() * (teacher - student), 0.0)  # padded: none
    per_example = (terms.sum(-1) * paired).sum(-1) / paired.sum(-1)
    alone = (query_counts == 1) & (counts > 1)  # one vector, several components: their mixture
    if bool(alone.any()):
        every = candidate_log_probs(components.float(), *candidates, temperature).detach()  # [b, C, N]
        every = every.masked_fill(~component_mask.to(every.device)[..., None], float("-inf"))
        mixture = torch.logsumexp(every, dim=1) - counts.to(every.device).log()[:, None]  # [b, N]
        first = candidate_log_probs(queries[:, :1].float(), *candidates, temperature)[:, 0]
        divergence = torch.where(torch.isfinite(mixture), mixture.exp() * (mixture - first), 0.0).sum(-1)
        per_example = torch.where(alone.to(per_example.device), divergence, per_example)
    return per_example.mean()


@register_loss_term
@dataclass(frozen=True)
class ComponentTerm(LossTerm):
    """`component_loss` of the share's valid vectors against its examples' component vectors (the
    data's `components`), at the distance `distance`, over the batch's candidates."""

    NAME: ClassVar[str] = "component"
    FIELDS: ClassVar[dict[str, str]] = {"weight": "component_weight", "distance": "component_distance"}
    ORDER: ClassVar[int] = 30
    scores_single_query: ClassVar[bool] = True
    distance: str = "cosine"

    def __post_init__(self):
        super().__post_init__()
        if self.distance not in COMPONENT_DISTANCES:
            raise ValueError(f"unknown component distance {self.distance!r}; valid: {', '.join(COMPONENT_DISTANCES)}")

    def __call__(self, inputs: TermInputs) -> torch.Tensor:
        components, component_mask = inputs.data.components(inputs.indices)
        device = inputs.outputs.device
        return component_loss(
            inputs.outputs,
            inputs.query_counts,
            components.to(device),
            component_mask.to(device),
            distance=self.distance,
            candidates=(inputs.targets, inputs.negatives, inputs.mask),
            temperature=inputs.temperature,
        )
