import numpy as np
import pytest

from amer_lib.beyond.merges import RANX_FUSIONS, coverage_merge, ranx_fusion
from amer_lib.core.merge import (
    MERGES,
    Merge,
    found_by,
    get_merge,
    max_score_merge,
    reciprocal_rank_fusion,
    register_merge,
    round_robin_merge,
)


def reference_round_robin(lists, k):
    merged, seen = [], set()
    for rank in range(max(len(x) for x in lists)):
        for ranked in lists:
            doc = ranked[rank]
            if doc >= 0 and doc not in seen:
                seen.add(doc)
                merged.append(doc)
    merged = merged[:k]
    return merged + [-1] * (k - len(merged))


def test_round_robin_order_and_deduplication():
    ids = np.array([[[10, 11, 12, 13], [11, 20, 10, 21], [30, 10, 31, 32]]])
    assert round_robin_merge(ids, 8).tolist() == [[10, 11, 30, 20, 12, 31, 13, 21]]


def test_each_merged_document_is_found_by_the_vector_that_ranks_it_highest():
    ids = np.array([[[10, 11, 12, 13], [11, 20, 10, 21], [30, 10, 31, 32]]])
    scores = np.array([[[0.9, 0.8, 0.7, 0.6], [0.95, 0.85, 0.75, 0.65], [0.5, 0.4, 0.3, 0.2]]])
    merged = round_robin_merge(ids, 10)  # [10, 11, 30, 20, 12, 31, 13, 21, 32, -1]
    vectors, cosines = found_by(ids, scores, merged)
    assert vectors.tolist() == [[0, 1, 2, 1, 0, 2, 0, 1, 2, -1]]  # 11: rank 1 of vector 1, rank 2 of vector 0
    assert np.allclose(cosines[0, :9], [0.9, 0.95, 0.5, 0.85, 0.7, 0.3, 0.6, 0.65, 0.2]) and np.isnan(cosines[0, 9])
    with pytest.raises(ValueError, match="row 0 .* none of its vectors' lists holds"):
        found_by(ids, scores, np.array([[10, 99]]))


def test_round_robin_pads_short_lists_and_skips_faiss_padding():
    ids = np.array([[[1, 2, -1], [2, 1, -1]]])
    assert round_robin_merge(ids, 4).tolist() == [[1, 2, -1, -1]]


def test_round_robin_matches_a_python_reference_on_random_lists():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 30, size=(50, 4, 12))
    expected = [reference_round_robin(row, 20) for row in ids]
    assert round_robin_merge(ids, 20).tolist() == expected


def test_rrf_by_hand():
    # two lists: a ranks 1 and 3 -> 1/61 + 1/63; b ranks 2 and 1 -> 1/62 + 1/61 (higher); c 3 / -
    ids = np.array([[[1, 2, 3], [2, 4, 1]]])
    # scores: b (2) = 1/62 + 1/61 > a (1) = 1/61 + 1/63 > d (4) = 1/62 > c (3) = 1/63
    assert reciprocal_rank_fusion(ids, 4).tolist() == [[2, 1, 4, 3]]


def test_rrf_ties_go_to_the_round_robin_order_and_padding_is_skipped():
    ids = np.array([[[7, -1], [5, 6]]])  # 7 and 5 tie at rank 1; 7 comes first round-robin
    assert reciprocal_rank_fusion(ids, 4).tolist() == [[7, 5, 6, -1]]


def test_max_score_by_hand():
    ids = np.array([[[1, 2, 3], [3, 4, 2]], [[9, 8, -1], [8, 9, 7]]])
    scores = np.array([[[0.9, 0.5, 0.1], [0.95, 0.6, 0.4]], [[0.3, 0.2, -1.0], [0.8, 0.7, 0.1]]])
    # row 0: 3 -> 0.95, 1 -> 0.9, 4 -> 0.6, 2 -> max(0.5, 0.4)
    assert max_score_merge(ids, scores, 4).tolist() == [[3, 1, 4, 2], [8, 9, 7, -1]]


def test_every_merge_returns_distinct_ids_from_the_lists():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 40, size=(20, 3, 10))
    scores = -np.sort(-rng.random((20, 3, 10)), axis=-1)
    for name in MERGES:
        merged = get_merge(name)(ids, scores, 15)
        for row, lists in zip(merged, ids):
            kept = row[row >= 0]
            assert len(set(kept.tolist())) == len(kept) == min(15, len(np.unique(lists)))
            assert set(kept.tolist()) <= set(lists.ravel().tolist())


def test_unknown_merge_names_the_choices():
    with pytest.raises(ValueError, match="round_robin, rrf, max_score, coverage, ranx_rrf"):
        get_merge("borda")


# ----- beyond the paper: the coverage-aware merge and ranx's fusions ---------------------------
def reference_coverage(lists, scores, k, temperature, diversity):
    """xQuAD's greedy in plain Python: dictionaries of per-vector probabilities, candidates in
    round-robin order, the first best candidate taken."""
    import math

    probabilities = []
    for docs, values in zip(lists, scores):
        pairs = [(d, s) for d, s in zip(docs, values) if d >= 0]
        top = max(s for _, s in pairs)
        weights = {d: math.exp((s - top) / temperature) for d, s in pairs}
        total = sum(weights.values())
        probabilities.append({d: w / total for d, w in weights.items()})
    weight = 1 / len(lists)
    candidates = [d for d in reference_round_robin(lists, 10**6) if d >= 0]
    remaining, merged = [1.0] * len(lists), []
    for _ in range(min(k, len(candidates))):

        def gain(d):
            relevance = sum(weight * p.get(d, 0.0) for p in probabilities)
            novelty = sum(weight * p.get(d, 0.0) * r for p, r in zip(probabilities, remaining))
            return (1 - diversity) * relevance + diversity * novelty

        best = max((d for d in candidates if d not in merged), key=gain)  # max keeps the first of ties
        merged.append(best)
        remaining = [r * (1 - p.get(best, 0.0)) for p, r in zip(probabilities, remaining)]
    return merged + [-1] * (k - len(merged))


def test_coverage_gives_a_confident_vectors_slots_to_an_uncertain_one():
    # vector A's top document stands out (covered once taken); vector B is flat: after A's top
    # document every slot goes to B's list, where round-robin alternates
    ids = np.array([[[1, 2, 3, 4], [5, 6, 7, 8]]])
    scores = np.array([[[0.9, 0.3, 0.29, 0.28], [0.5, 0.5, 0.5, 0.5]]])
    assert coverage_merge(ids, scores, 8).tolist() == [[1, 5, 6, 7, 8, 2, 3, 4]]
    assert round_robin_merge(ids, 8).tolist() == [[1, 5, 2, 6, 3, 7, 4, 8]]


def test_coverage_without_diversity_ranks_by_summed_probability():
    # diversity 0: documents by sum_j P(d | j); a document in both lists adds up
    ids = np.array([[[1, 2], [2, 3]]])
    scores = np.array([[[1.0, 0.0], [1.0, 0.0]]])  # temperature 1: P = e/(e+1), 1/(e+1)
    assert coverage_merge(ids, scores, 3, temperature=1.0, diversity=0.0).tolist() == [[2, 1, 3]]


@pytest.mark.parametrize("temperature, diversity", [(0.1, 1.0), (0.05, 0.7), (1.0, 0.5)])
def test_coverage_matches_a_python_reference_on_random_lists(temperature, diversity):
    rng = np.random.default_rng(7)
    ids = np.stack([np.stack([rng.permutation(25)[:9] for _ in range(3)]) for _ in range(30)])
    ids[0, 1, 6:] = -1  # FAISS padding
    scores = -np.sort(-rng.random(ids.shape), axis=-1)
    merged = coverage_merge(ids, scores, 12, temperature=temperature, diversity=diversity)
    expected = [reference_coverage(lists, s, 12, temperature, diversity) for lists, s in zip(ids, scores)]
    assert merged.tolist() == expected


def test_coverage_top_score_weighting_favours_the_vector_near_a_document():
    # B is far from every document (best cosine 0.2): with its weight small, A's second
    # document (P about 0.12 under A) comes before B's first (P 0.5 under B, weight ~0)
    ids = np.array([[[1, 2, 3], [5, 6, 7]]])
    scores = np.array([[[0.9, 0.8, 0.1], [0.2, 0.2, 0.1]]])
    assert coverage_merge(ids, scores, 3, weighting="uniform").tolist() == [[1, 5, 6]]
    assert coverage_merge(ids, scores, 3, weighting="top_score").tolist() == [[1, 2, 5]]
    with pytest.raises(ValueError, match="uniform, top_score"):
        coverage_merge(ids, scores, 3, weighting="max")


def test_ranx_rrf_and_max_are_the_repositorys_own():
    # an independent implementation (the ranx library) of two fusions this module also writes
    rng = np.random.default_rng(5)
    ids = np.stack([np.stack([rng.permutation(40)[:10] for _ in range(3)]) for _ in range(25)])
    scores = -np.sort(-rng.random(ids.shape), axis=-1)
    assert (ranx_fusion(ids, scores, 8, "rrf") == reciprocal_rank_fusion(ids, 8)).all()
    assert (ranx_fusion(ids, scores, 8, "max") == max_score_merge(ids, scores, 8)).all()


def test_combsum_by_hand():
    # min-max per list: A 1 / 0.5 / 0, B 1 / 0.5 / 0; sums 1 (doc 1), 1 (doc 3), 0.5 (2 and 4);
    # ties in round-robin order
    ids = np.array([[[1, 2, 3], [3, 4, 1]]])
    scores = np.array([[[0.9, 0.5, 0.1], [0.8, 0.6, 0.4]]])
    assert get_merge("combsum")(ids, scores, 4).tolist() == [[1, 3, 2, 4]]


def test_ranx_fusion_of_one_vector_is_its_list():
    ids = np.array([[[4, 2, -1]]])
    assert ranx_fusion(ids, np.array([[[0.9, 0.5, 0.0]]]), 3, "sum", "min-max").tolist() == [[4, 2, -1]]
    assert ranx_fusion(np.array([[[1, 2], [-1, -1]]]), np.zeros((1, 2, 2)), 3, "sum").tolist() == [[1, 2, -1]]


@pytest.mark.parametrize("name", list(RANX_FUSIONS))
def test_ranx_fusion_of_a_row_that_kept_fewer_vectors_is_the_fusion_of_those_it_kept(name):
    # row 0 keeps its three vectors, row 1 only its first two: its fusion is that of the two alone
    ids = np.array([[[1, 2, 3], [3, 4, 5], [6, 1, 7]], [[8, 9, 10], [10, 11, 12], [-1, -1, -1]]])
    scores = np.array(
        [[[0.9, 0.5, 0.1], [0.8, 0.6, 0.4], [0.7, 0.3, 0.2]], [[0.9, 0.4, 0.3], [0.6, 0.5, 0.1], [0] * 3]]
    )
    fused = get_merge(name)(ids, scores, 6)
    assert fused[1].tolist() == get_merge(name)(ids[1:, :2], scores[1:, :2], 6)[0].tolist()
    assert fused[0].tolist() == get_merge(name)(ids[:1], scores[:1], 6)[0].tolist()


@pytest.mark.parametrize("name", list(RANX_FUSIONS))
def test_ranx_fusion_of_rows_that_kept_different_vectors_is_each_rows_own(name):
    # ranx pairs queries by position across runs: rows with an empty list in some run must not shift
    rng = np.random.default_rng(0)
    ids = np.stack([np.stack([rng.choice(40, 8, replace=False) for _ in range(4)]) for _ in range(25)])
    scores = -np.sort(-rng.random((25, 4, 8)), axis=-1)
    counts = rng.integers(1, 5, 25)
    ids = np.where(np.arange(4)[None, :, None] < counts[:, None, None], ids, -1)
    fused = get_merge(name)(ids, scores, 20)
    for row, count in enumerate(counts):
        alone = get_merge(name)(ids[row : row + 1, :count], scores[row : row + 1, :count], 20)
        assert fused[row].tolist() == alone[0].tolist(), row


def test_merge_options_are_bound_by_name_and_change_the_list():
    """Worked by hand. At the defaults (temperature 0.05, diversity 1) vector 1's top document 4 is
    surer (P = 0.997) than vector 0's (document 1, P = 0.731), so it goes first, and once vector 1 is
    covered vector 0's second document follows; with temperature 1 and diversity 0 the documents are
    ranked by their mean softmax probability alone: 1 (0.208), 4 (0.207), 2 (0.198), 5, 6, 3."""
    ids = np.array([[[1, 2, 3], [4, 5, 6]]])
    scores = np.array([[[0.9, 0.85, 0.1], [0.5, 0.2, 0.1]]])
    assert get_merge("coverage")(ids, scores, 6).tolist() == [[4, 1, 2, 5, 6, 3]]
    assert get_merge("coverage", temperature=1.0, diversity=0.0)(ids, scores, 6).tolist() == [[1, 4, 2, 5, 6, 3]]
    with pytest.raises(TypeError, match="weight"):
        get_merge("coverage", weight="uniform")(ids, scores, 6)  # a misspelt option is not dropped


def test_coverage_at_a_tiny_temperature_stays_finite_and_serves_the_surer_vector_first():
    """Vector 0 spreads over three documents of equal cosine (P = 1/3 each), vector 1 has one
    (P = 1): document 4 gains 0.5 against 0.17, then vector 0's in order. At temperature 0.001 the
    logits reach 900, which only the subtraction of each list's top keeps finite."""
    ids = np.array([[[1, 2, 3], [4, -1, -1]]])
    scores = np.array([[[0.9, 0.9, 0.9], [0.9, -1.0, -1.0]]])
    assert coverage_merge(ids, scores, 4, temperature=0.001).tolist() == [[4, 1, 2, 3]]


def test_vector_weights_by_hand():
    """Uniform: 1 / (vectors searched); top_score: the softmax over the vectors of their best
    logits, computed per row even when the logits are too large for exp."""
    from amer_lib.beyond.merges import _vector_weights

    tops = np.array([[800.0, 799.0, -np.inf], [1.0, 1.0, 0.0]])
    assert np.allclose(_vector_weights(tops, "uniform"), [[0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    e = np.e
    expected = [[e / (e + 1), 1 / (e + 1), 0.0], [e / (2 * e + 1), e / (2 * e + 1), 1 / (2 * e + 1)]]
    assert np.allclose(_vector_weights(tops, "top_score"), expected)


def test_ranx_fuses_rows_of_two_vectors_and_document_0():
    """RRF over two lists sharing document 0 puts it first (1/62 + 1/61 against 1/61); the
    round-robin order of the same lists is [2, 0]. A list holding only document 0 still counts as
    searched. CombSUM of two lists breaks its tie in round-robin order."""
    ids = np.array([[[2, 0], [0, -1]]])
    scores = np.array([[[0.9, 0.5], [0.8, -1.0]]])
    assert ranx_fusion(ids, scores, 2, "rrf").tolist() == [[0, 2]]
    ids = np.array([[[1, 2], [3, 2]]])
    scores = np.array([[[0.9, 0.8], [0.5, 0.85]]])  # min-max: 1 -> 1, 2 -> 0 + 1, 3 -> 0
    assert ranx_fusion(ids, scores, 3, "sum", "min-max").tolist() == [[1, 2, 3]]
    assert round_robin_merge(ids, 3).tolist() == [[1, 3, 2]]


def test_max_score_ranks_negative_cosines_by_their_maximum():
    ids = np.array([[[1, 2], [3, 4]]])
    scores = np.array([[[-0.1, -0.5], [-0.2, -0.3]]])
    assert max_score_merge(ids, scores, 4).tolist() == [[1, 3, 4, 2]]


def test_found_by_names_the_vector_of_document_0():
    ids = np.array([[[5, 0], [0, 7]]])
    scores = np.array([[[0.9, 0.4], [0.8, 0.3]]])
    vectors, cosines = found_by(ids, scores, np.array([[5, 0, 7, -1]]))
    assert vectors.tolist() == [[0, 1, 1, -1]]  # document 0: vector 1 ranks it first
    assert np.allclose(cosines[0, :3], [0.9, 0.8, 0.3]) and np.isnan(cosines[0, 3])


def test_a_registered_merge_is_a_choice_of_every_merge_parameter():
    """A new merge is one entry: registered, it is what `get_merge`, notebook 04's `merge` and the
    search command accept; a second merge under a taken name is refused with the registered ones."""
    from amer_lib.runs.configs import RealConfig

    def last_vector_first(ids, scores, k):  # the vectors' lists in reverse generation order
        return round_robin_merge(ids[:, ::-1], k)

    entry = Merge(last_vector_first, "last vector first", "#000000")
    register_merge("last_vector_first", entry)
    try:
        ids = np.array([[[1, 2], [3, 4]]])
        assert get_merge("last_vector_first")(ids, np.zeros(ids.shape), 3).tolist() == [[3, 1, 4]]
        assert (
            RealConfig.from_dict({**RealConfig.defaults(), "merge": "last_vector_first"}).merge == "last_vector_first"
        )
        with pytest.raises(ValueError, match="registered already; registered: round_robin"):
            register_merge("last_vector_first", Merge(round_robin_merge, "another", "#ffffff"))
    finally:
        del MERGES["last_vector_first"]
