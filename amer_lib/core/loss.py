"""InfoNCE and the Hungarian-matched InfoNCE of the paper (Section 4.1, Eq. 2).

Candidates in a batch are every valid positive plus one random negative per positive; scores
are cosine similarities over a temperature. A query's own other positives stay in its
denominator. Variable numbers of targets are padded at the end and masked.
"""

from __future__ import annotations

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
    spread_weight: float = 0.0,
    first_vector: str = "matched",
) -> torch.Tensor:
    """Hungarian-matched InfoNCE.

    queries `[b, M, d]` (query j of an example is valid when its target j is), positives and
    negatives `[B, M, d]`, target_mask `[B, M]` with the valid targets first; the queries are
    those of the batch's examples `first .. first + b - 1` (all of them unless the batch is
    shared among ranks). The matching is solved on the detached block of log-probabilities. Per
    example, `reduction` "sum" adds the matched negative log-probabilities (the paper's Equation 2:
    an example with more targets weighs more) and "mean" averages them (the authors' code); the
    loss averages the examples.
    `forbidden [b, n, M]` excludes pairs from the matching (see `fed_target_pairs`); a perfect
    matching must remain. `spread_weight` > 0 adds that multiple of `spread_penalty` (beyond the
    paper). `first_vector` "single" (beyond the paper) trains query 0 as the single-query model is
    trained (`info_nce` against the example's first target, in its random order: the batch's first
    targets and negatives the candidates) and matches queries 1.. to targets 1..: one vector stays
    the whole question's query, the others share out the rest.
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
    matched = block.gather(-1, torch.as_tensor(assignment, device=block.device)[..., None]).squeeze(-1)
    if fixed:  # query 0 scored as single-query's vector is
        single = info_nce_log_probs(
            queries[:, 0], positives[:, 0], negatives[:, 0], temperature=temperature, first=first
        )
        matched = torch.cat([single[:, None], matched[:, 1:]], dim=1)
    per_example = -(matched * own_mask).sum(-1)
    loss = (per_example if reduction == "sum" else per_example / counts).mean()
    if spread_weight > 0:
        own = positives[first : first + queries.shape[0]]
        matched_targets = own.gather(1, torch.as_tensor(assignment, device=own.device)[..., None].expand_as(own))
        loss = loss + spread_weight * spread_penalty(queries, matched_targets, own_mask)
    return loss


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


def stop_loss(stop_logits: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of the stop head (`AMERQueryEncoder.stop_head`), `stop_logits [B, n]`.

    The matched loss trains an example's first `counts[b]` outputs (one per target), so output j
    is labelled "stop" when it is the last of them (j = count - 1) and "go on" before it; outputs
    past the count are not scored."""
    position = torch.arange(stop_logits.shape[1], device=stop_logits.device)[None]
    scored = position < counts[:, None]
    labels = (position == counts[:, None] - 1).float()
    return F.binary_cross_entropy_with_logits(stop_logits.float()[scored], labels[scored])


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
    """Beyond the paper: how far an example's query vectors are from the off-the-shelf encoder's
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
