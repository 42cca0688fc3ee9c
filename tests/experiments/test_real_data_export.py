"""A finished notebook-04 run exported as a model folder: read back, it generates the run's own
query vectors for the test questions, and its card records the run's test scores."""

import json

import numpy as np
import torch
from stand_ins import tiny_wordnet_runs

from amer_lib.core.saved import from_pretrained, read_config
from amer_lib.experiments.real_data import export_run, run_all
from amer_lib.runs.benchmark_runs import RunContext


def test_an_exported_run_generates_the_runs_query_vectors(tmp_path):
    params = tiny_wordnet_runs(tmp_path, systems=["amer"])
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
