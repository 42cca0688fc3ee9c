"""Jobs the tests hand to spawned worker processes, in a module that imports only what they use: a
spawned process imports the module of the function it runs, and a test module's imports (transformers,
through amer_lib's configs and models) cost each worker seconds before its job begins."""

import os
import time

from amer_lib import progress


def where_am_i(on_step=None):
    """The worker's process id and the GPUs CUDA would see in it."""
    time.sleep(0.3)
    return os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES")


def resumed_job(on_step=None):
    """A job resumed at step 9 of 30: the first step, a pause, 10 steps, a pause, the last 10."""
    progress.report_done_before(on_step, 9)
    on_step()
    time.sleep(2.5)  # the parent (polling each second) times from here
    for _ in range(10):
        on_step()
    time.sleep(2.5)  # it estimates here: 11 steps trained, 9 done before
    for _ in range(10):
        on_step()
