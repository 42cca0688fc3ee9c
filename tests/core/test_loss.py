import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from amer_lib.beyond.component import ComponentTerm, component_loss
from amer_lib.beyond.spread import SpreadTerm, spread_penalty
from amer_lib.core.loss import (
    MATCHED_REDUCTIONS,
    TermInputs,
    candidate_log_probs,
    fed_target_pairs,
    hungarian_assignment,
    info_nce,
    matched_info_nce,
    own_positive_block,
    stop_loss,
)


def spread_share(q, p, n, mask, first=0, tau=0.05):
    """The spread term of the queries `q` of examples `first ..`, on the assignment the matched loss
    gave them, as `train.batch_loss` hands it over; with the matched loss."""
    loss, assignment = matched_info_nce(q, p, n, mask, temperature=tau, first=first, with_assignment=True)
    rows = mask[first : first + len(q)].sum(-1)
    share = TermInputs(q, rows, p, n, mask, first, tau, assignment, None, None, torch.arange(len(q)))
    return loss, SpreadTerm(1.0)(share)


def brute_force_matched(
    queries, positives, negatives, mask, tau=0.05, forbidden=None, reduction="mean", first_single=False
):
    """Independent answer: the loss under every permutation (without a forbidden pair), minimum
    per example; an example's matched terms summed (Equation 2) or averaged. `first_single`: query
    0 scored as single-query is (against target 0, among every example's target 0 and negative 0)
    and only permutations of queries 1.. over targets 1.. searched."""
    batch, m, _ = positives.shape
    candidates, valid = [], []
    for b in range(batch):
        for j in range(m):
            candidates.append(positives[b, j])
            valid.append(bool(mask[b, j]))
    for b in range(batch):
        for j in range(m):
            candidates.append(negatives[b, j])
            valid.append(bool(mask[b, j]))
    total = 0.0
    for b in range(batch):
        count = int(mask[b].sum())

        def nll(i, j):
            q = F.normalize(queries[b, i], dim=0)
            scores = [math.exp(float(q @ F.normalize(c, dim=0)) / tau) for c, v in zip(candidates, valid) if v]
            own = math.exp(float(q @ F.normalize(positives[b, j], dim=0)) / tau)
            return -math.log(own / sum(scores))

        fixed = 1 if first_single else 0
        allowed = [
            tuple(range(fixed)) + perm
            for perm in itertools.permutations(range(fixed, count))
            if forbidden is None or not any(forbidden[b][i + fixed][perm[i]] for i in range(count - fixed))
        ]
        best = min(sum(nll(i, perm[i]) for i in range(fixed, count)) for perm in allowed)
        if first_single:
            q = F.normalize(queries[b, 0], dim=0)
            firsts = [positives[e, 0] for e in range(batch)] + [negatives[e, 0] for e in range(batch)]
            scores = [math.exp(float(q @ F.normalize(c, dim=0)) / tau) for c in firsts]
            best += -math.log(scores[b] / sum(scores))
        total += best if reduction == "sum" else best / count
    return total / batch


def test_matched_loss_equals_brute_force_minimum_over_permutations():
    torch.manual_seed(0)
    batch, m, d = 4, 4, 6
    q, p, n = torch.randn(batch, m, d), torch.randn(batch, m, d), torch.randn(batch, m, d)
    mask = torch.ones(batch, m, dtype=torch.bool)
    mask[1, 3:] = False
    mask[3, 1:] = False
    assert matched_info_nce(q, p, n, mask).item() == pytest.approx(brute_force_matched(q, p, n, mask), rel=1e-5)


def test_fed_target_pairs_by_hand():
    # 3 queries, 3 targets; example 0 fed gold targets 0 and 1; example 1 fed its own output at
    # position 1 (so target 0 was never fed) and gold target 1 at position 2
    sample_mask = torch.tensor([[False, False], [True, False]])
    forbidden = fed_target_pairs(sample_mask, 3, 3)
    assert forbidden[0].tolist() == [[False, False, False], [True, False, False], [True, True, False]]
    assert forbidden[1].tolist() == [[False, False, False], [False, False, False], [False, True, False]]


def test_matched_loss_without_fed_targets_equals_brute_force():
    torch.manual_seed(2)
    batch, m, d = 3, 4, 6
    q, p, n = torch.randn(batch, m, d), torch.randn(batch, m, d), torch.randn(batch, m, d)
    q[:, 1:] = p[:, :-1]  # every later query copies the target fed before it: the shortcut
    mask = torch.ones(batch, m, dtype=torch.bool)
    mask[2, 3:] = False
    forbidden = fed_target_pairs(torch.tensor([[False, False, False], [True, False, True], [False, True, False]]), m, m)
    excluded = matched_info_nce(q, p, n, mask, forbidden=forbidden).item()
    assert excluded == pytest.approx(brute_force_matched(q, p, n, mask, forbidden=forbidden.tolist()), rel=1e-5)
    assert excluded > matched_info_nce(q, p, n, mask).item() + 1.0  # copying no longer pays


def test_matched_loss_ignores_padding_values():
    torch.manual_seed(1)
    q, p, n = torch.randn(3, 3, 5), torch.randn(3, 3, 5), torch.randn(3, 3, 5)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    before = matched_info_nce(q, p, n, mask)
    p2, n2, q2 = p.clone(), n.clone(), q.clone()
    p2[~mask], n2[~mask], q2[~mask] = 100.0, -7.0, 3.0
    assert matched_info_nce(q2, p2, n2, mask).item() == pytest.approx(before.item(), rel=1e-6)


def test_the_summed_loss_is_equation_3_and_weighs_an_example_by_its_targets():
    torch.manual_seed(4)
    q, p, n = torch.randn(3, 3, 6), torch.randn(3, 3, 6), torch.randn(3, 3, 6)
    mask = torch.tensor([[1, 0, 0], [1, 1, 1], [1, 1, 0]], dtype=torch.bool)
    summed = matched_info_nce(q, p, n, mask, reduction="sum").item()
    assert summed == pytest.approx(brute_force_matched(q, p, n, mask, reduction="sum"), rel=1e-5)
    # the same matching: each example's mean times its count of targets, averaged over examples
    means = [matched_info_nce(q[b : b + 1], p, n, mask, first=b).item() for b in range(3)]
    assert summed == pytest.approx(sum(c * m for c, m in zip((1, 3, 2), means)) / 3, rel=1e-5)
    assert matched_info_nce(q, p, n, mask).item() == pytest.approx(sum(means) / 3, rel=1e-5)


def test_a_first_vector_trained_as_single_query_equals_brute_force():
    """Beyond the paper: query 0 scored as `info_nce` scores single-query's vector, queries 1..
    matched over targets 1.. only, fed targets still excluded; an example with one target is its
    single-query term alone."""
    torch.manual_seed(5)
    batch, m, d = 4, 4, 6
    q, p, n = torch.randn(batch, m, d), torch.randn(batch, m, d), torch.randn(batch, m, d)
    mask = torch.ones(batch, m, dtype=torch.bool)
    mask[1, 2:], mask[3, 1:] = False, False
    forbidden = fed_target_pairs(
        torch.tensor([[False] * 3, [True, False, True], [False, True, False], [True] * 3]), m, m
    )
    for reduction in MATCHED_REDUCTIONS:
        for excluded in (None, forbidden):
            loss = matched_info_nce(q, p, n, mask, forbidden=excluded, reduction=reduction, first_vector="single")
            answer = brute_force_matched(
                q,
                p,
                n,
                mask,
                forbidden=None if excluded is None else excluded.tolist(),
                reduction=reduction,
                first_single=True,
            )
            assert loss.item() == pytest.approx(answer, rel=1e-5)
    one = matched_info_nce(q[3:], p, n, mask, first=3, first_vector="single")
    assert one.item() == pytest.approx(info_nce(q[3:, 0], p[:, 0], n[:, 0], first=3).item(), rel=1e-6)
    # the first vector keeps its own target whatever the others' scores
    block = np.array([[[0.0, 0.0, 2.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]])
    assert hungarian_assignment(block, [3]).tolist() == [[2, 0, 1]]
    assert hungarian_assignment(block, [3], fixed=1).tolist() == [[0, 2, 1]]
    with pytest.raises(ValueError, match="unknown first_vector 'centroid'; valid: matched, single"):
        matched_info_nce(q, p, n, mask, first_vector="centroid")


def test_info_nce_by_hand():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    pos = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    neg = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])
    tau = 0.5
    c = 1 / math.sqrt(2)
    # query 0 against candidates pos0, pos1, neg0, neg1: cosines 1, c, 0, -1
    l0 = -math.log(math.exp(1 / tau) / (math.exp(1 / tau) + math.exp(c / tau) + 1 + math.exp(-1 / tau)))
    # query 1: cosines 0, c, 1, 0; positive is pos1 (c)
    l1 = -math.log(math.exp(c / tau) / (1 + math.exp(c / tau) + math.exp(1 / tau) + 1))
    assert info_nce(q, pos, neg, temperature=tau).item() == pytest.approx((l0 + l1) / 2, rel=1e-6)


def test_matched_loss_with_one_target_is_info_nce():
    torch.manual_seed(2)
    q, p, n = torch.randn(5, 8), torch.randn(5, 8), torch.randn(5, 8)
    mask = torch.ones(5, 1, dtype=torch.bool)
    assert matched_info_nce(q[:, None], p[:, None], n[:, None], mask).item() == pytest.approx(info_nce(q, p, n).item())


def test_own_positive_block_picks_each_examples_positives():
    torch.manual_seed(3)
    q, p, n = torch.randn(3, 2, 4), torch.randn(3, 2, 4), torch.randn(3, 2, 4)
    mask = torch.ones(3, 2, dtype=torch.bool)
    log_probs = candidate_log_probs(q, p, n, mask)
    block = own_positive_block(log_probs, 2)
    assert torch.allclose(block[2], log_probs[2, :, 4:6])


def test_matched_loss_rejects_an_example_without_targets():
    q = torch.randn(2, 2, 4)
    mask = torch.tensor([[True, True], [False, False]])
    with pytest.raises(ValueError, match=r"positions \[1\] have no targets"):
        matched_info_nce(q, q, q, mask)


def test_stop_loss_by_hand():
    # example 0: 1 target -> output 0 labelled stop, outputs 1-2 unscored;
    # example 1: 3 targets -> outputs 0, 1 "go on", output 2 stop
    logits = torch.tensor([[2.0, 9.0, -9.0], [-1.0, 0.5, 3.0]])
    terms = [-math.log(torch.sigmoid(torch.tensor(2.0)).item())]
    terms += [-math.log(1 - torch.sigmoid(torch.tensor(x)).item()) for x in (-1.0, 0.5)]
    terms += [-math.log(torch.sigmoid(torch.tensor(3.0)).item())]
    assert stop_loss(logits, torch.tensor([1, 3])).item() == pytest.approx(sum(terms) / 4, rel=1e-6)


def test_a_ranks_share_of_the_queries_is_scored_against_its_own_positives():
    """Examples 2-3 of a batch of 4 (first = 2): the plain and the matched loss of that share are
    the full batch's per-example losses of those examples, at any temperature."""
    torch.manual_seed(6)
    q, p, n = torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
    per_example = [info_nce(q[b : b + 1], p, n, temperature=0.1, first=b).item() for b in range(4)]
    assert info_nce(q, p, n, temperature=0.1).item() == pytest.approx(sum(per_example) / 4, rel=1e-6)
    assert info_nce(q[2:], p, n, temperature=0.1, first=2).item() == pytest.approx(sum(per_example[2:]) / 2, rel=1e-6)
    qm, pm, nm = torch.randn(4, 3, 6), torch.randn(4, 3, 6), torch.randn(4, 3, 6)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    share = matched_info_nce(qm[2:], pm, nm, mask, temperature=0.1, first=2).item()
    expected = brute_force_matched(qm, pm, nm, mask, tau=0.1)  # the mean over all four examples
    rest = matched_info_nce(qm[:2], pm, nm, mask, temperature=0.1, first=0).item()
    assert (share + rest) / 2 == pytest.approx(expected, rel=1e-5)


def test_fed_target_pairs_for_more_examples_than_queries():
    """Four examples, two queries (one fed position): example e fed gold target 0 unless sampled."""
    sample_mask = torch.tensor([[False], [True], [False], [True]])
    forbidden = fed_target_pairs(sample_mask, 2, 3)
    assert forbidden.shape == (4, 2, 3)
    assert forbidden[:, 1, 0].tolist() == [True, False, True, False] and not forbidden[:, 0].any()


def test_an_example_without_targets_is_named_by_its_batch_position():
    q = torch.randn(2, 2, 4)
    mask = torch.tensor([[True, True], [True, False], [False, False], [True, True]])
    with pytest.raises(ValueError, match=r"^examples at batch positions \[2\] have no targets$"):
        matched_info_nce(q, torch.randn(4, 2, 4), torch.randn(4, 2, 4), mask, first=1)


def cosine(a, b):
    return float(a @ b) / math.sqrt(float(a @ a) * float(b @ b))


def test_spread_penalty_by_hand():
    e1, e2, e3 = torch.eye(3)
    # two queries on one line (cosine 1) for targets at right angles (cosine 0): 1 per pair
    assert spread_penalty(torch.stack([e1, e1])[None], torch.stack([e1, e2])[None], torch.ones(1, 2, dtype=bool)) == 1
    # queries farther apart than their targets cost nothing
    assert spread_penalty(torch.stack([e1, -e1])[None], torch.stack([e1, e2])[None], torch.ones(1, 2, dtype=bool)) == 0
    # three queries: pairs (0, 1) 1 - 0, (0, 2) 0 - 0.5 -> 0, (1, 2) 0 - 0.87 -> 0: mean 1/3; a padded
    # fourth is left out
    queries = torch.stack([e1, e1, e2, e1])[None]
    targets = torch.stack([e1, e3, torch.tensor([0.5, 0.0, math.sqrt(0.75)]), e2])[None]
    mask = torch.tensor([[True, True, True, False]])
    assert spread_penalty(queries, targets, mask).item() == pytest.approx(1 / 3)
    # an example with one target has no pair and does not dilute the mean
    two = torch.cat([queries, torch.stack([e1, e1, e1, e1])[None]])
    both = torch.cat([mask, torch.tensor([[True, False, False, False]])])
    assert spread_penalty(two, torch.cat([targets, targets]), both).item() == pytest.approx(1 / 3)
    assert spread_penalty(two[1:], targets, both[1:]).item() == 0


def test_matched_loss_with_spread_adds_the_penalty_of_the_brute_force_matching():
    torch.manual_seed(1)
    batch, m, d, tau, weight = 3, 3, 5, 0.05, 0.7
    q, p, n = torch.randn(batch, m, d), torch.randn(batch, m, d), torch.randn(batch, m, d)
    mask = torch.ones(batch, m, dtype=torch.bool)
    mask[2, 2:] = False
    log_probs = own_positive_block(candidate_log_probs(q, p, n, mask, tau), m)
    penalties = []
    for b in range(batch):
        count = int(mask[b].sum())
        orders = itertools.permutations(range(count))
        best = max(orders, key=lambda s: sum(float(log_probs[b, i, s[i]]) for i in range(count)))
        pairs = [
            max(0.0, cosine(q[b, i], q[b, j]) - cosine(p[b, best[i]], p[b, best[j]]))
            for i in range(count)
            for j in range(i + 1, count)
        ]
        penalties.append(sum(pairs) / len(pairs))
    expected = brute_force_matched(q, p, n, mask, tau) + weight * sum(penalties) / batch
    loss, spread = spread_share(q, p, n, mask, tau=tau)
    assert (loss + weight * spread).item() == pytest.approx(expected, rel=1e-5)


def test_two_ranks_shares_of_the_spread_loss_average_to_the_whole_batchs():
    torch.manual_seed(2)
    q, p, n = torch.randn(4, 3, 5), torch.randn(4, 3, 5), torch.randn(4, 3, 5)
    mask = torch.ones(4, 3, dtype=torch.bool)
    mask[1, 2:] = False
    whole = sum(spread_share(q, p, n, mask))
    shares = [sum(spread_share(q[r : r + 2], p, n, mask, first=r)) for r in (0, 2)]
    assert whole.item() == pytest.approx(sum(s.item() for s in shares) / 2, rel=1e-6)


def test_a_terms_weight_below_zero_and_an_unknown_distance_are_refused_by_name():
    with pytest.raises(ValueError, match="SpreadTerm's weight must be >= 0, got -1.0"):
        SpreadTerm(-1.0)
    with pytest.raises(ValueError, match="ComponentTerm's weight must be >= 0, got -0.5"):
        ComponentTerm(-0.5)
    with pytest.raises(ValueError, match="unknown component distance 'l2'; valid: cosine, ranking"):
        ComponentTerm(1.0, "l2")


def test_component_loss_equals_the_brute_force_best_assignment():
    """Each example's components go to distinct valid queries (or, with fewer queries, each query
    to a distinct component) so that the summed cosine is highest; the loss is the mean 1 - cosine
    of those pairs: the best over every injective choice, found by enumeration."""
    torch.manual_seed(4)
    queries, components = torch.randn(4, 4, 6), torch.randn(4, 3, 6)
    query_counts = torch.tensor([4, 3, 2, 1])
    component_mask = torch.tensor([[True, True, True], [True, True, False], [True, True, True], [True, True, False]])
    cosine = F.normalize(queries, dim=-1) @ F.normalize(components, dim=-1).transpose(1, 2)
    best = []
    for b in range(4):
        count, n = int(component_mask[b].sum()), int(query_counts[b])
        pairs = [
            [(q, c) for c, q in enumerate(rows)] if count <= n else [(q, c) for q, c in enumerate(rows)]
            for rows in itertools.permutations(range(max(n, count)), min(n, count))
        ]
        best.append(max(np.mean([float(cosine[b, q, c]) for q, c in p]) for p in pairs))
    loss = component_loss(queries, query_counts, components, component_mask)
    assert loss.item() == pytest.approx(1 - np.mean(best), abs=1e-6)


def test_component_loss_is_zero_when_each_component_has_its_vector_and_ignores_padded_queries():
    e1, e2, e3 = torch.eye(3)
    # the components are queries 2 and 0 (any order, any length); query 3 is padding and equals neither
    queries = torch.stack([e2, e3, 3 * e1, -e2])[None]
    components = torch.stack([e1, e2, torch.zeros(3)])[None]
    mask = torch.tensor([[True, True, False]])
    assert component_loss(queries, torch.tensor([3]), components, mask).item() == pytest.approx(0.0, abs=1e-7)
    # one component at right angles to every valid query costs 1, at its opposite 2
    assert component_loss(queries[:, :1], torch.tensor([1]), e1[None, None], mask[:, :1]).item() == pytest.approx(1)
    assert component_loss(queries[:, :1], torch.tensor([1]), -e2[None, None], mask[:, :1]).item() == pytest.approx(2)


@pytest.mark.parametrize("distance", ["cosine", "ranking"])
def test_component_loss_under_bfloat16_autocast_matches_float32(distance):
    """A mixed-precision run (the paper files' `mixed_precision: true`) computes the term under
    bfloat16 autocast: its cosines are bfloat16, yet the matching and the loss are float32's, to
    bfloat16's precision."""
    torch.manual_seed(6)
    queries, components = torch.randn(3, 4, 8), torch.randn(3, 2, 8)
    candidates = (torch.randn(3, 2, 8), torch.randn(3, 2, 8), torch.ones(3, 2, dtype=torch.bool))
    arguments = (queries, torch.tensor([4, 2, 1]), components, torch.ones(3, 2, dtype=torch.bool))
    exact = component_loss(*arguments, distance=distance, candidates=candidates)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = component_loss(*arguments, distance=distance, candidates=candidates)
    assert mixed.item() == pytest.approx(exact.item(), rel=0.05)


def test_component_loss_names_an_example_without_components():
    queries, components = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, True], [False, False, False]])
    with pytest.raises(ValueError, match=r"examples \[1\] have no components or no query vectors"):
        component_loss(queries, torch.tensor([2, 3]), components, mask)


def test_the_ranking_distance_is_the_kl_of_each_matched_querys_softmax_from_its_components():
    """ "ranking": for the cosine-matched pairs, KL(teacher || student) with the teacher the
    component vector's softmax and the student the query's, both over the batch's valid candidates
    (every valid positive and its negative; padded ones left out), computed here candidate by
    candidate; zero when the queries are the components themselves."""
    torch.manual_seed(5)
    queries, components = torch.randn(2, 3, 6), torch.randn(2, 2, 6)
    positives, negatives = torch.randn(2, 3, 6), torch.randn(2, 3, 6)
    target_mask = torch.tensor([[True, True, True], [True, True, False]])
    query_counts, component_mask = torch.tensor([3, 2]), torch.tensor([[True, True], [True, False]])
    valid = [(e, m) for e in range(2) for m in range(3) if target_mask[e, m]]
    pool = torch.stack([positives[e, m] for e, m in valid] + [negatives[e, m] for e, m in valid])

    def softmax(vector):
        scores = F.normalize(pool, dim=-1) @ F.normalize(vector, dim=-1) / 0.05
        return scores.softmax(0)

    cosine = F.normalize(queries, dim=-1) @ F.normalize(components, dim=-1).transpose(1, 2)
    per_example = []
    for b in range(2):
        count, n = int(component_mask[b].sum()), int(query_counts[b])
        best = max(
            itertools.permutations(range(n), count), key=lambda r: sum(float(cosine[b, q, c]) for c, q in enumerate(r))
        )
        kls = []
        for c, q in enumerate(best):
            teacher, student = softmax(components[b, c]), softmax(queries[b, q])
            kls.append(float((teacher * (teacher.log() - student.log())).sum()))
        per_example.append(np.mean(kls))
    candidates = (positives, negatives, target_mask)
    loss = component_loss(queries, query_counts, components, component_mask, distance="ranking", candidates=candidates)
    assert loss.item() == pytest.approx(np.mean(per_example), rel=1e-5)
    itself = torch.cat([components, components[:, :1]], dim=1)
    assert component_loss(
        itself, query_counts, components, component_mask, distance="ranking", candidates=candidates
    ).item() == (pytest.approx(0.0, abs=1e-6))
    with pytest.raises(ValueError, match="unknown component distance 'l2'; valid: cosine, ranking"):
        component_loss(queries, query_counts, components, component_mask, distance="l2")


def test_the_ranking_distance_holds_one_vector_to_the_mixture_of_several_components():
    """Single-query with the term on a compound: one query, several components. "ranking" holds it
    to the mean of the components' softmaxes (KL of that mixture from the query's), computed here
    candidate by candidate; an example with one component keeps the plain KL; "cosine" still takes
    the nearest component."""
    torch.manual_seed(7)
    queries, components = torch.randn(2, 1, 6), torch.randn(2, 3, 6)
    positives, negatives = torch.randn(2, 2, 6), torch.randn(2, 2, 6)
    target_mask = torch.tensor([[True, True], [True, False]])
    component_mask = torch.tensor([[True, True, True], [True, False, False]])
    valid = [(e, m) for e in range(2) for m in range(2) if target_mask[e, m]]
    pool = torch.stack([positives[e, m] for e, m in valid] + [negatives[e, m] for e, m in valid])

    def softmax(vector):
        return (F.normalize(pool, dim=-1) @ F.normalize(vector, dim=-1) / 0.05).softmax(0)

    mixture = torch.stack([softmax(components[0, c]) for c in range(3)]).mean(0)
    first = float((mixture * (mixture.log() - softmax(queries[0, 0]).log())).sum())
    teacher = softmax(components[1, 0])
    second = float((teacher * (teacher.log() - softmax(queries[1, 0]).log())).sum())
    candidates = (positives, negatives, target_mask)
    loss = component_loss(
        queries, torch.tensor([1, 1]), components, component_mask, distance="ranking", candidates=candidates
    )
    assert loss.item() == pytest.approx((first + second) / 2, rel=1e-5)
    nearest = (F.normalize(queries[0, 0], dim=-1) @ F.normalize(components[0], dim=-1).T).max()
    cosine_loss = component_loss(queries[:1], torch.tensor([1]), components[:1], component_mask[:1])
    assert cosine_loss.item() == pytest.approx(1 - float(nearest), rel=1e-5)
