import numpy as np
import pytest

from amer_lib.baselines.mmr import mmr_rerank, tune_lambda
from amer_lib.core.index import VectorIndex, unit_norm


def brute_force_mmr(query, rows, corpus, lam, k):
    """Independent answer: the MMR objective evaluated candidate by candidate in Python."""
    cos = lambda a, b: float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))
    selected, remaining = [], [r for r in rows if r >= 0]
    while remaining and len(selected) < k:

        def objective(d):
            if not selected:
                return cos(query, corpus[d])
            return lam * cos(query, corpus[d]) - (1 - lam) * max(cos(corpus[d], corpus[s]) for s in selected)

        best = max(remaining, key=objective)
        selected.append(best)
        remaining.remove(best)
    return selected + [-1] * (k - len(selected))


@pytest.fixture
def case():
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((200, 8)).astype(np.float32)
    queries = rng.standard_normal((5, 8)).astype(np.float32)
    _, candidates = VectorIndex(unit_norm(corpus), use_gpu=False).search(queries, 30)
    return corpus, queries, candidates


@pytest.mark.parametrize("lam", [0.0, 0.5, 0.75, 0.9])
def test_mmr_equals_brute_force_greedy(case, lam):
    corpus, queries, candidates = case
    got = mmr_rerank(queries, candidates, lambda rows: corpus[rows], lam, 12, block=2)
    expected = [brute_force_mmr(q, rows.tolist(), corpus, lam, 12) for q, rows in zip(queries, candidates)]
    assert got.tolist() == expected


def test_lambda_one_keeps_the_original_order(case):
    corpus, queries, candidates = case
    assert mmr_rerank(queries, candidates, lambda rows: corpus[rows], 1.0, 30).tolist() == candidates.tolist()


def test_padding_is_never_selected_and_short_lists_are_padded():
    corpus = np.eye(4, dtype=np.float32)
    candidates = np.array([[2, -1, 0, -1]])
    got = mmr_rerank(np.array([[0.0, 0.0, 1.0, 0.5]]), candidates, lambda rows: corpus[rows], 0.5, 4)
    assert got.tolist() == [[2, 0, -1, -1]]


def test_bad_lambda_is_an_error(case):
    corpus, queries, candidates = case
    with pytest.raises(ValueError, match=r"lambda must lie in \[0, 1\]"):
        mmr_rerank(queries, candidates, lambda rows: corpus[rows], 1.5, 5)


def test_tune_lambda_picks_the_best_score():
    # two near-duplicate documents (0, 1) close to the query and one gold document (2) further
    # away: only a diversity-weighted ranking puts both gold clusters {0} and {2} in the top 2
    corpus = np.array([[1.0, 0.0], [0.999, 0.045], [0.6, 0.8]], dtype=np.float32)
    query = np.array([[1.0, 0.1]], dtype=np.float32)
    candidates = np.array([[0, 1, 2]])
    gold = np.array([[[0, 1], [2, -1]]])
    best, scores = tune_lambda(query, candidates, lambda rows: corpus[rows], gold, 2, (0.25, 0.5, 1.0))
    assert scores == {0.25: 1.0, 0.5: 1.0, 1.0: 0.0} and best == 0.5


def test_mmr_query_relevance_comes_from_the_document_encoder_as_the_paper_says(monkeypatch):
    """`mmr_query = "encoder"` (the paper files): Sim_q is the document encoder's query embedding of
    each question; `"trained"` (the offline default): the single-query vector that found the candidates."""
    from conftest import notebook_config

    from amer_lib.baselines import runs as baselines
    from amer_lib.data.questions import MultiAnswerQuestion

    asked = []

    class Encoder:
        def __init__(self, name, device=None):
            asked.append(name)

        def encode_queries(self, texts):
            return np.full((len(texts), 3), float(len(texts)))

    monkeypatch.setattr(baselines, "DocumentEncoder", Encoder)
    questions = [MultiAnswerQuestion(q, f"{q}?", [["a"]]) for q in ("x", "y")]
    trained = np.zeros((2, 3))
    paper = notebook_config("04_real_data", mmr_query="encoder", encoder="minilm")
    assert np.array_equal(baselines.relevance_queries(paper, questions, trained), np.full((2, 3), 2.0))
    assert asked == ["minilm"]
    offline = notebook_config("04_real_data")
    assert offline.mmr_query == "trained" and baselines.relevance_queries(offline, questions, trained) is trained
