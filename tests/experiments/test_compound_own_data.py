"""A compound dataset of your own (the FOLDOC replication): notebook 04 recognises it by its
`answer_questions` and reads its components from them, as it reads the WordNet compounds'."""

from __future__ import annotations

from amer_lib.beyond import compound
from amer_lib.beyond.decomposition import _components, components_per_question
from amer_lib.data.questions import MultiAnswerQuestion


def question(qid, parts):
    """A compound whose answers are grouped by component text `parts` [(text, n answers)]."""
    answers, targets, asked = [], [], []
    for text, n in parts:
        for i in range(n):
            answers.append([f"{text}-{i}"])
            targets.append([f"{qid}-{text}-{i}"])
            asked.append(text)
    return MultiAnswerQuestion(qid, " ".join(t for t, _ in parts), answers, targets, answer_questions=asked)


def test_wordnet_compounds_split_into_their_own_components():
    """Against an independent answer: the WordNet questions a compound's qid names."""
    by_qid = compound.component_questions()
    chosen = [by_qid["senses:bass"], by_qid[next(q for q in by_qid if q.startswith("kinds:"))]]
    joined = compound.join(chosen, 1)
    (parts,) = _components([joined])
    assert [p.question for p in parts] == [c.question for c in chosen]
    assert [p.targets for p in parts] == [c.targets for c in chosen]
    assert [p.answers for p in parts] == [c.answers for c in chosen]


def test_own_components_follow_the_answer_order():
    q = question("q", [("What is A?", 2), ("What is B?", 3)])
    (parts,) = _components([q])
    assert [(p.qid, p.question, len(p.targets)) for p in parts] == [("q#0", "What is A?", 2), ("q#1", "What is B?", 3)]
    assert parts[1].targets == [["q-What is B?-0"], ["q-What is B?-1"], ["q-What is B?-2"]]


def test_components_per_question():
    two = [question("a", [("A", 1), ("B", 2)]), question("b", [("C", 3), ("D", 1)])]
    assert components_per_question(two) == 2
    assert components_per_question([*two, question("c", [("E", 1), ("F", 1), ("G", 1)])]) is None  # mixed k
    assert components_per_question([question("d", [("A", 3)])]) is None  # one component: not a compound
    plain = MultiAnswerQuestion("p", "What?", [["x"], ["y"]], [["1"], ["2"]])
    assert components_per_question([plain]) is None  # no answer_questions
