"""A finished notebook-04 run exported as a model folder by the export command, then searched by
the search command, each in a fresh process: the TREC run is byte for byte the one the notebook's
evaluation wrote, the retriever generates the run's own query vectors, and the card records the
run's test scores."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import ROOT
from stand_ins import tiny_wordnet_runs

from amer_lib.experiments.real_data import run_all
from amer_lib.retriever import AMERRetriever
from amer_lib.runs.run_context import RunContext
from amer_lib.runs.saved import read_config
from amer_lib.runs.store import REAL_RUNS, real_run_name


def command(*args: str) -> None:
    """`python -m ...` from the repository root, in a process of its own."""
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow  # 45-50 s on 2 cores
def test_an_exported_run_searches_as_the_notebook_evaluated_it(tmp_path):
    params = tiny_wordnet_runs(tmp_path, systems=["amer"])
    [result] = run_all(params, progress=False)
    params_file = REAL_RUNS.write_params(params, params.tag)  # as notebook 04 leaves it
    folder, run = tmp_path / "model", tmp_path / "run.trec"
    name = real_run_name("wordnet_kinds", "amer", 0)
    command(
        *("amer_lib.export", "04_real_data", str(params_file)),
        *("--dataset", "wordnet_kinds", "--system", "amer", "--seed", "0", "--out", str(folder)),
    )
    test_file = tmp_path / "p" / "wordnet_kinds_test.jsonl"
    command(
        *("amer_lib.search", "--model", str(folder), "--index", str(tmp_path / "p")),
        *("--questions", str(test_file), "--out", str(run), "--tag", name),
    )
    assert run.read_bytes() == REAL_RUNS.result_path(params, name, ".trec").read_bytes()

    context = RunContext.of(params)
    test = context.benchmark.questions("wordnet_kinds", "test")
    trained = context.trained_encoder(params, "wordnet_kinds", "amer", 0, torch.device("cpu"))
    retriever = AMERRetriever.from_pretrained(folder, index=tmp_path / "p")
    vectors, counts = retriever.query_vectors([q.question for q in test])
    assert np.array_equal(vectors, context.query_vectors(trained, test, 5, torch.device("cpu"))) and counts.min() == 5
    config = read_config(folder)
    assert config["n_queries"] == 5 and config["document_encoder"] == "minilm" and config["backbone"] == "minilm"
    assert config["search_depth"] == params.search_depth and config["prompt"]["instruction"] is None
    assert config["recipe"] == {
        k: v for k, v in REAL_RUNS.run_params(params.as_dict()).items() if k in config["recipe"]
    }
    assert config["recipe"]["steps"] == 2 and not {"prepared_dir", "device", "workers"} & set(config["recipe"])
    assert "## Training recipe" in (folder / "README.md").read_text()
    assert config["facts"]["test MRecall@100 (%)"] == round(100 * float(np.mean(result["mrecall"])), 2)
    assert json.dumps(config["facts"]["test MRecall@100 (%)"]) in (folder / "README.md").read_text()
