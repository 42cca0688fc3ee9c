"""The kept BM25 index (data/bm25.py) against bm25s's own index and retrieve, on WordNet's glosses."""

import json

import bm25s
import numpy as np
import pytest
from bm25s.selection import topk
from bm25s.tokenization import Tokenized, Tokenizer

from amer_lib.data import bm25, wordnet
from amer_lib.data.bm25 import FILES, Bm25Index, select_top_k, write_index
from amer_lib.data.corpus import Corpus


@pytest.fixture(scope="module")
def glosses() -> Corpus:
    return Corpus(wordnet.load_corpus().documents[:3000])


def bm25s_index(texts: list[str], folder) -> None:
    """What bm25s's own index saves for the token ids of the tokenizer `write_index` uses."""
    tokenizer = Tokenizer(stopwords="en")
    ids = tokenizer.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(Tokenized(ids=ids, vocab=tokenizer.get_vocab_dict()), show_progress=False)
    retriever.save(str(folder))


def test_the_bounded_build_writes_the_files_bm25s_writes(glosses, tmp_path, monkeypatch):
    """Many runs of documents and many merge blocks (sizes far below the defaults), empty and
    stopword-only documents among them: the score matrix, the vocabulary and the parameters are
    bm25s's, byte for byte."""
    texts = glosses.texts()[:2000] + ["", "the of and", "zebra"] + glosses.texts()[2000:]
    monkeypatch.setattr(bm25, "RUN_DOCUMENTS", 700)
    monkeypatch.setattr(bm25, "TOKENIZE_BATCH", 300)
    monkeypatch.setattr(bm25, "MERGE_POSTINGS", 2000)
    (tmp_path / "ours").mkdir()
    assert write_index(iter(texts), tmp_path / "ours", progress=False) == len(texts)
    bm25s_index(texts, tmp_path / "bm25s")
    for name in FILES.values():
        ours, theirs = (tmp_path / folder / name for folder in ("ours", "bm25s"))
        assert ours.read_bytes() == theirs.read_bytes(), name
    for name in ("vocab.index.json", "params.index.json"):
        ours, theirs = (json.loads((tmp_path / folder / name).read_text()) for folder in ("ours", "bm25s"))
        assert ours == theirs, name
    assert [p.name for p in (tmp_path / "ours").iterdir() if p.name.startswith(".")] == []  # runs removed


def test_the_kept_index_gives_the_rows_bm25s_gave_and_is_read_back(glosses, tmp_path, monkeypatch):
    """Against bm25s's own index and retrieve (what the mapping and notebook 01 used before),
    edge queries included (empty, stopwords only, unknown words, k past the corpus)."""

    def bm25s_top_k(queries, k):
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(glosses.texts(), stopwords="en", show_progress=False), show_progress=False)
        tokens = bm25s.tokenize(queries, stopwords="en", show_progress=False)
        return retriever.retrieve(tokens, k=min(k, len(glosses)), show_progress=False, backend_selection="numpy")[0]

    queries = [q.question for q in wordnet.load_questions("senses", "train")[:200]]
    queries += ["", "the of and", "zzzqqq unknownword", glosses.documents[7].text]
    key = {"corpus": "wordnet glosses", "documents": len(glosses)}
    index = Bm25Index.of_corpus(glosses.texts(), len(glosses), tmp_path / "bm25", key, progress=False)
    for k in (10, 500, 5000):
        assert np.array_equal(index.top_k(queries, k, progress=False), bm25s_top_k(queries, k))
    # equal scores by row: the same scores in every list, equal ones by row, other rows for some
    tokens = bm25s.tokenize(queries, stopwords="en", return_ids=False, show_progress=False)
    scores = [index.retriever.get_scores(t) if t else np.zeros(len(glosses), np.float32) for t in tokens]
    for k in (10, 500):
        default, by_row = index.top_k(queries, k, progress=False), index.top_k(queries, k, ties="row")
        for row_scores, theirs, ours in zip(scores, default, by_row):
            assert np.array_equal(row_scores[ours], row_scores[theirs])
            tied = row_scores[ours][1:] == row_scores[ours][:-1]
            assert np.all(ours[1:][tied] > ours[:-1][tied])
    assert np.all(np.any(default != by_row, axis=1))  # at k = 500 zero scores fill every list
    default, by_row = index.top_k(queries, 10, progress=False), index.top_k(queries, 10, ties="row")
    assert 0 < np.mean(np.any(default != by_row, axis=1)) < 1
    in_memory = Bm25Index.build(glosses.texts(), progress=False)  # notebook 01's: the same rows
    assert np.array_equal(in_memory.top_k(queries, 100, progress=False), index.top_k(queries, 100, progress=False))
    # spread over two forked processes (two chunks of queries and more): the same rows
    assert np.array_equal(index.top_k(queries * 2, 100, progress=False, processes=2), index.top_k(queries * 2, 100))
    monkeypatch.setattr(bm25, "write_index", lambda *a, **k: pytest.fail("built again"))
    again = Bm25Index.of_corpus(glosses.texts(), len(glosses), tmp_path / "bm25", key, progress=False)
    assert np.array_equal(again.top_k(queries, 100, progress=False), index.top_k(queries, 100, progress=False))
    monkeypatch.undo()
    other = Bm25Index.of_corpus(glosses.texts()[:50], 50, tmp_path / "bm25", {**key, "documents": 50}, progress=False)
    assert other.n_documents == 50  # another corpus's key: built anew


def test_a_build_killed_midway_leaves_no_index(glosses, tmp_path, monkeypatch):
    """A failure while the runs are merged: no index under the final name, no staging folder left."""

    def dies(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bm25, "_block", dies)
    with pytest.raises(KeyboardInterrupt):
        Bm25Index.of_corpus(glosses.texts(), len(glosses), tmp_path / "bm25", {"k": 1}, progress=False)
    assert list(tmp_path.iterdir()) == []


def scores_with_ties(rng: np.random.Generator, n: int, positive: int, levels: int) -> np.ndarray:
    """`n` float32 scores, exactly zero but for `positive` of them drawn from `levels` values
    (few levels: many equal scores)."""
    scores = np.zeros(n, dtype=np.float32)
    scores[rng.choice(n, positive, replace=False)] = rng.integers(1, levels + 1, positive) / np.float32(7)
    return scores


def test_the_selection_by_row_against_a_sort():
    """`ties="row"` against a sort by score, then row (`np.lexsort`), on score vectors with many
    equal scores and exact zeros: fewer positive scores than k, none, every one, k of 0 and k of
    the whole vector; `ties="bm25s"` is bm25s's numpy `topk`."""
    rng = np.random.default_rng(0)
    cases = [(1, 1, 0, 1), (1, 0, 1, 1), (600, 600, 0, 3), (600, 0, 600, 3), (600, 600, 600, 10**6)]
    for _ in range(400):
        n = int(rng.integers(1, 3000))
        cases.append((n, int(rng.integers(0, n + 1)), int(rng.integers(0, n + 1)), int(rng.choice([2, 40, 10**6]))))
    for n in (20_000, 200_000):  # larger vectors, mostly zeros, k = 500 (the mapping's)
        cases += [(n, 500, 300, 50), (n, 500, 2000, 10**6), (n, 500, 5000, 30), (n, 500, 0, 1)]
    for n, k, positive, levels in cases:
        scores = scores_with_ties(rng, n, positive, levels)
        by_score_then_row = np.lexsort((np.arange(n), -scores))[:k]
        assert np.array_equal(select_top_k(scores, k, ties="row"), by_score_then_row), (n, k, positive, levels)
        expected = topk(scores, k, backend="numpy", sorted=True)[1]
        assert np.array_equal(select_top_k(scores, k), expected)


def test_the_selection_by_row_by_hand():
    scores = np.array([0, 3, 0, 5, 3, 4, 0], dtype=np.float32)
    assert select_top_k(scores, 2, ties="row").tolist() == [3, 5]
    assert select_top_k(scores, 3, ties="row").tolist() == [3, 5, 1]  # of the equal 3s, the first row
    assert select_top_k(scores, 6, ties="row").tolist() == [3, 5, 1, 4, 0, 2]  # zeros fill from the first row
    assert select_top_k(np.zeros(3, dtype=np.float32), 2, ties="row").tolist() == [0, 1]
    assert select_top_k(scores, 0, ties="row").tolist() == []


def test_the_selection_refuses_what_bm25s_would_not_answer():
    with pytest.raises(ValueError, match="0 <= k <= its length 3"):
        select_top_k(np.zeros(3, dtype=np.float32), 4)
    with pytest.raises(ValueError, match="one row of scores"):
        select_top_k(np.zeros((2, 3), dtype=np.float32), 1)
    with pytest.raises(ValueError, match=r"order of equal BM25 scores 'rows'; choose one of \('bm25s', 'row'\)"):
        select_top_k(np.zeros(3, dtype=np.float32), 1, ties="rows")


def test_a_damaged_index_is_said_and_built_again(glosses, tmp_path, capsys):
    key = {"corpus": "wordnet glosses", "documents": 200}
    texts = glosses.texts()[:200]
    index = Bm25Index.of_corpus(texts, 200, tmp_path / "bm25", key, progress=False)
    expected = index.top_k(["a kind of dog"], 10, progress=False)
    del index
    target = max((p for p in (tmp_path / "bm25").iterdir() if p.suffix == ".npy"), key=lambda p: p.stat().st_size)
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x01  # the last score or index: bm25s would read it without a word
    target.write_bytes(bytes(data))
    again = Bm25Index.of_corpus(texts, 200, tmp_path / "bm25", key, progress=False)
    assert f"the BM25 index {tmp_path / 'bm25'} is damaged ({target.name} has sha256" in capsys.readouterr().out
    assert np.array_equal(again.top_k(["a kind of dog"], 10, progress=False), expected)
