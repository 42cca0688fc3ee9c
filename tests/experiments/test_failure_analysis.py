import numpy as np
import pytest
from stand_ins import HashEncoder

from amer_lib.core.metrics import mean_pairwise_distance
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.encoders import encode_corpus
from amer_lib.data.questions import MultiAnswerQuestion, write_questions
from amer_lib.experiments.failure_analysis import (
    BIN_LABELS,
    answer_groups,
    check_retriever,
    failure_run,
    figure1_rows,
    per_bin_mrecall,
    quartile_bins,
    score,
)
from amer_lib.io import write_json


def test_mean_pairwise_distance_on_known_vectors():
    square = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])  # pairs: 90, 180, 90 degrees
    cosine, euclidean = (mean_pairwise_distance([square], m)[0] for m in ("cosine", "euclidean"))
    assert cosine == pytest.approx((1 + 2 + 1) / 3)
    assert euclidean == pytest.approx((np.sqrt(2) + 2 + np.sqrt(2)) / 3)
    assert mean_pairwise_distance([np.array([[2.0, 0.0], [5.0, 0.0]])], "cosine")[0] == pytest.approx(0.0)


def test_distance_errors_name_the_problem():
    with pytest.raises(ValueError, match="valid: cosine, euclidean"):
        mean_pairwise_distance([np.eye(2)], "manhattan")
    for metric in ("cosine", "euclidean"):
        with pytest.raises(ValueError, match="question 1 has 1 target"):
            mean_pairwise_distance([np.eye(2), np.ones((1, 3))], metric)


def test_quartile_bins_by_hand():
    distances = np.array([0.8, 0.1, 0.4, 0.3, 0.2, 0.6, 0.7, 0.5])
    bins, edges = quartile_bins(distances)
    assert edges.tolist() == pytest.approx([0.275, 0.45, 0.625])
    assert bins.tolist() == [3, 0, 1, 1, 0, 2, 3, 2]
    assert np.bincount(bins, minlength=4).tolist() == [2, 2, 2, 2]


def test_values_on_an_edge_go_to_the_lower_bin_and_every_question_has_one_bin():
    distances = np.array([1.0, 2.0, 2.0, 2.0, 3.0])  # quartiles 2, 2, 2
    bins, _ = quartile_bins(distances)
    assert bins.tolist() == [0, 0, 0, 0, 3]
    rng = np.random.default_rng(0)
    bins, _ = quartile_bins(rng.random(101))
    assert len(bins) == 101 and set(bins.tolist()) == {0, 1, 2, 3}


def test_per_bin_mrecall_by_hand():
    mrecall = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    distances = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    sizes = np.array([2, 2, 2, 2, 3, 3, 3, 3])
    rows = {(r["answers"], r["bin"]): r for r in per_bin_mrecall(mrecall, distances, sizes, min_questions=4)}
    assert [rows["all", b]["mrecall"] for b in BIN_LABELS] == [50.0, 100.0, 50.0, 0.0]
    assert all(rows["all", b]["questions"] == 2 for b in BIN_LABELS)
    assert rows["all", "<25%"]["distance"] == pytest.approx(0.15)
    # each size column is cut at its own quartiles: one question per bin here
    assert [rows["2", b]["mrecall"] for b in BIN_LABELS] == [100.0, 0.0, 100.0, 100.0]
    assert [rows["3", b]["mrecall"] for b in BIN_LABELS] == [0.0, 100.0, 0.0, 0.0]
    assert rows["3", ">75%"]["distance"] == pytest.approx(0.8)


def test_small_answer_sizes_merge_into_a_column():
    sizes = np.array([2] * 50 + [3] * 45 + [4] * 30 + [5] * 10 + [7] * 3)
    groups = answer_groups(sizes, min_questions=40)
    assert [label for label, _ in groups] == ["2", "3", ">=4"]
    assert [int(mask.sum()) for _, mask in groups] == [50, 45, 43]
    assert sum(mask.astype(int) for _, mask in groups).tolist() == [1] * len(sizes)  # each question once
    assert [label for label, _ in answer_groups(np.array([5] * 10 + [6] * 10 + [7] * 50), 15)] == ["5-6", "7"]


def test_score_by_hand():
    questions = [
        MultiAnswerQuestion("q1", "?", [["a"], ["b"]], [["d1", "d2"], ["d3"]]),
        MultiAnswerQuestion("q2", "?", [["a"], ["b"]], [["d4"], ["d5"]]),
    ]
    ranked = [["x", "d2", "y", "d3"], ["d4", "z"]]
    assert score(ranked, questions, k=4).tolist() == [1.0, 0.0]
    assert score(ranked, questions, k=2).tolist() == [0.0, 0.0]  # d3 is fourth


def test_unknown_retriever_lists_the_valid_ones():
    with pytest.raises(ValueError, match="valid retrievers: bm25, minilm"):
        check_retriever("splade")


def tiny_benchmark(directory):
    words = ["apple", "river", "stone", "cloud", "piano", "tiger", "lemon", "candle"]
    (directory / "corpus.tsv").write_text(
        "id\ttext\ttitle\n" + "".join(f"d{i}\t{w} {w} story\t\n" for i, w in enumerate(words))
    )
    questions = [
        MultiAnswerQuestion("q1", "apple river", [["a"], ["b"]], [["d0"], ["d1"]]),
        MultiAnswerQuestion("q2", "stone piano", [["a"], ["b"], ["c"]], [["d2"], ["d4"], ["d7"]]),
    ]
    write_questions(directory / "toy_test.jsonl", questions)
    write_json(
        directory / "manifest.json",
        {"corpus": str(directory / "corpus.tsv"), "datasets": ["toy"], "n_queries": {"toy": 2}},
    )
    benchmark = Benchmark(directory)
    encode_corpus(HashEncoder("minilm"), benchmark.documents(), directory / "embeddings" / "minilm", progress=False)
    return benchmark, questions


def test_bm25_failure_run_scores_writes_and_reads_back(tmp_path, monkeypatch):
    benchmark, questions = tiny_benchmark(tmp_path)
    run = failure_run(benchmark, "toy", "bm25", tmp_path / "results", k=3, progress=False)
    assert run["mrecall"] == [1.0, 0.0]  # q1's two words are its targets; d7 (candle) shares no word with q2
    assert run["answers"] == [2, 3] and run["settings"]["distance_encoder"] == "minilm"
    shards = benchmark.embeddings("minilm")
    a, b = shards.rows(np.array([0, 1])).astype(np.float64)
    assert run["cosine"][0] == pytest.approx(1 - a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert run["euclidean"][0] == pytest.approx(np.linalg.norm(a - b))
    trec = (tmp_path / "results" / "toy_bm25.trec").read_text().splitlines()
    assert trec[0].split()[:4] in (["q1", "Q0", "d0", "1"], ["q1", "Q0", "d1", "1"]) and len(trec) == 6
    monkeypatch.setattr(
        "amer_lib.experiments.failure_analysis.retrieve", lambda *a, **k: pytest.fail("the stored run was not reused")
    )
    assert failure_run(benchmark, "toy", "bm25", tmp_path / "results", k=3, progress=False) == run
    rows = figure1_rows([run], "cosine", min_questions=1)
    assert {r["retriever"] for r in rows} == {"bm25"} and sum(
        r["questions"] for r in rows if r["answers"] == "all"
    ) == 2


@pytest.mark.parametrize("damage", ["trec cut short", "trec gone", "results garbled"])
def test_a_damaged_stored_run_is_said_and_made_again_to_the_same_files(tmp_path, damage):
    """Issue 78: a TREC run cut short at a line boundary (which ir_measures would score as it is),
    deleted, or a results JSON garbled, is not read back: the warning names the file, and the run
    made again writes what the first one wrote."""
    from amer_lib.progress import AmerWarning

    benchmark, _ = tiny_benchmark(tmp_path)
    results = tmp_path / "results"
    run = failure_run(benchmark, "toy", "bm25", results, k=3, progress=False)
    trec, stored = results / "toy_bm25.trec", results / "toy_bm25.json"
    first = trec.read_text()
    if damage == "trec cut short":
        trec.write_text("".join(first.splitlines(keepends=True)[:3]))
    elif damage == "trec gone":
        trec.unlink()
    else:
        stored.write_bytes(b"\xff\x00 not json")
    named = trec if damage.startswith("trec") else stored
    with pytest.warns(AmerWarning, match=rf"{named} is .*the run is made again"):
        again = failure_run(benchmark, "toy", "bm25", results, k=3, progress=False)
    assert {k: v for k, v in again.items() if k != "git_commit"} == {k: v for k, v in run.items() if k != "git_commit"}
    assert trec.read_text() == first
