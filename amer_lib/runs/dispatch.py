"""The one way runs are started: the ones the run store holds are read back, the others trained
one after the other, in worker processes side by side (`amer_lib.runs.parallel`), or each by the
processes torchrun starts (`amer_lib.runs.torchrun`, one GPU each). Every experiment that trains
calls `run_jobs`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from amer_lib.core import distributed
from amer_lib.core.device import with_threads
from amer_lib.progress import tqdm
from amer_lib.runs import torchrun
from amer_lib.runs.parallel import run_parallel


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
    `cached(*job)` does not return; results in job order. `steps(job)`: the job's training steps,
    for the progress bar (its config's `steps` unless said); `first(job)`: jobs to start first in
    worker processes (the longest, so no worker idles at the end)."""
    for config, *_ in jobs:
        distributed.check_processes(config.nproc_per_node, config.batch_size, workers, config.device)
    results = [cached(*job) for job in jobs]
    todo = [i for i, result in enumerate(results) if result is None]
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
        done = run_parallel(threaded, [(*jobs[i], False) for i in todo], workers, total, "training steps", progress)
        for i, result in zip(todo, done):
            results[i] = result
    return results
