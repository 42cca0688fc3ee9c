"""Notebook 04's levers beyond the paper run end to end: hard negatives mined once per benchmark by
the corpus encoder and drawn in training, the spread penalty, and the component term, on a tiny
prepared benchmark; single-query trains without AMER's loss levers."""

from pathlib import Path

import numpy as np
import pytest
from stand_ins import tiny_wordnet_runs

from amer_lib.data.benchmark import Benchmark
from amer_lib.experiments.real_data import run_one

pytestmark = pytest.mark.slow  # a tiny benchmark prepared and encoded, two runs trained: about 40 s


def test_runs_with_mined_negatives_and_the_spread_penalty_train_and_mine_once(tmp_path):
    params = tiny_wordnet_runs(tmp_path, hard_negative_share=0.5, spread_weight=0.5)
    first = run_one(params, "wordnet_kinds", "amer", 0, progress=False)
    mined = list((Path(params.prepared_dir) / "hard_negatives").glob("minilm_*.npy"))
    assert len(mined) == 1 and first["best_step"] in (1, 2)
    rows = np.load(mined[0])
    benchmark = Benchmark(params.prepared_dir)
    trained, validated = benchmark.training_split("wordnet_kinds", 0)
    questions = trained + validated  # the order the run mined them in
    shards = benchmark.embeddings("minilm")
    assert rows.shape == (len(questions), 16)
    for question, negatives in zip(questions, rows):
        gold = {shards.row_of[d] for docs in question.targets for d in docs}
        assert not gold & set(negatives.tolist()) and len(set(negatives.tolist())) == 16
    run_one(params, "wordnet_kinds", "single", 0, progress=False)  # the same questions: read back, not mined
    kept = sorted((Path(params.prepared_dir) / "hard_negatives").iterdir())
    assert kept == [mined[0], mined[0].with_name(mined[0].name + ".sha256")]  # the rows and their record


def test_the_component_term_encodes_answer_questions_and_refuses_a_split_without_any(tmp_path):
    """The term's vectors are the corpus encoder's query vectors of each question's distinct
    `answer_questions`, or of the question itself where it has none (a mixed set); on the WordNet
    benchmark, whose questions have none, the runs are refused before any training with the fix
    named (training: tests/data/test_preparation_own_data.py); the term cannot join mined negatives."""
    from dataclasses import replace

    import torch

    from amer_lib.data.encoders import DocumentEncoder
    from amer_lib.experiments.real_data import run_all
    from amer_lib.runs.run_context import RealRun, RunContext

    params = tiny_wordnet_runs(tmp_path, component_weight=2.0)
    refused = r"none of the \d+ questions in .*wordnet_kinds_train.jsonl has answer_questions.*component_weight 0"
    with pytest.raises(ValueError, match=refused):
        run_all(params, progress=False)
    assert not Path(params.runs_dir).exists()  # nothing trained
    context = RunContext.of(params)
    first, second, plain = context.benchmark.questions("wordnet_kinds", "test")[:3]
    asked = [f"Which {a[0]} is meant?" for a in first.answers]  # one question per answer, all distinct
    questions = [
        replace(first, answer_questions=asked),
        replace(second, answer_questions=["One question for them all?"] * len(second.answers)),
        plain,
    ]
    data = context.training_data(questions, component_vectors=True)
    vectors, mask = data.components(torch.arange(3))
    encoded = DocumentEncoder("minilm").encode_queries([*asked, "One question for them all?", plain.question])
    assert vectors.shape == (3, len(asked), encoded.shape[1]) and mask.sum(-1).tolist() == [len(asked), 1, 1]
    np.testing.assert_allclose(vectors[0, : len(asked)].numpy(), encoded[: len(asked)], atol=1e-5)
    np.testing.assert_allclose(vectors[1:, 0].numpy(), encoded[len(asked) :], atol=1e-5)
    with pytest.raises(ValueError, match="hard_negative_share > 0 and component_weight > 0 cannot be combined"):
        RealRun.of(params.replace(hard_negative_share=0.5), context.benchmark, "wordnet_kinds", "amer", 0)


def test_a_levers_single_query_run_is_the_recipes_and_is_read_back_not_trained_again(tmp_path):
    """Single-query trains without AMER's loss levers: the run made under the recipe is the lever
    config's own single-query run (its results and its model read back), AMER's is not; with
    `component_single` single-query takes the term and is a run of its own."""
    import torch

    from amer_lib.runs.run_context import RunContext, cached_result

    recipe = tiny_wordnet_runs(tmp_path)
    made = run_one(recipe, "wordnet_kinds", "single", 0, progress=False)
    lever = recipe.replace(component_weight=2.0, component_distance="ranking")
    assert cached_result(lever, "wordnet_kinds", "single", 0) == made
    loaded = [
        RunContext.of(p).trained_encoder(p, "wordnet_kinds", "single", 0, torch.device("cpu")).state_dict()
        for p in (lever, recipe)
    ]
    assert all(torch.equal(loaded[0][k], loaded[1][k]) for k in loaded[1])
    assert cached_result(lever.replace(component_single=True), "wordnet_kinds", "single", 0) is None
    run_one(recipe, "wordnet_kinds", "amer", 0, progress=False)
    assert cached_result(lever, "wordnet_kinds", "amer", 0) is None
    assert cached_result(recipe, "wordnet_kinds", "amer", 0) is not None
