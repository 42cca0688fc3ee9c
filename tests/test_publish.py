"""A notebook's outputs reach figures_dir together at its end: a run that fails or is killed leaves
the committed figures as they were, and no process of it behind."""

import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from amer_lib.io import STAGE_PREFIX, publish, stage, staged_or_published, write_text

ROOT = Path(__file__).resolve().parent.parent


def test_publish_moves_a_stage_into_its_folder_replacing_what_is_there(tmp_path, monkeypatch):
    write_text(tmp_path / "table.csv", "old\n")
    write_text(tmp_path / "summary_a.json", "a\n")
    dead = tmp_path / f"{STAGE_PREFIX}999999999"  # no such process: an earlier run's leftover
    dead.mkdir()
    staged = stage(tmp_path)
    assert staged.name == f"{STAGE_PREFIX}{os.getpid()}" and not dead.exists()
    write_text(staged / "table.csv", "new\n")
    write_text(staged / "summary_b.json", "b\n")
    write_text(staged / "sub" / "figure.png", "png\n")
    assert [p.name for p in staged_or_published(staged, "summary_*.json")] == ["summary_a.json", "summary_b.json"]
    assert (tmp_path / "table.csv").read_text() == "old\n"  # nothing moves before publish
    monkeypatch.setenv("AMER_COMMAND", "make figures")
    assert publish(staged) == [
        tmp_path / "provenance.json",
        tmp_path / "sub" / "figure.png",
        tmp_path / "summary_b.json",
        tmp_path / "table.csv",
    ]
    made = json.loads((tmp_path / "provenance.json").read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert made["commit"].removesuffix("+dirty") == head and made["command"] == "make figures"
    assert made["torch_threads"] == torch.get_num_threads() and made["versions"]["torch"] == torch.__version__
    assert 0 <= made["wall_seconds"] < 60 and made["cpu"]
    assert (tmp_path / "table.csv").read_text() == "new\n" and (tmp_path / "sub" / "figure.png").exists()
    assert not staged.exists() and (tmp_path / "summary_a.json").exists()
    with pytest.raises(ValueError, match=r"is not a folder made by stage\(\)"):
        publish(tmp_path)


def test_a_live_runs_stage_is_left_alone(tmp_path):
    alive = tmp_path / f"{STAGE_PREFIX}{os.getppid()}"
    alive.mkdir()
    stage(tmp_path)
    assert alive.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_notebook_leaves_the_committed_figures_and_no_process(tmp_path):
    """Notebook 02 as typed from the repository root, into a copy of its committed figures folder,
    killed (SIGKILL) once it has drawn Figure 2: the folder is unchanged but for the hidden stage,
    and the kernel (named by the stage) ends."""
    figures = tmp_path / "figures"
    shutil.copytree(ROOT / "figures" / "02_synthetic", figures)
    (figures / "figure2.png").write_bytes(b"the committed one")
    params = {
        "settings": ["single"],
        "transforms": ["linear"],
        "dim": 16,
        "n_train": 120,
        "n_test": 20,
        "corpus_size": 1000,
        "backbone_overrides": {"hidden_size": 32, "intermediate_size": 64},
        "steps": 100000,  # long enough to be killed while training
        "batch_size": 16,
        "eval_every": 50000,
        "workers": 1,
        "results_dir": str(tmp_path / "results"),
        "runs_dir": str(tmp_path / "runs"),
        "figures_dir": str(figures),
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    command = [sys.executable, "-m", "papermill", "notebooks/02_synthetic.ipynb", str(tmp_path / "out.ipynb")]
    run = subprocess.Popen(
        [*command, "-f", str(tmp_path / "params.yaml"), "-k", "python3"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(figures.glob(f"{STAGE_PREFIX}*/figure2.png")):
            assert run.poll() is None and time.monotonic() < deadline, "notebook 02 ended before drawing Figure 2"
            time.sleep(0.2)
        [staged] = figures.glob(f"{STAGE_PREFIX}*")
        kernel = int(staged.name.removeprefix(STAGE_PREFIX))
        run.send_signal(signal.SIGKILL)
        run.wait()
        deadline = time.monotonic() + 30
        while _alive(kernel) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(kernel), "the kernel outlived the killed papermill"
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    committed = sorted(p.name for p in (ROOT / "figures" / "02_synthetic").iterdir())
    assert sorted(p.name for p in figures.iterdir() if not p.name.startswith(STAGE_PREFIX)) == committed
    assert (figures / "figure2.png").read_bytes() == b"the committed one"
    same, different, errors = filecmp.cmpfiles(figures, ROOT / "figures" / "02_synthetic", committed, shallow=False)
    assert different == ["figure2.png"] and not errors  # only the one altered above
    assert (staged / "params.yaml").exists()  # this run's parameters stayed in its stage


def _status(paths: list[str]) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--", *paths], cwd=ROOT, capture_output=True, text=True
    ).stdout


@pytest.mark.slow  # two papermill runs, about 30 s
def test_refused_input_names_the_problem_and_leaves_the_checkout_as_it_was(tmp_path):
    """Bad input from the repository root, with the default figures_dir: a missing questions file
    (notebook 03, which wrote its params.yaml into figures/ before checking anything) and notebook 04
    without single-query stop with their message and change nothing git tracks or sees."""
    tracked = ["figures", "notebooks", "params", "README.md"]
    before = _status(tracked)
    cases = [
        (
            ["notebooks/03_real_data_prep.ipynb", "-p", "source", "files", "-p", "dataset_name", "mine"]
            + ["-p", "questions_path", str(tmp_path / "none.jsonl"), "-p", "corpus_path", str(tmp_path / "none.tsv")]
            + ["-p", "prepared_dir", str(tmp_path / "prepared")],
            "none.tsv does not exist (source 'files': corpus_path",
        ),
        (
            ["notebooks/04_real_data.ipynb", "-p", "systems", "[amer]", "-p", "prepared_dir", str(tmp_path / "p4")],
            "systems ['amer']: notebook 04's tables measure every system against single-query",
        ),
    ]
    for arguments, message in cases:
        command = [sys.executable, "-m", "papermill", arguments[0], str(tmp_path / "out.ipynb"), *arguments[1:]]
        run = subprocess.run([*command, "-k", "python3"], cwd=ROOT, capture_output=True, text=True)
        assert run.returncode != 0 and message in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]
    assert _status(tracked) == before
    assert not (tmp_path / "prepared").exists() and not (tmp_path / "p4").exists()


def _makefile_kernels() -> dict:
    [line] = [x for x in (ROOT / "Makefile").read_text().splitlines() if x.startswith("FIGURE_KERNELS :=")]
    return dict(pair.split("=", 1) for pair in line.split(":=", 1)[1].split())


def test_the_figure_targets_hold_every_kernel_variable_provenance_records():
    from amer_lib.io import KERNEL_VARIABLES

    assert _makefile_kernels() == KERNEL_VARIABLES


CPUINFO = Path("/proc/cpuinfo")


@pytest.mark.skipif(not CPUINFO.exists() or "avx2" not in CPUINFO.read_text(), reason="an x86-64 CPU with AVX2")
def test_a_process_under_the_figure_kernels_reports_avx2_in_its_provenance(tmp_path):
    code = "import json; from amer_lib.io import cpu_kernels; print(json.dumps(cpu_kernels()))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **_makefile_kernels()},
        capture_output=True,
        text=True,
        check=True,
    )
    kernels = json.loads(done.stdout)
    assert kernels["torch"] == "AVX2" and kernels["faiss"] == "AVX2"
    assert kernels["environment"] == _makefile_kernels()


def test_the_commit_turns_dirty_for_code_not_for_what_figure_targets_publish(tmp_path):
    """A checkout whose README verdicts or figures a figure target rewrote still names a clean
    commit (so `make figures` then `make figures-compound` in one checkout leave clean provenance);
    a change to code makes it dirty."""
    from amer_lib.io import git_commit

    git = lambda *args: subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True)  # noqa: E731
    git("init", "-q")
    for name in ("README.md", "figures/table.md", "amer_lib/code.py"):
        write_text(tmp_path / name, "committed\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD").stdout.strip()
    write_text(tmp_path / "README.md", "verdicts rewritten\n")
    write_text(tmp_path / "figures" / "table.md", "regenerated\n")
    write_text(tmp_path / "figures" / "new.md", "a new output\n")
    assert git_commit(tmp_path) == head
    write_text(tmp_path / "amer_lib" / "code.py", "changed\n")
    assert git_commit(tmp_path) == f"{head}+dirty"
