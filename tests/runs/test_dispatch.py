"""Worker processes and GPUs: on GPUs a run trains alone on its GPU, whatever `workers` says."""

import os

import pytest
import torch
from spawned_jobs import where_am_i  # what a spawned worker imports: no more than the job needs

from amer_lib.params import NOTEBOOKS, from_files
from amer_lib.runs import dispatch
from amer_lib.runs.parallel import run_parallel


def design_card_params():
    """`papermill notebooks/04_real_data.ipynb out.ipynb -p backbone llama8b`: the defaults, workers = 2."""
    params = from_files(NOTEBOOKS / "04_real_data.ipynb").replace(backbone="llama8b")
    assert params.workers == 2 and params.device == "auto"
    return params


def gpus_seen(monkeypatch, count: int) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_the_design_cards_command_trains_one_run_at_a_time_on_one_gpu(monkeypatch, capsys):
    params = design_card_params()
    gpus_seen(monkeypatch, 1)
    monkeypatch.setattr(dispatch, "run_parallel", lambda *a, **k: pytest.fail("two trainings on one GPU"))
    jobs = [(params, d, s, seed) for d in params.datasets for s in params.systems for seed in params.seeds]

    def runner(config, dataset, system, seed, progress=True, on_step=None, device=None):
        return os.getpid(), dataset, system, seed

    results = dispatch.run_jobs(runner, jobs, lambda *job: None, params.workers, progress=False)
    # every run in this process, one after the other (no worker process was started)
    assert results == [(os.getpid(), *job[1:]) for job in jobs] and len(results) == 12
    assert "workers = 2 on 1 GPU(s): one training per GPU at a time, so 1 worker(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("workers", "gpus", "visible", "expected"),
    [
        (2, 1, None, (1, None)),
        (2, 2, None, (2, ["0", "1"])),
        (4, 2, None, (2, ["0", "1"])),
        (2, 4, None, (2, ["0", "1"])),
        (2, 2, "3,5", (2, ["3", "5"])),  # the GPUs this process was given, in their order
        (3, 0, None, (3, None)),  # no GPU: the CPU's workers
    ],
)
def test_workers_are_at_most_one_per_gpu(monkeypatch, workers, gpus, visible, expected):
    gpus_seen(monkeypatch, gpus)
    if visible:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert dispatch.training_workers(workers, {"auto"}) == expected
    assert dispatch.training_workers(workers, {"cuda"}) == expected


def test_runs_asked_on_the_cpu_keep_their_workers_beside_a_gpu(monkeypatch, capsys):
    gpus_seen(monkeypatch, 1)
    assert dispatch.training_workers(2, {"cpu"}) == (2, None)
    assert capsys.readouterr().out == ""


def test_two_gpus_train_two_runs_each_on_its_own(monkeypatch):
    params = design_card_params()
    gpus_seen(monkeypatch, 2)
    calls = []

    def parallel(function, jobs, workers, *rest):
        calls.append((workers, rest))
        return [None] * len(jobs)

    monkeypatch.setattr(dispatch, "run_parallel", parallel)
    dispatch.run_jobs(lambda *a, **k: None, [(params, "d", "single", 0)] * 2, lambda *job: None, 2, progress=False)
    assert calls == [(2, (2 * params.steps, "training steps", False, ["0", "1"]))]


def test_each_worker_process_sees_only_its_own_gpu():
    """Real spawned workers (no GPU needed: the variable is what CUDA reads when it starts)."""
    seen = run_parallel(where_am_i, [()] * 6, 2, 6, "where", progress=False, gpus=["0", "1"])
    by_worker = {}
    for pid, gpu in seen:
        by_worker.setdefault(pid, set()).add(gpu)
    assert all(len(gpus) == 1 for gpus in by_worker.values())
    names = [gpu for gpus in by_worker.values() for gpu in gpus]
    assert len(names) == len(set(names)) and set(names) <= {"0", "1"}


def test_a_gpu_per_worker_is_checked():
    with pytest.raises(ValueError, match="2 workers need one GPU each, got 1"):
        run_parallel(where_am_i, [()], 2, 1, "where", progress=False, gpus=["0"])


def test_four_processes_a_run_train_the_runs_one_after_the_other_with_the_default_workers(monkeypatch, capsys):
    """`-p nproc_per_node 4` with notebook 04's `workers = 2`: capped to one worker (said once), not
    refused; every run still to train goes to torchrun in turn, no worker process is started, and
    runs read back are not launched."""
    params = design_card_params().replace(nproc_per_node=4, batch_size=32, device="cpu")
    gpus_seen(monkeypatch, 0)
    launched = []
    monkeypatch.setattr(dispatch.torchrun, "launch", lambda runner, config, job, progress: launched.append(job))
    monkeypatch.setattr(dispatch, "run_parallel", lambda *a, **k: pytest.fail("worker processes beside torchrun"))
    jobs = [(params, "d", system, 0) for system in ("single", "amer", "oracle")]
    done = {("d", "amer", 0): {"read": "back"}}
    results = dispatch.run_jobs(lambda *a, **k: None, jobs, lambda *job: done.get(job[1:]), 2, progress=False)
    assert launched == [("d", "single", 0), ("d", "oracle", 0)]
    assert results == [None, {"read": "back"}, None]  # the launched runs' results: none written by the stand-in
    assert capsys.readouterr().out == (
        "workers = 2 and nproc_per_node = 4: each run is trained by 4 processes together, one run at a time, "
        "so 1 worker (set -p workers 1 to say so)\n"
    )
    dispatch.run_jobs(lambda *a, **k: None, jobs[1:2], lambda *job: done.get(job[1:]), 2, progress=False)
    assert capsys.readouterr().out == ""  # nothing to train: nothing said
