"""The hyperparameter grid: its points, their steps and folders, and the pick by validation MRecall."""

from pathlib import Path

import pytest
import torch
import yaml
from conftest import notebook_config

from amer_lib.core.train import batch_indices, steps_for_epochs, validation_size
from amer_lib.experiments import real as tuning
from amer_lib.experiments.real import best_points, grid_points, point_params

ROOT = Path(__file__).resolve().parent.parent


def test_grid_points_are_every_combination_in_order():
    assert grid_points({"lr": [1e-5, 2e-5], "temperature": [0.05, 0.02]}) == [
        {"lr": 1e-5, "temperature": 0.05},
        {"lr": 1e-5, "temperature": 0.02},
        {"lr": 2e-5, "temperature": 0.05},
        {"lr": 2e-5, "temperature": 0.02},
    ]
    with pytest.raises(ValueError, match=r"unknown tuning parameter\(s\) \['dropout'\]; valid: lr, batch_size"):
        grid_points({"dropout": [0.1]})
    with pytest.raises(ValueError, match=r"\['lr'\] have no values"):
        grid_points({"lr": []})


def test_epochs_become_steps_at_the_points_batch_size_in_folders_of_their_own():
    params = notebook_config("04_real_data", batch_size=128, steps=7, lr=1e-4, results_dir="r", runs_dir="u")
    tuned = point_params(params, {"batch_size": 32, "epochs": 30}, n_questions=5044)  # 504 for validation
    assert tuned.steps == 30 * (4540 // 32) and tuned.batch_size == 32 and tuned.lr == 1e-4
    assert tuned.results_dir == "r/tuning/batch_size32_epochs30" and tuned.runs_dir == "u/tuning/batch_size32_epochs30"
    assert point_params(params, {"lr": 2e-5}, n_questions=5044).steps == 7  # no epochs: the given steps


def test_an_epoch_is_what_training_draws_and_the_paper_files_hold_their_epochs():
    """`steps_for_epochs` counts the full batches `batch_indices` draws from the training part."""
    n_questions, batch = 50, 8  # 5 for validation, 45 to train on: 5 full batches per epoch
    steps = steps_for_epochs(2, n_questions, batch)
    assert steps == 10
    training = n_questions - validation_size(n_questions)
    drawn = [batch_indices(training, batch, seed=3, step=s) for s in range(steps)]
    for epoch in (drawn[:5], drawn[5:]):  # each epoch: 40 distinct questions, the partial batch dropped
        assert len(set(torch.cat(epoch).tolist())) == 40
    # the paper files: AmbigQA 120 epochs and QAMPARI 30 of Table 1's training splits, batch 128
    for path in sorted((ROOT / "params" / "04_real_data").glob("*_*.yaml")):
        if path.stem.startswith(("ambigqa_", "qampari_")):
            paper = yaml.safe_load(path.read_text())
            epochs, questions = (120, 5044) if path.stem.startswith("ambigqa") else (30, 32023)
            assert paper["steps"] == steps_for_epochs(epochs, questions, paper["batch_size"]), path.name


def test_tune_scores_each_point_at_its_selected_checkpoint(monkeypatch, tmp_path):
    class Questions:
        def __init__(self, directory):
            pass

        def questions(self, dataset, split):
            return [None] * 100  # 90 training questions after the 10% validation split

    def fake_run(params, dataset, system, seed, progress):
        score = {1e-5: 0.2, 1e-4: 0.4}[params.lr]
        history = [
            {"step": 10, "val_loss": 2.0, "val_mrecall": score / 2},
            {"step": 20, "val_loss": 1.0, "val_mrecall": score},
            {"step": 30, "val_loss": 1.5, "val_mrecall": 0.9},
        ]
        return {"best_step": 20, "history": history}

    monkeypatch.setattr("amer_lib.experiments.real.Benchmark", Questions)
    monkeypatch.setattr("amer_lib.experiments.real.run_one", fake_run)
    params = notebook_config(
        "04_real_data", datasets=["qampari"], prepared_dir="p", batch_size=30, steps=1, results_dir="r", runs_dir="u"
    )
    rows = tuning.tune(params, {"lr": [1e-5, 1e-4], "epochs": [2]}, progress=False)
    # the checkpoint kept by validation loss (step 20) is scored, not the best MRecall seen (step 30)
    assert [(r["lr"], r["steps"], r["val_mrecall"]) for r in rows] == [(1e-5, 6, 20.0), (1e-4, 6, 40.0)]
    assert best_points(rows)["qampari"]["lr"] == 1e-4
