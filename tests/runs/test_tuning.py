"""The hyperparameter grids of notebooks 02 and 04: their points, their steps and folders, and the
pick by validation MRecall."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import ROOT, documentation, notebook_config

from amer_lib.core.train import batch_indices, split_train_validation, steps_for_epochs, validation_size
from amer_lib.data.synthetic_task import task_from_params
from amer_lib.experiments import real_data, synthetic
from amer_lib.experiments.synthetic import trained_synthetic_encoder
from amer_lib.runs.query_encoders import generated_vectors, vector_prompts
from amer_lib.runs.tuning import best_point_lines, best_points, grid_points, point_params


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
    tuned = point_params(params, {"batch_size": 32, "epochs": 30}, n_examples=5044)  # 504 for validation
    assert tuned.steps == 30 * (4540 // 32) and tuned.batch_size == 32 and tuned.lr == 1e-4
    assert tuned.results_dir == "r/tuning/batch_size32_epochs30" and tuned.runs_dir == "u/tuning/batch_size32_epochs30"
    assert point_params(params, {"lr": 2e-5}, n_examples=5044).steps == 7  # no epochs: the given steps


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
        identity = "a prepared benchmark's"

        def __init__(self, directory):
            pass

        def questions(self, dataset, split):
            return [None] * 100  # 90 training questions after the 10% validation split

        def n_queries(self, dataset):
            return 5

    def fake_run(params, dataset, system, seed, progress):
        score = {1e-5: 0.2, 1e-4: 0.4}[params.lr]
        history = [
            {"step": 10, "val_loss": 2.0, "val_mrecall": score / 2},
            {"step": 20, "val_loss": 1.0, "val_mrecall": score},
            {"step": 30, "val_loss": 1.5, "val_mrecall": 0.9},
        ]
        return {"best_step": 20, "history": history}

    monkeypatch.setattr("amer_lib.experiments.real_data.Benchmark", Questions)
    monkeypatch.setattr("amer_lib.experiments.real_data.run_one", fake_run)
    params = notebook_config(
        "04_real_data",
        datasets=["qampari"],
        prepared_dir="p",
        batch_size=30,
        steps=1,
        results_dir="r",
        runs_dir="u",
        workers=1,
    )
    rows = real_data.tune(params, {"lr": [1e-5, 1e-4], "epochs": [2]}, progress=False)
    # the checkpoint kept by validation loss (step 20) is scored, not the best MRecall seen (step 30)
    assert [(r["lr"], r["steps"], r["val_mrecall"]) for r in rows] == [(1e-5, 6, 20.0), (1e-4, 6, 40.0)]
    assert best_points(rows)["qampari"]["lr"] == 1e-4
    assert best_point_lines(rows, {"lr": [], "epochs": []}) == [
        "qampari: best validation MRecall@100 40.00% at lr = 0.0001, epochs = 2"
    ]


TINY_LLAMA = {"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2}


def _round_robin_mrecall(queries: np.ndarray, corpus: np.ndarray, gold: np.ndarray, depth: int, k: int) -> float:
    """MRecall@k by hand: each vector's exact top `depth`, taken rank by rank, first-seen kept."""
    found = []
    for vectors, targets in zip(queries, gold):
        lists = np.argsort(-(vectors @ corpus.T), axis=1, kind="stable")[:, :depth]
        merged = list(dict.fromkeys(lists.T.ravel().tolist()))[:k]
        found.append(set(targets.tolist()) <= set(merged))
    return 100 * float(np.mean(found))


def test_synthetic_tune_scores_the_held_out_training_inputs_at_the_kept_checkpoint(tmp_path):
    params = notebook_config(
        "02_synthetic",
        transforms=["mlp"],
        settings=["single"],
        dim=8,
        n_train=20,  # 2 held out, 18 trained on: 2 full batches of 8 per epoch
        n_test=2,
        corpus_size=120,  # the 110 targets and 10 negatives: the merged top 100 can hold all five
        backbone_overrides=TINY_LLAMA,
        batch_size=8,
        eval_every=2,
        search_depth=100,
        device="cpu",
        workers=1,
        results_dir=str(tmp_path / "results"),
        runs_dir=str(tmp_path / "runs"),
    )
    grid = {"lr": [1e-3, 1e-2], "epochs": [2]}
    rows = synthetic.tune(params, grid, progress=False)
    assert [(r["transform"], r["setting"], r["lr"], r["steps"]) for r in rows] == [
        ("mlp", "single", 1e-3, 4),
        ("mlp", "single", 1e-2, 4),
    ]
    task = task_from_params(params, "mlp", "single")
    _, val_idx = split_train_validation(params.n_train, params.seed)
    for row, point in zip(rows, grid_points(grid)):
        tuned = point_params(params.replace(systems=["amer"]), point, params.n_train)
        model = trained_synthetic_encoder(tuned, "mlp", "single", torch.device("cpu"))
        queries = generated_vectors(
            model, vector_prompts(model, task.train_inputs[val_idx.numpy()], torch.device("cpu")), 5
        )
        gold = task.train_target_ids[val_idx.numpy()]
        assert row["val_mrecall"] == pytest.approx(_round_robin_mrecall(queries, task.corpus, gold, 100, 100), abs=0.01)
        [saved] = Path(tuned.results_dir).glob("mlp_single_amer_seed*.json")
        history = json.loads(saved.read_text())["history"]
        assert row["best_step"] == min(history, key=lambda h: h["val_loss"])["step"]  # the lowest validation loss
    assert any(row["val_mrecall"] > 0 for row in rows)  # the comparison is not of zeros
    assert sorted(best_points(rows, by=("transform", "setting"))) == ["mlp / single"]


def test_the_grids_sizes_and_costs_quoted_in_the_readme_and_the_files_are_the_files():
    """Appendix A.5's and A.6's grids as shipped: their sizes and the synthetic grid's steps, as
    the README and the files' own comments state them."""
    readme = documentation()
    synthetic_file = (ROOT / "params" / "02_synthetic" / "tuning.yaml").read_text()
    paper = notebook_config("02_synthetic").replace(
        **yaml.safe_load((ROOT / "params/02_synthetic/paper_scale.yaml").read_text())
    )
    points = grid_points(yaml.safe_load(synthetic_file)["tuning_grid"])
    steps = [point_params(paper, point, paper.n_train).steps for point in points]
    assert len(points) == 192 and "192 points per setting" in readme and "192 points per" in synthetic_file
    assert f"largest points are {max(steps):,} steps" in readme
    assert f"whole grid is {sum(steps):,} steps per (transform," in synthetic_file.replace("\n# ", " ")
    assert f"about {round(sum(steps) / paper.steps)} times the paper file's {paper.steps:,}-step run" in (
        synthetic_file.replace("\n# ", " ")
    )
    for dataset in ("ambigqa", "qampari"):
        grid = yaml.safe_load((ROOT / "params" / "04_real_data" / f"tuning_{dataset}.yaml").read_text())["tuning_grid"]
        assert len(grid_points(grid)) == 144
    assert "144 points, picked by validation MRecall@100" in readme
