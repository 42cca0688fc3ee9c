"""Gold-document mapping on a hand-made corpus, and the Table 1 splits."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from amer_lib.data.corpus import Corpus
from amer_lib.data.gold import (
    ambigqa_splits,
    bm25_top_k,
    map_gold_documents,
    qampari_splits,
    question_candidates,
    without_test_questions,
)
from amer_lib.data.prepared import prepare_paper_data
from amer_lib.data.questions import MultiAnswerQuestion, normalize_text, read_ambigqa

FIXTURES = Path(__file__).parent / "fixtures"


def test_exact_substring_mapping_keeps_questions_whose_every_answer_is_found():
    corpus = Corpus.read(FIXTURES / "corpus.tsv")  # rows 0..5 hold ids "1".."6"
    [harry] = read_ambigqa(FIXTURES / "ambigqa_light.json")
    director = MultiAnswerQuestion("d", "directors?", [["Zack Snyder"], ["Ariel Schulman"], ["Jose Padilha"]])
    # BM25 found rows 0, 4 and 5 for Harry Potter; the dense retriever rows 1 and 4 (4 twice: de-duplicated)
    candidates = question_candidates(np.array([[0, 4, 5], [2, 3, -1]]), np.array([[1, 4, -1], [0, 1, 2]]))
    mapped, report = map_gold_documents([harry, director], corpus, candidates)
    assert [q.qid for q in mapped] == [harry.qid]  # no document names Jose Padilha
    # "4 November 2001" is in doc 1; "16 November 2001" in doc 2 ("November" alone in doc 5 is no answer)
    assert mapped[0].targets == [["1"], ["2"]]
    assert (report.questions, report.kept, report.answers_without_gold) == (2, 1, 1)


def test_aliases_and_case_sensitivity():
    corpus = Corpus.read(FIXTURES / "corpus.tsv")
    question = MultiAnswerQuestion("q", "?", [["zack snyder", "Zack Snyder"], ["leonard cohen"]])
    mapped, report = map_gold_documents([question], corpus, [np.arange(6)])
    assert mapped == [] and report.answers_without_gold == 1  # "leonard cohen" is not an exact substring
    question = MultiAnswerQuestion("q", "?", [["zack snyder", "Zack Snyder"], ["Leonard Cohen"]])
    [mapped], _ = map_gold_documents([question], corpus, [np.arange(6)])
    assert mapped.targets == [["3"], ["6"]]


def test_table1_splits():
    make = lambda prefix, n, m=2: [MultiAnswerQuestion(f"{prefix}{i}", "?", [["a"]] * m, [["1"]] * m) for i in range(n)]
    make_texts = lambda prefix, n: [
        MultiAnswerQuestion(f"{prefix}{i}", f"{prefix} question {i}?", [["a"]] * 2, [["1"]] * 2) for i in range(n)
    ]
    splits, removed = ambigqa_splits(make_texts("t", 3), make_texts("d", 10), make_texts("nq", 2), seed=0)
    assert len(splits["test"]) == 5 and len(splits["train"]) == 3 + 5 + 2 and removed == 0
    assert not {q.qid for q in splits["test"]} & {q.qid for q in splits["train"]}
    assert (splits, removed) == ambigqa_splits(make_texts("t", 3), make_texts("d", 10), make_texts("nq", 2), seed=0)
    qampari = qampari_splits(make("t", 2, 4) + make("u", 2, 5) + make("v", 1, 9), make("d", 1, 8))
    assert [q.qid for q in qampari["train"]] == ["u0", "u1"] and len(qampari["test"]) == 1


def test_candidate_lists_must_match_questions():
    with pytest.raises(ValueError, match="1 candidate lists for 2 questions"):
        map_gold_documents(
            [MultiAnswerQuestion("a", "?", [["x"]])] * 2, Corpus.read(FIXTURES / "corpus.tsv"), [np.arange(2)]
        )


def test_training_questions_that_are_test_questions_are_removed():
    dev = [MultiAnswerQuestion(f"d{i}", f"Who wrote song {i}?", [["a"], ["b"]], [["1"], ["2"]]) for i in range(4)]
    splits, _ = ambigqa_splits([], dev, [], seed=0)
    leaked = splits["test"][0]
    # NQ-open writes the same question in lower case without the question mark
    nq = [
        MultiAnswerQuestion("nq1", leaked.question.lower().rstrip("?"), [["a"], ["b"]], [["1"], ["2"]]),
        MultiAnswerQuestion("nq2", "who wrote another song", [["a"], ["b"]], [["1"], ["2"]]),
    ]
    splits, removed = ambigqa_splits([], dev, nq, seed=0)
    assert removed == 1 and "nq1" not in {q.qid for q in splits["train"]} and "nq2" in {q.qid for q in splits["train"]}
    kept, removed = without_test_questions(nq, [leaked])
    assert [q.qid for q in kept] == ["nq2"] and removed == 1


class FixedRetriever:
    """A dense retriever stub for `prepare_paper_data`: each question text retrieves fixed corpus rows."""

    def __init__(self, name: str, rows: dict[str, list[int]]):
        self.spec, self.rows = SimpleNamespace(name=name), rows

    def encode_queries(self, texts):
        return texts

    def __len__(self):
        return 6

    def search(self, texts, k):
        return None, np.array([(self.rows.get(t, []) + [-1] * k)[:k] for t in texts])


def test_paper_mapping_takes_the_union_of_bm25_and_both_dense_retrievers(tmp_path):
    """AmbigQA files in their real formats; depth 1, so each retriever contributes its top document.
    The Harry Potter question needs documents 1 and 2: BM25 finds one of them, the stub
    "Contriever" the other, the stub "inf-retriever" neither."""
    raw = tmp_path / "raw"
    raw.mkdir()
    records = json.loads((FIXTURES / "ambigqa_light.json").read_text())
    directors = {
        "id": "d2",
        "question": "Who directed the films?",
        "annotations": [
            {
                "type": "multipleQAs",
                "qaPairs": [
                    {"question": "2004?", "answer": ["Zack Snyder"]},
                    {"question": "2020?", "answer": ["Ariel Schulman"]},
                ],
            }
        ],
    }
    (raw / "train_light.json").write_text(json.dumps(records))
    (raw / "dev_light.json").write_text(json.dumps(records + [directors]))
    for name in ("NQ-open.dev.jsonl", "NQ-open.efficientqa.test.1.1.jsonl"):
        shutil.copy(FIXTURES / "nq_open.jsonl", raw / name)
    for name in ("train_data.jsonl", "dev_data.jsonl"):
        shutil.copy(FIXTURES / "qampari.jsonl", raw / name)
    corpus = Corpus.read(FIXTURES / "corpus.tsv")
    harry = records[0]["question"]
    [[bm25_row]] = bm25_top_k(corpus, [harry], 1, progress=False)
    assert bm25_row in (0, 1)  # one of the two Harry Potter documents
    other = 1 - int(bm25_row)
    nq_harry = "when did harry potter and the sorcerer's stone movie come out"
    directors = directors["question"]
    contriever = FixedRetriever("contriever-msmarco", {harry: [other], nq_harry: [other], directors: [2]})
    inf = FixedRetriever("inf-retriever-v1-1.5b", {directors: [3]})  # Ariel Schulman's document

    def prepare(retrievers, name):
        benchmark, mapping = prepare_paper_data(
            raw, FIXTURES / "corpus.tsv", tmp_path / name, [(r, r) for r in retrievers], seed=0, progress=False, depth=1
        )
        return benchmark, mapping

    benchmark, mapping = prepare([contriever, inf], "three")
    assert mapping["ambigqa_dev"]["kept"] == 2  # Harry Potter (BM25 + Contriever) and the directors (both stubs)
    assert mapping["ambigqa_train"]["kept"] == 1
    _, without_contriever = prepare([inf], "two")
    # without Contriever both lose a gold document: Harry Potter's other date, and Zack Snyder
    assert without_contriever["ambigqa_dev"]["kept"] == 0
    test = {normalize_text(q.question) for q in benchmark.questions("ambigqa", "test")}
    train = [normalize_text(q.question) for q in benchmark.questions("ambigqa", "train")]
    assert len(test) == 1 and not test & set(train)  # no test question is trained on
    # seed 0 puts Harry Potter in the test half: its AmbigQA-train copy and both NQ-open copies are removed
    assert test == {normalize_text(harry)} and mapping["ambigqa_train_removed_as_test_questions"] == 3
