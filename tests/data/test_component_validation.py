"""A dataset of your own whose questions carry `answer_questions`: notebook 03 draws validation
questions that share no component question with a training question (`component_validation`), as
the compound benchmark's own split does; without `answer_questions` the split is today's."""

import dataclasses
import json

import pytest

from amer_lib.core.train import split_train_validation
from amer_lib.data.preparation import component_validation, prepare_files, split_questions
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.progress import AmerWarning


def compound(qid: str, components) -> MultiAnswerQuestion:
    """A question of one answer per component (a letter of a string, or a list's names), each
    answer's question that component's."""
    return MultiAnswerQuestion(
        qid,
        f"{qid}?",
        [[f"{qid}-{c}"] for c in components],
        [["d0"] for _ in components],
        answer_questions=[f"What is {c}?" for c in components],
    )


def components(question: MultiAnswerQuestion) -> set[str]:
    return set(question.answer_questions or [question.question])


def assert_disjoint(splits: dict, report: dict, questions: list[MultiAnswerQuestion]) -> None:
    """No validation question shares a component question with a training question; each left-out
    question shares one with both splits; the report counts the splits."""
    trained = set().union(*(components(q) for q in splits["train"]))
    validated = set().union(*(components(q) for q in splits["validation"]))
    assert trained.isdisjoint(validated)
    kept = {q.qid for q in splits["train"] + splits["validation"]}
    left = [q for q in questions if q.qid not in kept]
    assert all(components(q) & validated for q in left)
    assert report == {
        "wanted": max(1, round(0.1 * len(questions))),
        "drawn": len(splits["validation"]),
        "left_out": len(left),
        "train": len(splits["train"]),
    }


# Twelve compounds of two or three of the components A-L, overlapping in chains and a triangle
OVERLAPPING = [
    compound(f"c{i}", parts)
    for i, parts in enumerate(["AB", "BC", "CD", "DA", "AC", "EF", "FG", "GE", "HI", "IJ", "JK", "KLH", "L", "AE"])
]


@pytest.mark.parametrize("seed", range(8))
def test_no_validation_question_shares_a_component_question_with_a_training_question(seed):
    splits, report = component_validation(OVERLAPPING, seed)
    assert_disjoint(splits, report, OVERLAPPING)
    assert report["drawn"] >= report["wanted"] == 1
    assert component_validation(OVERLAPPING, seed) == (splits, report)  # seeded


def test_the_draw_prefers_questions_whose_components_are_already_held_out():
    """A triangle of compounds (A-B, B-C, A-C) among 27 that share nothing: once one of the three is
    drawn, the other two have one component left each, fewer than any other question, so the next
    draw holds that component out and both join validation, also when the first one reached the 3
    wanted (holding C out takes nothing more from training). The triangle is never split, so no
    question is ever left out, whatever the seed (by hand)."""
    triangle = [compound("t0", "AB"), compound("t1", "BC"), compound("t2", "AC")]
    loners = [compound(f"s{i}", [f"s{i}-x", f"s{i}-y"]) for i in range(27)]
    questions = loners[:10] + triangle + loners[10:]
    touched = 0
    for seed in range(40):
        splits, report = component_validation(questions, seed)
        assert_disjoint(splits, report, questions)
        drawn = {q.qid for q in splits["validation"]} & {"t0", "t1", "t2"}
        assert drawn in (set(), {"t0", "t1", "t2"}) and report["left_out"] == 0
        # 3 wanted: three loners, or the triangle after none, one or two loners
        assert report["drawn"] in ((3, 4, 5) if drawn else (3,))
        touched += bool(drawn)
    assert 0 < touched < 40  # the triangle is drawn by some seeds, not by all


def test_a_hub_component_shared_widely_is_never_drawn_and_the_shortfall_is_said(tmp_path, capsys):
    """28 questions share the component S; 2 share nothing. Drawing one of the 28 would take all 28
    from training (more than the 80% kept allows), so only the 2 are drawn, of the 3 wanted; with
    every question on S none can be drawn, an error naming why."""
    hub = [compound(f"h{i}", f"S{i}") for i in range(28)]
    alone = [compound("v0", "V"), compound("v1", "W")]
    splits, report = component_validation(hub + alone, seed=3)
    assert sorted(q.qid for q in splits["validation"]) == ["v0", "v1"]
    assert report == {"wanted": 3, "drawn": 2, "left_out": 0, "train": 28}
    with pytest.raises(ValueError, match="no validation question can be drawn .* shares a component question"):
        component_validation(hub, seed=0)
    questions, corpus = write_files(tmp_path, hub + alone)
    (tmp_path / "test.jsonl").write_text(json.dumps(compound("t", "T").to_json()) + "\n")
    with pytest.warns(AmerWarning, match="only 2 of the 3 validation questions wanted could be drawn"):
        prepare_files(tmp_path / "p", "mine", questions, corpus, tmp_path / "test.jsonl")
    assert "mine: 2 validation question(s) drawn whose component questions no training question has (3 wanted" in (
        capsys.readouterr().out
    )


def write_files(tmp_path, questions: list[MultiAnswerQuestion]):
    (tmp_path / "corpus.tsv").write_text("id\ttext\ttitle\n" + "".join(f"d{i}\tpassage {i}\t\n" for i in range(5)))
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q.to_json()) + "\n" for q in questions))
    return tmp_path / "questions.jsonl", tmp_path / "corpus.tsv"


def test_notebook_03_writes_the_validation_split_every_run_reads(tmp_path):
    """With answer_questions: train, validation and test files; the validation file is what every
    seed's run validates on (not 10% drawn by the run's seed), and the manifest keeps the count."""
    questions = OVERLAPPING + [compound(f"u{i}", f"{i}") for i in range(6)]
    given, corpus = write_files(tmp_path, questions)
    benchmark = prepare_files(tmp_path / "p", "mine", given, corpus, test_fraction=0.2, seed=2)
    train, validation, test = (benchmark.questions("mine", s) for s in ("train", "validation", "test"))
    assert [q.qid for q in test] == [q.qid for q in split_questions(questions, 0.2, 2)["test"]]
    splits, report = component_validation(split_questions(questions, 0.2, 2)["train"], 2)
    assert ([q.qid for q in train], [q.qid for q in validation]) == tuple(
        [q.qid for q in splits[s]] for s in ("train", "validation")
    )
    assert_disjoint({"train": train, "validation": validation}, report, split_questions(questions, 0.2, 2)["train"])
    for seed in (0, 5):
        assert benchmark.training_split("mine", seed) == (train, validation)
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert manifest["validation"] == {"mine": report} and manifest["recipe"]["validation"] == "components held out"
    assert (tmp_path / "p" / "qrels" / "mine_validation.qrels").exists()


def test_without_answer_questions_the_split_is_todays(tmp_path):
    """Questions without answer_questions: the recipe has today's keys (a benchmark prepared before
    is read, not refused), no validation file is written, and a run still draws 10% of the training
    questions by its seed (the committed figures' split)."""
    plain = [MultiAnswerQuestion(f"q{i}", f"question {i}?", [["a"], ["b"]], [["d0"], ["d1"]]) for i in range(20)]
    given, corpus = write_files(tmp_path, plain)
    benchmark = prepare_files(tmp_path / "p", "mine", given, corpus, test_fraction=0.2, seed=1)
    recipe = json.loads((tmp_path / "p" / "manifest.json").read_text())["recipe"]
    assert sorted(recipe) == sorted(
        ["source", "dataset", "questions", "test_questions", "corpus", "test_fraction", "seed", "n_queries"]
        + ["use_titles", "answer_questions"]
    )
    assert not (tmp_path / "p" / "mine_validation.jsonl").exists()
    train = benchmark.questions("mine", "train")
    assert [q.qid for q in train] == [q.qid for q in split_questions(plain, 0.2, 1)["train"]]
    fitted_idx, val_idx = split_train_validation(16, 7)
    assert benchmark.training_split("mine", 7) == ([train[i] for i in fitted_idx], [train[i] for i in val_idx])
    assert benchmark.validation_questions("mine", 7) == [train[i] for i in val_idx]  # drawn by the run's seed


def test_a_validation_file_of_your_own_is_what_every_run_validates_on(tmp_path):
    """validation_questions_path replaces both draws: the prepared validation split is the file's
    questions, every seed's run reads it, the manifest records the file; its resolution is said and
    a file under VALIDATION_TO_CHOOSE questions, or one sharing a component with training, is warned of."""
    from amer_lib.data.preparation import VALIDATION_TO_CHOOSE

    questions = [compound(f"c{i}", parts) for i, parts in enumerate(["AB", "CD", "EF", "GH", "IJ", "KL"] * 2)]
    questions = [dataclasses.replace(q, qid=f"{q.qid}-{i}") for i, q in enumerate(questions)]
    given, corpus = write_files(tmp_path, questions)
    mine = [compound("v0", "AM"), compound("v1", "NO")]  # v0 shares A with training (if c0's A trained)
    (tmp_path / "validation.jsonl").write_text("".join(json.dumps(q.to_json()) + "\n" for q in mine))
    with pytest.warns(AmerWarning) as caught:
        benchmark = prepare_files(
            tmp_path / "p", "mine", given, corpus, test_fraction=0.2, seed=0,
            validation_questions_path=tmp_path / "validation.jsonl",
        )  # fmt: skip
    said = " ".join(str(w.message) for w in caught)
    assert "2 validation question(s) are too few to choose" in said and f"{VALIDATION_TO_CHOOSE} or more" in said
    assert "one validation question is 50.00 points of MRecall@100" in said and "±69.3 points" in said
    trained = {c for q in benchmark.questions("mine", "train") for c in components(q)}
    shared = sum(bool(components(q) & trained) for q in mine)
    assert shared == 1 and "1 of the 2 validation questions share a component question with training" in said
    assert [q.qid for q in benchmark.questions("mine", "validation")] == ["v0", "v1"]
    for seed in (0, 3):
        assert [q.qid for q in benchmark.training_split("mine", seed)[1]] == ["v0", "v1"]
        assert benchmark.validation_questions("mine", seed) == benchmark.training_split("mine", seed)[1]
    train = benchmark.questions("mine", "train")
    assert [q.qid for q in train] == [q.qid for q in split_questions(questions, 0.2, 0)["train"]]  # nothing drawn
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert manifest["recipe"]["validation"] == "file" and manifest["validation"]["mine"]["sharing_a_component"] == 1
    assert "validation_questions" in manifest["inputs"]


def test_a_validation_file_sharing_a_qid_with_training_or_test_is_refused(tmp_path):
    from amer_lib.data.questions import DataFormatError

    questions = [compound(f"c{i}", f"{i}") for i in range(10)]
    given, corpus = write_files(tmp_path, questions)
    (tmp_path / "validation.jsonl").write_text(json.dumps(questions[0].to_json()) + "\n")
    with pytest.raises(DataFormatError, match=r"share the qid\(s\) \['c0'\]: a validation question must be neither"):
        prepare_files(tmp_path / "p", "mine", given, corpus, validation_questions_path=tmp_path / "validation.jsonl")


def test_the_resolution_of_a_validation_split_is_its_arithmetic():
    """Independent answers: 28 questions are 3.57 points each; 300 questions know a 50% MRecall to
    1.96 x sqrt(0.25 / 300) = 5.66 points; 100 give no warning, 99 do."""
    import warnings

    from amer_lib.data.preparation import validation_resolution, warn_if_too_few_to_choose

    assert validation_resolution(28).startswith("one validation question is 3.57 points")
    assert validation_resolution(300).endswith("known to ±5.7 points")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_too_few_to_choose("d", 100)
    with pytest.warns(AmerWarning, match="d: 99 validation question"):
        warn_if_too_few_to_choose("d", 99)
