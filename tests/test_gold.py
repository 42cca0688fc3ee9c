"""Gold-document mapping on a hand-made corpus, and the Table 1 splits."""
from pathlib import Path

import numpy as np
import pytest

from amer_lib.data.corpus import Corpus
from amer_lib.data.gold import ambigqa_splits, map_gold_documents, qampari_splits, question_candidates
from amer_lib.data.questions import MultiAnswerQuestion, read_ambigqa

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
    splits = ambigqa_splits(make("t", 3), make("d", 10), make("nq", 2), seed=0)
    assert len(splits["test"]) == 5 and len(splits["train"]) == 3 + 5 + 2
    assert not {q.qid for q in splits["test"]} & {q.qid for q in splits["train"]}
    assert splits == ambigqa_splits(make("t", 3), make("d", 10), make("nq", 2), seed=0)  # seeded
    qampari = qampari_splits(make("t", 2, 4) + make("u", 2, 5) + make("v", 1, 9), make("d", 1, 8))
    assert [q.qid for q in qampari["train"]] == ["u0", "u1"] and len(qampari["test"]) == 1


def test_candidate_lists_must_match_questions():
    with pytest.raises(ValueError, match="1 candidate lists for 2 questions"):
        map_gold_documents([MultiAnswerQuestion("a", "?", [["x"]])] * 2, Corpus.read(FIXTURES / "corpus.tsv"),
                           [np.arange(2)])
