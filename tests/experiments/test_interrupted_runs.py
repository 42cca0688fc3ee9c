"""Notebook 04 interrupted as a user interrupts it (issue 78): Ctrl-C to the process that runs it,
with two runs training side by side in worker processes. Each run ends its step, writes its
checkpoint and says where it stopped; the same call again resumes both and ends with the results
of a run never interrupted."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from stand_ins import tiny_wordnet_runs

from amer_lib.experiments.real_data import run_all


def interrupt_once_both_train(runs_dir: Path) -> threading.Thread:
    """SIGINT to this process once each of the two runs has kept its best weights (both past a
    validation, mid-training), as Ctrl-C would send it."""

    def watch():
        deadline = time.time() + 240
        while len(list(runs_dir.rglob("best.pt"))) < 2 and time.time() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow  # three sittings of two 60-step MiniLM runs in worker processes: 91 s on 2 cores
def test_ctrl_c_mid_training_stops_each_run_at_a_checkpoint_and_the_rerun_ends_as_if_never_stopped(tmp_path, capsys):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a kernel or a terminal
    try:
        changes = dict(steps=60, eval_every=5, workers=2)
        interrupted = tiny_wordnet_runs(tmp_path / "interrupted", **changes)
        watcher = interrupt_once_both_train(Path(interrupted.runs_dir))
        with pytest.raises(KeyboardInterrupt):
            run_all(interrupted, progress=False)
        watcher.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("stopped at step")]
    assert len(said) == 2 and all("of 60 (SIG" in line and "the same command resumes there" in line for line in said)
    checkpoints = sorted(Path(interrupted.runs_dir).rglob("checkpoint.pt"))
    assert len(checkpoints) == 2
    resumed = run_all(interrupted, progress=False)
    resumed_from = [line for line in capsys.readouterr().out.splitlines() if line.startswith("resuming")]
    assert len(resumed_from) == 2  # each said once
    never_stopped = run_all(tiny_wordnet_runs(tmp_path / "never", **changes), progress=False)
    for a, b in zip(resumed, never_stopped):
        assert a["system"] == b["system"] and a["history"] == b["history"] and a["mrecall"] == b["mrecall"]
    for name in ("wordnet_kinds_single_seed0.trec", "wordnet_kinds_amer_seed0.trec"):
        kept = (Path(interrupted.results_dir) / name).read_bytes()
        assert kept == (Path(tmp_path / "never" / "results") / name).read_bytes()
