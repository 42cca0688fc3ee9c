"""Notebook 04's levers beyond the paper run end to end: hard negatives mined once per benchmark by
the corpus encoder and drawn in training, and the spread penalty, on a tiny prepared benchmark."""

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
