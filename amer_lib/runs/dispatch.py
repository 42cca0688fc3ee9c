"""The one way runs are started: the ones the run store holds are read back, the others trained
one after the other, in worker processes side by side (`amer_lib.runs.parallel`), or each by the
processes torchrun starts (`amer_lib.runs.torchrun`, one GPU each). Every experiment that trains
calls `run_jobs`.

On GPUs a run trains alone on its GPU: `workers` worker processes become at most one per GPU torch
sees, each holding its own (`training_workers`). A run trained by several processes
(`nproc_per_node` > 1) takes the GPUs of all of them, so such runs train one after the other
(`distributed.check_processes` caps `workers` to 1 and says so).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

import torch

from amer_lib.core import distributed
from amer_lib.core.device import with_threads
from amer_lib.progress import tqdm
from amer_lib.runs import torchrun
from amer_lib.runs.parallel import run_parallel


def training_workers(workers: int, devices: set[str]) -> tuple[int, list[str] | None]:
    """How many runs train side by side, and the GPU each worker process holds (None: no GPU).

    On the CPU, `workers` processes. On GPUs (a run's `device` "cuda", or "auto" where torch sees
    one), one training per GPU at a time: the workers become min(workers, GPUs), worker i sees only
    GPU i (CUDA_VISIBLE_DEVICES, set before its first CUDA call), and the cut is printed. Capped,
    not refused: `workers = 2` is notebook 04's default, made for a 2-core CPU, and the design
    card's command (`-p backbone llama8b`, no `-p workers`) must run as written on one GPU instead
    of failing; the memory preflight then projects the one process a GPU holds, which is what
    runs (two runs on one GPU would each hold that whole peak). Small models that could share a
    GPU take several processes of their own (`benchmarks/device_compound_levers.py`)."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not gpus or devices <= {"cpu"}:
        return workers, None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [name.strip() for name in visible.split(",")] if visible else [str(i) for i in range(gpus)]
    kept = min(workers, gpus)
    if kept < workers:
        print(
            f"workers = {workers} on {gpus} GPU(s): one training per GPU at a time, so {kept} worker(s) "
            f"(set -p workers {kept} to say so)",
            flush=True,
        )
    return kept, names[:kept] if kept > 1 else None


def run_jobs(
    runner: Callable,
    jobs: list[tuple],
    cached: Callable[..., object | None],
    workers: int,
    progress: bool = True,
    steps: Callable[[tuple], int] = lambda job: job[0].steps,
    first: Callable[[tuple], bool] | None = None,
) -> list:
    """`runner(*job, progress=, on_step=, device=)` for every job `(config, *arguments)` that
    `cached(*job)` does not return; results in job order. `workers`: worker processes on the CPU,
    at most one per GPU on GPUs (`training_workers`). `steps(job)`: the job's training steps,
    for the progress bar (its config's `steps` unless said); `first(job)`: jobs to start first in
    worker processes (the longest, so no worker idles at the end). Runs trained by several
    processes each (`nproc_per_node` > 1) are checked and take one worker
    (`distributed.check_processes`: said when `workers` asked for more)."""
    results = [cached(*job) for job in jobs]
    todo = [i for i, result in enumerate(results) if result is None]
    for i in todo:  # runs read back need no processes
        config = jobs[i][0]
        workers = distributed.check_processes(config.nproc_per_node, config.batch_size, workers, config.device)
    if todo:
        workers, gpus = training_workers(workers, {jobs[i][0].device for i in todo})
    if any(jobs[i][0].nproc_per_node > 1 for i in todo):
        for i in todo:
            torchrun.launch(runner, jobs[i][0], jobs[i][1:], progress)
            results[i] = cached(*jobs[i])
    elif workers == 1:
        for i in tqdm(todo, desc="runs", disable=not progress or len(todo) < 2):
            results[i] = with_threads(runner, *jobs[i], progress=progress)
    elif todo:
        if first is not None:
            todo.sort(key=lambda i: not first(jobs[i]))
        total = sum(steps(jobs[i]) for i in todo)
        threaded = partial(with_threads, runner)
        args = [(*jobs[i], False) for i in todo]
        done = run_parallel(threaded, args, workers, total, "training steps", progress, gpus)
        for i, result in zip(todo, done):
            results[i] = result
    return results
