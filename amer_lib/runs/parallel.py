"""Independent trainings in parallel worker processes, with one progress bar over their steps.

On a 2-core CPU two single-threaded trainings of a small model finish sooner than two
consecutive two-threaded ones: the steps are too small to keep two threads busy. Each job sets its
own threads (`core.device.with_threads`): they are part of what a run computes, not of the machine.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from queue import Empty

from amer_lib.io import end_with_parent
from amer_lib.progress import announce_cost, count_done_before, tqdm

DONE_BEFORE = "done before"  # a worker's message of the steps its job had done before it began here
STREAMS = ("stdout", "stderr")  # a worker's messages of what it printed, which the parent prints


class ToParent(io.TextIOBase):
    """A worker's `sys.stdout` or `sys.stderr`: whole lines sent to the parent, which prints them
    itself. Printed by the worker on the file it inherited, each line would show twice in a
    papermill run with `--log-output` (ipykernel writes what its child processes print to its own
    terminal as well as into the notebook) and would cut through the parent's progress bar."""

    def __init__(self, queue, stream: str):
        self.queue, self.stream, self.pending = queue, stream, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.pending += text
        if "\n" in self.pending:
            lines, self.pending = self.pending.rsplit("\n", 1)
            self.queue.put((self.stream, lines + "\n"))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.queue.put((self.stream, self.pending))
            self.pending = ""


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
_IN_JOB = False  # in a worker: a job is running (`_call_reporting`)
_ENDING = False  # in a worker: it was asked to end, and is saying its last words


def _start_worker(parent: int, steps, gpus) -> None:
    """A worker's set-up: the parent's step queue, its GPU (one name taken from the queue `gpus`,
    before anything here starts CUDA: the worker then sees that GPU alone, as "cuda"), and a watch
    that ends it when its parent is gone (a killed notebook must not leave trainings running on).
    The queues are handed over here, not through a Manager: a Manager's server process would
    outlive a killed parent."""
    global _STEPS
    _STEPS = steps
    sys.stdout, sys.stderr = ToParent(steps, "stdout"), ToParent(steps, "stderr")
    if gpus is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus.get()
    signal.signal(signal.SIGTERM, _on_sigterm)
    end_with_parent(parent)


def _on_sigterm(signum, frame) -> None:
    """A worker's SIGTERM outside a training's own handler (`io.stop_requests`): an idle worker ends
    at once; a job is interrupted (KeyboardInterrupt), so that its worker sends what it printed
    before it ends (`_call_reporting`). Any later SIGTERM is ignored while it does: the pool itself
    sends one to every worker once the idle one has ended (`concurrent.futures`' broken-pool path),
    and a training that had just stopped would lose the line saying where its run resumes."""
    global _ENDING
    if _ENDING:
        return
    _ENDING = True
    if not _IN_JOB:
        os._exit(1)
    raise KeyboardInterrupt


def _call_reporting(function: Callable, args: tuple):
    """A job in a worker, its steps reported. A job stopped by a signal (SIGTERM from `_end_workers`,
    a terminal's Ctrl-C: a training ends its step and checkpoints first) ends its worker: the pool is
    being shut down, and the worker would otherwise wait for a next job until it is killed."""
    global _ENDING, _IN_JOB
    reporter = StepReporter(_STEPS)
    _IN_JOB = True
    try:
        return function(*args, on_step=reporter)
    except KeyboardInterrupt:
        _ENDING = True
        sys.stdout.flush()
        sys.stderr.flush()
        reporter.flush()
        _STEPS.close()
        _STEPS.join_thread()  # what it printed and counted reaches the parent before the worker ends
        os._exit(1)
    finally:
        _IN_JOB = False
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
    CUDA_VISIBLE_DEVICES). The first failure, or an interrupt, ends every job: each training ends
    its step and writes its checkpoint first (`_end_workers`). With `progress`, long work is
    announced with its cost once the steps after the first were timed for `TIMED_SECONDS` (the
    workers' start-up and the first step's warm-up left out). The bar counts the steps the jobs had
    done before (resumed runs) at once, and the estimate only the steps trained here and those left;
    the bar closes at `total_steps` once every count arrived."""
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
        counts = {"trained": 0, DONE_BEFORE: 0}  # before the try: the stopping workers' last words are counted too
        try:
            futures = {pool.submit(_call_reporting, function, job): i for i, job in enumerate(jobs)}
            pending = set(futures)
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
            _drain(queue, bar, counts)  # and what it printed last
        except BaseException:  # a failure, or KeyboardInterrupt: JupyterLab interrupts the kernel alone
            _end_workers(pool)
            _drain(queue, bar, counts)  # what the workers said as they stopped (where each run resumes)
            raise
    return [results[i] for i in range(len(jobs))]


STOP_SECONDS = 120.0  # how long a worker asked to stop may take to end its step and write its checkpoint


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers, rather than the pool's exit waiting for every job to finish: the queued
    jobs cancelled, the running ones sent SIGTERM. A training takes it as a request to end its step,
    write its checkpoint and say where it stopped (`core.train`; its run resumes there), then its
    worker ends (`_call_reporting`); an idle worker, or one in other work, ends at once. A worker
    still running `STOP_SECONDS` after the SIGTERM is killed."""
    processes = list(pool._processes.values())  # no public handle before Python 3.14's terminate_workers
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + STOP_SECONDS
    for process in processes:
        process.join(timeout=max(deadline - time.monotonic(), 0.1))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(timeout=10)


def _drain(queue, bar, counts: dict[str, int]) -> None:
    """The messages still on their way from workers that are done or gone."""
    while True:
        try:
            _count(queue.get(timeout=0.2), bar, counts)
        except (Empty, OSError, EOFError):
            return


def _count(message, bar, counts: dict[str, int]) -> None:
    """A worker's message on the parent's bar and in `counts`: steps trained, or done before; or
    what it printed, printed here above the bar."""
    if isinstance(message, tuple) and message[0] in STREAMS:
        bar.write(message[1].removesuffix("\n"), file=getattr(sys, message[0]))
    elif isinstance(message, tuple):
        counts[DONE_BEFORE] += message[1]
        count_done_before(bar, message[1])
    else:
        counts["trained"] += message
        bar.update(message)
