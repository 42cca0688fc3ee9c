"""Compound questions: k WordNet questions joined into one, the training and test sides built from
disjoint components, the answers capped by choosing components, never by dropping answers."""

import numpy as np
import pytest

from amer_lib.data import compound, wordnet
from amer_lib.data.compound import component_word, components_of, join, sample_compounds
from amer_lib.data.prepared import prepare_compound
from amer_lib.data.questions import MultiAnswerQuestion


def question(qid, text, n):
    return MultiAnswerQuestion(qid, text, [[f"{qid}-a{i}"] for i in range(n)], [[f"{qid}-d{i}"] for i in range(n)])


BASS = question("senses:bass", 'What does the word "bass" mean?', 3)
TREE = question("kinds:n13104059", "What are examples of tree?", 5)
FEAT = question("senses:feat", 'What does the word "feat" mean?', 2)


def test_a_compound_holds_its_components_answers_in_order_under_one_of_the_templates():
    assert component_word(BASS) == "bass" and component_word(TREE) == "tree"
    with pytest.raises(ValueError, match="not a WordNet senses or kinds question"):
        component_word(question("mine:1", "?", 2))
    joined = join([TREE, BASS], template=1)
    assert joined.qid == "compound_k2:kinds:n13104059+senses:bass" and components_of(joined) == [TREE.qid, BASS.qid]
    assert joined.question == 'What are examples of tree? And what does the word "bass" mean?'
    assert joined.answers == TREE.answers + BASS.answers and joined.targets == TREE.targets + BASS.targets
    three = join([TREE, BASS, FEAT], template=2)
    assert (
        three.question
        == 'What are examples of tree, What does the word "bass" mean, and what does the word "feat" mean?'
    )
    assert join([BASS], template=3).question == BASS.question  # k = 1: the component as it is


def test_compounds_fit_the_answer_cap_with_distinct_components_and_words():
    pool = wordnet.load_questions("senses", "test") + wordnet.load_questions("kinds", "test")
    drawn = sample_compounds(pool, 3, 200, 8, np.random.default_rng(1))
    assert len(drawn) == 200 and len({q.qid for q in drawn}) == 200
    by_qid = {q.qid: q for q in pool}
    for q in drawn:
        parts = [by_qid[qid] for qid in components_of(q)]
        assert len(q.answers) <= 8 and sum(len(p.answers) for p in parts) == len(q.answers)  # no answer dropped
        assert len({component_word(p) for p in parts}) == 3
    again = sample_compounds(pool, 3, 200, 8, np.random.default_rng(1))
    assert [q.question for q in again] == [q.question for q in drawn]  # the same seed, the same compounds
    with pytest.raises(ValueError, match="k = 5 components have at least 10 answers; max_answers is 8"):
        sample_compounds(pool, 5, 10, 8, np.random.default_rng(0))


def test_the_compound_benchmark_keeps_training_and_test_components_apart(tmp_path):
    benchmark = prepare_compound(tmp_path, [1, 2, 3], 120, 40, 4000, 8, ["senses", "kinds"], seed=0)
    assert benchmark.datasets == ["compound_k1", "compound_k2", "compound_k3"]
    test_components = {q.qid for kind in ("senses", "kinds") for q in wordnet.load_questions(kind, "test")}
    corpus = {d.id for d in benchmark.documents()}
    for k in (1, 2, 3):
        dataset = compound.dataset_name(k)
        train, test = benchmark.questions(dataset, "train"), benchmark.questions(dataset, "test")
        assert (len(train), len(test)) == (120, 40)
        assert all(len(components_of(q)) == k and len(q.answers) <= 8 for q in train + test)
        assert all(set(components_of(q)) <= test_components for q in test)
        assert not any(set(components_of(q)) & test_components for q in train)
        sizes = sorted(len(q.answers) for q in train)
        assert benchmark.n_queries(dataset) == int(np.ceil(np.median(sizes)))
        assert {d for q in train + test for docs in q.targets for d in docs} <= corpus
    assert len(corpus) == 4000  # the gold glosses and random others
