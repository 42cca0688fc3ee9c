"""The notebook-02 runner: parallel workers give the same results as one process."""

import json
from pathlib import Path

import pytest
import torch
from stand_ins import tiny_synthetic_params

from amer_lib.experiments.synthetic import run_all
from amer_lib.runs.store import SYNTHETIC_RUNS


def strip(results):
    timing = {"train_seconds", "eval_seconds", "params", "git_commit"}
    return [{k: v for k, v in r.items() if k not in timing} for r in results]


def test_workers_reproduce_a_single_process_run(tmp_path):
    """One worker (this process, on two threads as on a 2-core machine) and two workers give
    identical runs: each training process runs on its config's `threads`. Before, one worker
    trained on this process's threads and two on half of them each, and at this size (hidden 384,
    batch 32) float sums split over two threads round otherwise: the validation losses moved."""
    big = dict(
        dim=384,
        batch_size=32,
        steps=4,
        eval_every=2,
        n_train=100,
        corpus_size=1200,
        settings=["ood"],  # one setting's two trained runs: what two workers split
        backbone_overrides={
            "hidden_size": 384,
            "intermediate_size": 1536,
            "num_attention_heads": 6,
            "num_key_value_heads": 6,
        },
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        serial = run_all(tiny_synthetic_params(tmp_path, 1).replace(**big), progress=False)
        assert torch.get_num_threads() == 2  # this process's own threads are put back after
    finally:
        torch.set_num_threads(threads)
    parallel = run_all(tiny_synthetic_params(tmp_path, 2).replace(**big), progress=False)
    assert [(r["setting"], r["system"]) for r in parallel] == [("ood", m) for m in ("single", "amer", "oracle")]
    assert strip(parallel) == strip(serial)


def test_runs_cached_for_an_older_task_are_not_reused(tmp_path):
    params = tiny_synthetic_params(tmp_path, 1).replace(settings=["single"], systems=["single"])
    [run, _] = run_all(params, progress=False)
    assert SYNTHETIC_RUNS.cached(params, "linear_single_single_seed0") == run
    path = Path(params.results_dir) / "linear_single_single_seed0.json"
    path.write_text(json.dumps({**run, "task_version": run["task_version"] - 1}))
    assert SYNTHETIC_RUNS.cached(params, "linear_single_single_seed0") is None


def test_an_exported_run_generates_the_runs_query_vectors(tmp_path):
    from amer_lib.experiments.synthetic import trained_synthetic_encoder
    from amer_lib.export import main
    from amer_lib.runs.saved import from_pretrained, read_config

    params = tiny_synthetic_params(tmp_path, 1).replace(settings=["single"], systems=["amer"])
    [_, oracle] = run_all(params, progress=False)
    params_file = SYNTHETIC_RUNS.write_params(params)  # as notebook 02 leaves it
    folder = tmp_path / "model"
    main(
        ["02_synthetic", str(params_file), "--transform", "linear", "--setting", "single", "--system", "amer"]
        + ["--out", str(folder)]
    )
    inputs = torch.randn(6, params.dim, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        trained = trained_synthetic_encoder(params, "linear", "single", torch.device("cpu"))
        loaded = from_pretrained(folder)
        assert torch.equal(
            loaded.generate(loaded.prompt_from_vectors(inputs), 5),
            trained.generate(trained.prompt_from_vectors(inputs), 5),
        )
    config = read_config(folder)
    assert config["backbone_overrides"] == params.backbone_overrides and config["n_queries"] == 5
    assert oracle["system"] == "oracle" and "test mrecall@10 (%)" in config["facts"]


def test_the_export_command_refuses_an_existing_model_folder_unless_overwrite_and_then_replaces_it_whole(
    tmp_path, monkeypatch
):
    from amer_lib.export import main
    from amer_lib.runs import saved

    params = tiny_synthetic_params(tmp_path, 1).replace(settings=["single"], systems=["amer"])
    run_all(params, progress=False)
    command = ["02_synthetic", str(SYNTHETIC_RUNS.write_params(params))]
    command += ["--transform", "linear", "--setting", "single", "--system", "amer"]
    folder = tmp_path / "model"
    main([*command, "--out", str(folder)])
    written = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(SystemExit, match="holds a model already: give a new folder, or add --overwrite"):
        main([*command, "--out", str(folder)])
    monkeypatch.setattr(saved, "model_card", lambda config: 1 / 0)  # an export that fails half way
    with pytest.raises(ZeroDivisionError):
        main([*command, "--out", str(folder), "--overwrite"])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == written  # the old folder, whole
    monkeypatch.undo()
    (folder / "README.md").write_text("edited")
    main([*command, "--out", str(folder), "--overwrite"])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == written  # replaced by the same export
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no staging left
    with pytest.raises(SystemExit, match=r"exists and is not a model folder \(no amer.json\)"):
        main([*command, "--out", str(tmp_path), "--overwrite"])  # never deletes a folder of something else
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit, match=r"--out '.*file' cannot be written"):
        main([*command, "--out", str(tmp_path / "file" / "model")])


def test_a_finished_run_keeps_only_its_best_weights_and_an_interrupted_one_its_resume_checkpoint(tmp_path):
    from amer_lib.experiments.synthetic import run_setting

    params = tiny_synthetic_params(tmp_path, 1).replace(settings=["single"], systems=["amer"], steps=4, eval_every=1)
    calls = []

    def interrupt_at_the_third_step():
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C after two steps, each checkpointed

    with pytest.raises(KeyboardInterrupt):
        run_setting(params, "linear", "single", progress=False, on_step=interrupt_at_the_third_step)
    folder = SYNTHETIC_RUNS.run_dir(params, "linear_single_amer_seed0")
    assert sorted(p.name for p in folder.iterdir()) == [
        "best.pt",
        "best.pt.sha256",
        "checkpoint.pt",
        "checkpoint.pt.sha256",
    ]  # each with its record
    assert torch.load(folder / "checkpoint.pt", weights_only=False)["step"] == 2
    assert not SYNTHETIC_RUNS.result_path(params, "linear_single_amer_seed0").exists()
    run_setting(params, "linear", "single", progress=False)  # resumes at step 2 and finishes
    kept = sorted(str(p.relative_to(params.runs_dir)) for p in Path(params.runs_dir).rglob("*") if p.is_file())
    assert kept == [f"{folder.name}/best.pt", f"{folder.name}/best.pt.sha256"]  # the resume checkpoint went
    assert json.loads(SYNTHETIC_RUNS.result_path(params, "linear_single_amer_seed0").read_text())["best_step"] >= 1
