"""A run resumed after Ctrl-C: the progress bar starts at the steps already done and ends at its
total, and the estimate of the time left counts only the steps still to train."""

import io
import queue

import pytest
from spawned_jobs import resumed_job  # what a spawned worker imports: no more than the job needs
from stand_ins import TRAIN_CONFIG, make_model, make_problem, with_terms

from amer_lib import progress
from amer_lib.core.train import TrainConfig, train
from amer_lib.runs import parallel
from amer_lib.runs.parallel import DONE_BEFORE, StepReporter, run_parallel


class CtrlC:
    """A step callback that interrupts the run at its `at`-th step, as Ctrl-C does."""

    def __init__(self, at: int):
        self.at, self.calls = at, 0

    def __call__(self) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt


def test_a_resumed_training_reports_the_steps_it_had_done_apart_from_those_it_trains(tmp_path):
    """Stopped at step 6 of 12 with a checkpoint every 4 steps, it resumes at step 4: the reporter
    hears of the 4 steps done before, then of the 8 trained."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms(TRAIN_CONFIG))
    with pytest.raises(KeyboardInterrupt):
        train(make_model(), data, data, pool, config, run_dir=tmp_path, progress=False, on_step=CtrlC(6))
    steps = queue.Queue()
    reporter = StepReporter(steps)
    train(make_model(), data, data, pool, config, run_dir=tmp_path, progress=False, on_step=reporter)
    reporter.flush()
    messages = [steps.get() for _ in range(steps.qsize())]
    assert messages == [(DONE_BEFORE, 4), 1, 7]  # the first step at once, then the rest at the end


def test_steps_done_before_move_the_bar_as_its_initial_count_would():
    shown = io.StringIO()
    bar = progress.tqdm(total=600, file=shown, mininterval=0, desc="training steps")
    progress.count_done_before(bar, 309)
    assert bar.format_dict["initial"] == 309 and "309/600" in shown.getvalue()
    bar.update(291)
    bar.close()
    assert " 100%|" in shown.getvalue().split("\r")[-1] and "600/600" in shown.getvalue().split("\r")[-1]
    progress.report_done_before(lambda: None, 5)  # a plain step callback is only called per step


def test_the_parents_bar_and_estimate_of_a_resumed_job(monkeypatch, capsys):
    announced = []
    monkeypatch.setattr(parallel, "TIMED_SECONDS", 0.5)
    monkeypatch.setattr(parallel, "announce_cost", lambda *args: announced.append(args))
    run_parallel(resumed_job, [()], 1, 30, "training steps")
    ((what, steps, seconds, left),) = announced
    assert (what, steps, left) == ("training steps, 1 workers", 10, 30 - 9 - 11)  # the 10 steps of the last stretch
    assert 2.0 < seconds < 15
    shown = capsys.readouterr().out
    assert "9/30" in shown  # at once, before a step was trained here
    assert "30/30" in shown.split("\r")[-1] and " 100%|" in shown.split("\r")[-1]  # what a saved notebook keeps
