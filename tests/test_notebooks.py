"""Papermill smoke runs of the notebooks with tiny parameters."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def run_notebook(name, params, tmp_path):
    params_file = tmp_path / "params.yaml"
    params_file.write_text(yaml.safe_dump(params))
    return subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / name), str(tmp_path / "out.ipynb"),
                           "-f", str(params_file), "--cwd", str(ROOT / "notebooks"), "-k", "python3"],
                          capture_output=True, text=True)


def tiny_synthetic(tmp_path):
    return {"settings": ["single"], "transforms": ["linear", "mlp"], "dim": 16, "n_train": 120, "n_test": 20,
            "corpus_size": 1000, "backbone_overrides": {"hidden_size": 32, "intermediate_size": 64}, "steps": 4,
            "batch_size": 16, "eval_every": 2, "results_dir": str(tmp_path / "results"),
            "runs_dir": str(tmp_path / "runs"), "figures_dir": str(tmp_path / "figures")}


def test_synthetic_notebook_smoke(tmp_path):
    run = run_notebook("02_synthetic.ipynb", tiny_synthetic(tmp_path), tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    figures = tmp_path / "figures"
    for name in ("figure4.png", "figure4.pdf", "results.csv", "results.md", "results.tex", "params.yaml",
                 "target_geometry.csv"):
        assert (figures / name).exists(), name
    results = sorted((tmp_path / "results").glob("*.json"))
    assert len(results) == 6  # 2 transforms x (single, amer, oracle)
    amer = json.loads((tmp_path / "results" / "linear_single_amer_seed0.json").read_text())
    assert amer["params"]["steps"] == 4 and amer["n_queries"] == 5 and "git_commit" in amer
    assert 0.0 <= amer["metrics"]["mrecall@100"] <= 1.0

    rerun = run_notebook("02_synthetic.ipynb", tiny_synthetic(tmp_path), tmp_path)  # served from the results cache
    assert rerun.returncode == 0
    assert json.loads((tmp_path / "results" / "linear_single_amer_seed0.json").read_text()) == amer


def test_unknown_parameter_stops_the_notebook(tmp_path):
    run = run_notebook("02_synthetic.ipynb", {**tiny_synthetic(tmp_path), "n_trian": 5}, tmp_path)
    assert run.returncode != 0
    assert "unknown parameter(s) ['n_trian']" in run.stdout + run.stderr
