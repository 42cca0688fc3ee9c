"""A finished notebook-04 run exported as a model folder: read back, it generates the run's own
query vectors for the test questions, and its card records the run's test scores."""

import json

import numpy as np
import torch
from conftest import notebook_config

from amer_lib.core.saved import from_pretrained, read_config
from amer_lib.data.preparation import prepare
from amer_lib.experiments.real_data import export_run, run_all
from amer_lib.runs.benchmark_runs import RunContext


def test_an_exported_run_generates_the_runs_query_vectors(tmp_path):
    recipe = notebook_config(
        "03_real_data_prep", max_train=24, max_test=12, corpus_size=400, device="cpu", prepared_dir=str(tmp_path / "p")
    )
    prepare(recipe, progress=False)
    params = notebook_config(
        "04_real_data", datasets=["wordnet_kinds"], systems=["amer"], seeds=[0], steps=2, batch_size=4,
        eval_every=1, workers=1, device="cpu", baselines=[], prepared_dir=str(tmp_path / "p"),
        results_dir=str(tmp_path / "results"), runs_dir=str(tmp_path / "runs"),
    )  # fmt: skip
    [result] = run_all(params, progress=False)
    folder = export_run(params, "wordnet_kinds", "amer", 0, tmp_path / "model")

    context = RunContext.of(params)
    test = context.benchmark.questions("wordnet_kinds", "test")
    trained = context.trained_encoder(params, "wordnet_kinds", "amer", 0, torch.device("cpu"))
    cpu = torch.device("cpu")
    exported = context.query_vectors(from_pretrained(folder), test, 5, cpu)
    assert np.allclose(exported, context.query_vectors(trained, test, 5, cpu), atol=1e-6)
    config = read_config(folder)
    assert config["n_queries"] == 5 and config["document_encoder"] == "minilm" and config["backbone"] == "minilm"
    assert config["facts"]["test MRecall@100 (%)"] == round(100 * float(np.mean(result["mrecall"])), 2)
    assert json.dumps(config["facts"]["test MRecall@100 (%)"]) in (folder / "README.md").read_text()
