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
    assert list((Path(params.prepared_dir) / "hard_negatives").iterdir()) == mined


def test_a_run_with_the_component_term_trains_on_each_questions_own_off_the_shelf_vector(tmp_path):
    """On plain (not compound) questions a question's one component is itself, encoded by the
    corpus encoder as a query; the run trains and scores, and the term cannot join mined negatives."""
    import torch

    from amer_lib.data.encoders import DocumentEncoder
    from amer_lib.runs.benchmark_runs import RunContext

    params = tiny_wordnet_runs(tmp_path, component_weight=2.0)
    result = run_one(params, "wordnet_kinds", "amer", 0, progress=False)
    assert result["best_step"] in (1, 2) and result["params"]["component_weight"] == 2.0
    assert len(result["mrecall"]) == len(result["qids"]) > 0 and all(0 <= m <= 1 for m in result["mrecall"])
    context = RunContext.of(params)
    questions = context.benchmark.questions("wordnet_kinds", "test")[:5]
    data = context.training_data(questions, params)
    vectors, mask = data.components(torch.arange(5))
    expected = DocumentEncoder("minilm").encode_queries([q.question for q in questions])
    assert mask.all() and vectors.shape == (5, 1, expected.shape[1])
    np.testing.assert_allclose(vectors[:, 0].numpy(), expected, atol=1e-6)
    with pytest.raises(ValueError, match="hard_negative_share > 0 and component_weight > 0 cannot be combined"):
        context.training_data(questions, params.replace(hard_negative_share=0.5))


def test_a_levers_single_query_run_is_the_recipes_and_is_read_back_not_trained_again(tmp_path):
    """Single-query trains without AMER's loss levers: the run made under the recipe is the lever
    config's own single-query run (its results and its model read back), AMER's is not; with
    `component_single` single-query takes the term and is a run of its own."""
    import torch

    from amer_lib.runs.benchmark_runs import RunContext, cached_result

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
