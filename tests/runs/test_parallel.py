"""Worker processes: no training, and no helper process, is left running when the parent dies
(a killed notebook)."""

import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT

SLEEPER = """
import faulthandler, os, signal, sys, time
from amer_lib.runs.parallel import run_parallel

faulthandler.register(signal.SIGUSR1, all_threads=True)  # a parent that hangs shows where, on stderr
# Ctrl-C raises KeyboardInterrupt, as in a kernel, even where the suite was started with SIGINT ignored
# (a shell's background job: Python then keeps ignoring it)
signal.signal(signal.SIGINT, signal.default_int_handler)

def sleep_and_report(path, on_step=None):
    with open(path, "a") as out:
        out.write(f"{os.getpid()}\\n")
    time.sleep(120)

if __name__ == "__main__":
    run_parallel(sleep_and_report, [(sys.argv[1],), (sys.argv[1],)], 2, 2, "sleep", progress=False)
"""


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as ended). Linux's /proc."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def started_workers(pids: Path) -> list[int]:
    """The two workers' pids, once each has written its own into `pids`."""
    deadline = time.time() + 120
    while time.time() < deadline and (not pids.exists() or len(pids.read_text().split()) < 2):
        time.sleep(0.5)
    workers = [int(pid) for pid in pids.read_text().split()]
    assert len(workers) == 2
    return workers


def test_workers_end_when_the_parent_is_killed(tmp_path):
    script, pids = tmp_path / "sleeper.py", tmp_path / "pids"
    script.write_text(SLEEPER)
    parent = subprocess.Popen([sys.executable, str(script), str(pids)], cwd=ROOT)
    try:
        workers = started_workers(pids)
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(parent.pid)], capture_output=True, text=True)
        workers += [int(pid) for pid in children.stdout.split()]  # the workers, and any helper process
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.time() + 15
    while time.time() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.5)
    assert not any(alive(pid) for pid in workers)


def test_an_interrupt_to_the_parent_alone_ends_the_workers_at_once(tmp_path):
    """JupyterLab's interrupt sends SIGINT to the kernel alone, not to its workers: the parent's
    KeyboardInterrupt must end them, not wait for their 120 s jobs (nor start the queued ones)."""
    script, pids = tmp_path / "sleeper.py", tmp_path / "pids"
    script.write_text(SLEEPER.replace("[(sys.argv[1],), (sys.argv[1],)]", "[(sys.argv[1],)] * 3"))
    parent = subprocess.Popen([sys.executable, str(script), str(pids)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        workers = started_workers(pids)
        parent.send_signal(signal.SIGINT)
        started = time.time()
        try:
            _, stderr = parent.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            parent.send_signal(signal.SIGUSR1)  # every thread's stack, then the failure names them
            time.sleep(2)
            parent.kill()
            threads = parent.communicate()[1]
            raise AssertionError(f"the parent still ran 30 s after SIGINT; its threads:\n{threads}") from None
        assert time.time() - started < 15 and parent.returncode != 0 and "KeyboardInterrupt" in stderr
    finally:
        parent.kill()
        parent.wait()
    deadline = time.time() + 15
    while time.time() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.5)
    assert not any(alive(pid) for pid in workers)
    assert len(pids.read_text().split()) == 2  # the queued third job never started


def test_the_suites_teardown_finds_a_process_a_test_left_orphaned():
    """conftest's end-of-session check sees every process the tests started, also one whose parent
    exited (re-parented to init), by the mark it inherits."""
    from conftest import processes_started_by_the_suite

    sleeper = "[sys.executable, '-c', 'import time; time.sleep(60)'], stdout=-3, stderr=-3"  # -3: DEVNULL
    orphan_maker = f"import subprocess, sys; print(subprocess.Popen({sleeper}).pid)"
    orphan = int(subprocess.run([sys.executable, "-c", orphan_maker], capture_output=True, text=True).stdout)
    try:
        assert orphan in [p.pid for p in processes_started_by_the_suite()]
    finally:
        subprocess.run(["kill", str(orphan)])
    deadline = time.time() + 10
    while alive(orphan) and time.time() < deadline:
        time.sleep(0.1)
    assert orphan not in [p.pid for p in processes_started_by_the_suite()]


SIBLINGS = """
import os, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
from amer_lib.runs.parallel import run_parallel

def job(kind, run_dir, on_step=None):
    from stand_ins import TRAIN_CONFIG, make_model, make_problem, with_terms
    from amer_lib.core import train as training
    from amer_lib.core.train import TrainConfig, train
    if kind == "trains on a full disk":  # the checkpoint its stop asks for (its only one) fails too
        kept = training.save_torch
        def full(path, payload):
            if path.name == "checkpoint.pt":
                raise OSError(28, f"No space left on device: {path}")
            kept(path, payload)
        training.save_torch = full
    if kind == "fails":
        time.sleep(8)  # the sibling is well into its steps
        raise OSError(28, "No space left on device")
    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 400, "checkpoint_every": 1000}))
    def slow():
        time.sleep(0.05)
        on_step()
    train(make_model(), data, data, pool, config, run_dir=run_dir, progress=False, on_step=slow)

if __name__ == "__main__":
    run_parallel(job, [(sys.argv[2], sys.argv[1]), ("fails", None)], 2, 400, "steps", progress=False)
"""


def test_a_failing_run_lets_its_sibling_end_its_step_and_checkpoint(tmp_path):
    """Issue 78: one worker's failure ended the other at once, which lost its steps since its last
    checkpoint. Now the sibling (its checkpoint due only at step 1,000) is asked to stop: it ends its
    step, writes its checkpoint there and says so, and the parent raises the failure."""
    import torch

    script, run_dir = tmp_path / "siblings.py", tmp_path / "run"
    script.write_text(SIBLINGS)
    parent = subprocess.run(
        [sys.executable, str(script), str(run_dir), "trains"], cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    assert parent.returncode != 0 and "No space left on device" in parent.stderr
    step = torch.load(run_dir / "checkpoint.pt", weights_only=True)["step"]
    assert 0 < step < 400
    assert f"stopped at step {step} of 400 (SIGTERM); the same command resumes there" in parent.stdout


def printing_job(name, on_step=None):
    import sys as worker_sys
    import warnings

    print(f"resuming run {name} at step 3 of 6")
    warnings.warn(f"run {name} warns", stacklevel=1)
    print("no newline at the end", end="")
    worker_sys.stdout.flush()
    on_step()
    return name


def test_what_a_worker_prints_the_parent_prints_once(capsys):
    """A worker's prints reach the parent's own stdout and stderr (not the file the worker inherited,
    which ipykernel would show twice under papermill's --log-output), whole lines, in order."""
    from amer_lib.runs.parallel import run_parallel

    assert run_parallel(printing_job, [("a",), ("b",)], 2, 2, "jobs", progress=False) == ["a", "b"]
    said = capsys.readouterr()
    for name in "ab":
        assert said.out.count(f"resuming run {name} at step 3 of 6\n") == 1
        assert said.err.count(f"UserWarning: run {name} warns") == 1
    assert said.out.count("no newline at the end") == 2


def test_a_sibling_whose_stop_checkpoint_fails_still_ends_at_once(tmp_path):
    """The sibling's own checkpoint fails (the disk is full for it too): the stop it was asked for
    is delivered again once its training has failed, so its worker ends then, not when the parent
    gives up on it (`STOP_SECONDS`)."""
    script, run_dir = tmp_path / "siblings.py", tmp_path / "run"
    script.write_text(SIBLINGS)
    started = time.time()
    parent = subprocess.run(
        [sys.executable, str(script), str(run_dir), "trains on a full disk"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert parent.returncode != 0 and "No space left on device" in parent.stderr
    assert time.time() - started < 60
    assert (run_dir / "best.pt").exists() and not (run_dir / "checkpoint.pt").exists()  # it trained until asked


TERMINATED_TWICE = """
import os, signal, sys, time
from amer_lib.io import stop_requests
from amer_lib.runs.parallel import run_parallel

def job(kind, on_step=None):
    if kind == "fails":
        time.sleep(3)
        raise OSError(28, "No space left on device")
    try:
        with stop_requests() as stop:
            on_step()
            while not stop:
                time.sleep(0.01)
            print("stopped at step 1 of 2 (SIGTERM); the same command resumes there", flush=True)
            raise KeyboardInterrupt  # as a training's TrainingStopped
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # the pool's own SIGTERM once its idle worker ended

if __name__ == "__main__":
    run_parallel(job, [("stops",), ("fails",)], 2, 2, "steps", progress=False)
"""


def test_a_second_sigterm_after_the_stop_does_not_lose_what_the_worker_said(tmp_path):
    """The pool, once `_end_workers` ended its idle worker, sees a broken pool and sends every
    worker SIGTERM again (`concurrent.futures`' terminate_broken). Arriving after the training had
    put back the worker's own handler, it used to end the worker before the line saying where its
    run resumes had left it. The worker now ends as its first stop asked, and says so."""
    script = tmp_path / "terminated_twice.py"
    script.write_text(TERMINATED_TWICE)
    for _ in range(3):
        parent = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert parent.returncode != 0 and "No space left on device" in parent.stderr
        assert parent.stdout.count("stopped at step 1 of 2 (SIGTERM); the same command resumes there\n") == 1
