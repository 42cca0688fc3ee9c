"""Independent trainings in parallel worker processes, with one progress bar over their steps.

On a 2-core CPU two single-threaded trainings of a small model finish sooner than two
consecutive two-threaded ones: the steps are too small to keep two threads busy. Each job sets its
own threads (`core.device.with_threads`): they are part of what a run computes, not of the machine.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from queue import Empty

from amer_lib.io import end_with_parent
from amer_lib.progress import announce_cost, count_done_before, tqdm

DONE_BEFORE = "done before"  # a worker's message of the steps its job had done before it began here


class StepReporter:
    """Counts a worker's training steps and sends them to the parent's progress bar: the first at
    once (the parent times it for its estimate), then in chunks; and, apart, the steps its job had
    done before (a resumed run's, a run read back: `progress.report_done_before`)."""

    def __init__(self, queue, every: int = 10):
        self.queue, self.every, self.count, self.sent = queue, every, 0, False

    def __call__(self) -> None:
        self.count += 1
        if self.count >= self.every or not self.sent:
            self.flush()
            self.sent = True

    def done_before(self, steps: int) -> None:
        self.flush()
        self.queue.put((DONE_BEFORE, steps))

    def flush(self) -> None:
        if self.count:
            self.queue.put(self.count)
            self.count = 0


TIMED_SECONDS = 30.0  # how long the parent times the steps before it estimates the rest
LATE_SECONDS = 2.0  # how long the parent waits, once every job is done, for step counts still on their way
_STEPS = None  # in a worker: the queue its training steps go to (set by `_start_worker`)


def _start_worker(parent: int, steps, gpus) -> None:
    """A worker's set-up: the parent's step queue, its GPU (one name taken from the queue `gpus`,
    before anything here starts CUDA: the worker then sees that GPU alone, as "cuda"), and a watch
    that ends it when its parent is gone (a killed notebook must not leave trainings running on).
    The queues are handed over here, not through a Manager: a Manager's server process would
    outlive a killed parent."""
    global _STEPS
    _STEPS = steps
    if gpus is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus.get()
    end_with_parent(parent)


def _call_reporting(function: Callable, args: tuple):
    reporter = StepReporter(_STEPS)
    try:
        return function(*args, on_step=reporter)
    finally:
        reporter.flush()


def run_parallel(
    function: Callable,
    jobs: list[tuple],
    workers: int,
    total_steps: int,
    desc: str,
    progress: bool = True,
    gpus: list[str] | None = None,
) -> list:
    """`function(*job, on_step=callback)` for every job in `workers` spawned processes; results
    in job order. `gpus`: one GPU name per worker, the only GPU that worker sees (its
    CUDA_VISIBLE_DEVICES). The first failure, or an interrupt, ends every job at once. With
    `progress`, long work is announced with its cost once the steps after the first were timed for
    `TIMED_SECONDS` (the workers' start-up and the first step's warm-up left out). The bar counts
    the steps the jobs had done before (resumed runs) at once, and the estimate only the steps
    trained here and those left; the bar closes at `total_steps` once every count arrived."""
    if gpus is not None and len(gpus) != workers:
        raise ValueError(f"{workers} workers need one GPU each, got {len(gpus)}: {gpus}")
    context = multiprocessing.get_context("spawn")
    results = {}
    queue = context.Queue()
    devices = None
    if gpus is not None:
        devices = context.Queue()
        for name in gpus:
            devices.put(name)
    with (
        ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), queue, devices)
        ) as pool,
        tqdm(total=total_steps, desc=f"{desc}, {workers} workers", disable=not progress) as bar,
    ):
        try:
            futures = {pool.submit(_call_reporting, function, job): i for i, job in enumerate(jobs)}
            pending = set(futures)
            counts = {"trained": 0, DONE_BEFORE: 0}
            first = None  # (time, steps trained) at the first report: start-up is over
            announced = False
            while pending:
                done, pending = wait(pending, timeout=1.0, return_when=FIRST_EXCEPTION)
                while not queue.empty():
                    _count(queue.get(), bar, counts)
                now, trained = time.perf_counter(), counts["trained"]
                if first is None and trained:
                    first = (now, trained)
                elif first and not announced and progress and now - first[0] >= TIMED_SECONDS and trained > first[1]:
                    announced = True
                    left = total_steps - trained - counts[DONE_BEFORE]
                    announce_cost(f"{desc}, {workers} workers", trained - first[1], now - first[0], left)
                for future in done:
                    if future.exception() is not None:
                        raise future.exception()
                    results[futures[future]] = future.result()
            while 0 < sum(counts.values()) < total_steps:  # a job's last counts may come after its result
                try:
                    _count(queue.get(timeout=LATE_SECONDS), bar, counts)
                except Empty:
                    break
        except BaseException:  # a failure, or KeyboardInterrupt: JupyterLab interrupts the kernel alone
            _end_workers(pool)
            raise
    return [results[i] for i in range(len(jobs))]


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now: the queued jobs cancelled, the running ones terminated (their runs
    resume from their last checkpoint), rather than the pool's exit waiting for every job to finish."""
    processes = list(pool._processes.values())  # no public handle before Python 3.14's terminate_workers
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=10)


def _count(message, bar, counts: dict[str, int]) -> None:
    """A worker's message on the parent's bar and in `counts`: steps trained, or done before."""
    if isinstance(message, tuple):
        counts[DONE_BEFORE] += message[1]
        count_done_before(bar, message[1])
    else:
        counts["trained"] += message
        bar.update(message)
