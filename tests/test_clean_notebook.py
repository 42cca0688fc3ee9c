"""Saved notebooks keep no outputs in git's view: the clean filter and the save hook give a run
notebook back as committed, and leave the committed notebooks exactly as they are."""

import copy
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from amer_lib import clean_notebook
from amer_lib.clean_notebook import EXTENSION, FILTER, HOOK_CONFIG, KEEP_OUTPUTS, clean, dumps, install, jupyter_hook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def git_filter(data: bytes) -> subprocess.CompletedProcess:
    """The filter as git runs it: the file, from the checkout's top folder, the bytes on stdin."""
    return subprocess.run(clean_notebook.COMMAND.split(), cwd=ROOT, input=data, capture_output=True)


def as_saved_after_a_run(committed: dict) -> dict:
    """What JupyterLab saves after running every cell (outputs, counts, its metadata), by hand."""
    saved = copy.deepcopy(committed)
    for count, cell in enumerate(saved["cells"], 1):
        cell["metadata"]["jupyter"] = {"source_hidden": False}
        if cell["cell_type"] == "code":
            cell["execution_count"] = count
            cell["metadata"]["execution"] = {"iopub.status.busy": "2026-11-28T10:00:00.000Z"}
            cell["outputs"] = [
                {"name": "stdout", "output_type": "stream", "text": ["outputs: ../results/figures/x\n"]},
                {
                    "data": {"text/plain": ["1"]},
                    "execution_count": count,
                    "metadata": {},
                    "output_type": "execute_result",
                },
            ]
            cell["source"] = "".join(cell["source"])  # a source as one string, as some writers keep it
    saved["metadata"]["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
    saved["metadata"]["language_info"] = {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "name": "python",
        "version": "3.11.7",
    }
    saved["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return saved


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_committed_notebook_passes_the_filter_byte_for_byte(path):
    run = git_filter(path.read_bytes())
    assert run.returncode == 0 and run.stderr == b""
    assert run.stdout == path.read_bytes()


def test_the_filter_removes_a_runs_outputs_counts_and_metadata_and_is_idempotent():
    committed = ROOT / "notebooks" / "02_synthetic.ipynb"
    saved = as_saved_after_a_run(json.loads(committed.read_text()))
    text = json.dumps(saved, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert '"outputs": []' not in text and '"execution_count": 1' in text  # the hand-made run has them
    cleaned = git_filter(text.encode()).stdout
    assert cleaned == committed.read_bytes()
    assert git_filter(cleaned).stdout == cleaned  # idempotent
    assert dumps(clean(clean(saved))) == dumps(clean(saved))
    tags = [c["metadata"] for c in json.loads(cleaned)["cells"] if c["metadata"]]
    assert tags == [{"tags": ["parameters"]}]  # the parameters cell keeps its tag, for papermill


def test_a_file_that_is_not_a_notebook_passes_as_it_is_with_a_word():
    run = git_filter(b'{"cells": [')
    assert run.returncode == 0 and run.stdout == b'{"cells": ['
    assert b"not a notebook's JSON" in run.stderr


def test_install_sets_the_filter_up_in_a_git_checkout_and_keeps_one_turned_off(tmp_path):
    hooks = tmp_path / "jupyter"
    outside = tmp_path / "unpacked"  # a tarball's folder: no git checkout of its own
    outside.mkdir()
    lines = install(outside, hooks)
    assert "is not a git checkout" in lines[-1]
    enabling = json.loads((hooks / HOOK_CONFIG).read_text())
    assert enabling == {"ServerApp": {"jpserver_extensions": {EXTENSION: True}}}
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    config = lambda: subprocess.run(
        ["git", "config", "--local", f"filter.{FILTER}.clean"], cwd=checkout, capture_output=True, text=True
    ).stdout.strip()
    install(checkout, hooks)
    assert config() == clean_notebook.COMMAND
    subprocess.run(["git", "config", "--local", f"filter.{FILTER}.clean", "cat"], cwd=checkout, check=True)
    assert "left as it is" in install(checkout, hooks)[-1] and config() == "cat"
    assert f"*.ipynb filter={FILTER}" in (ROOT / ".gitattributes").read_text().splitlines()


def test_the_makefile_sets_the_filter_up_with_the_environment():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("$(VENV)/.installed-%:") :].split("\n\n")[0]
    assert "$(PY) amer_lib/clean_notebook.py --install" in recipe


def test_the_save_hook_strips_this_repositorys_notebooks_only(tmp_path, monkeypatch):
    committed = json.loads((ROOT / "notebooks" / "01_failure_analysis.ipynb").read_text())
    model = lambda: {"type": "notebook", "content": as_saved_after_a_run(committed)}
    manager = SimpleNamespace(root_dir=str(ROOT))
    monkeypatch.delenv(KEEP_OUTPUTS, raising=False)
    ours = model()
    jupyter_hook(model=ours, path="notebooks/01_failure_analysis.ipynb", contents_manager=manager)
    assert dumps(ours["content"]) == dumps(committed)
    elsewhere = model()  # a notebook of the user's own, outside notebooks/
    jupyter_hook(model=elsewhere, path="my_analysis.ipynb", contents_manager=manager)
    other_repository = model()
    manager_elsewhere = SimpleNamespace(root_dir=str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    jupyter_hook(model=other_repository, path="notebooks/x.ipynb", contents_manager=manager_elsewhere)
    monkeypatch.setenv(KEEP_OUTPUTS, "1")
    kept = model()
    jupyter_hook(model=kept, path="/notebooks/01_failure_analysis.ipynb", contents_manager=manager)
    for untouched in (elsewhere, other_repository, kept):
        assert untouched["content"] == as_saved_after_a_run(committed)


def test_the_filter_imports_nothing_but_the_standard_library():
    """git runs it at every `git status` of a saved notebook, with whatever python3 is first."""
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, runpy, sys; runpy.run_path('amer_lib/clean_notebook.py'); "
            "print(json.dumps(list(sys.modules)))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert not [m for m in json.loads(run.stdout) if m.split(".")[0] in ("amer_lib", "torch", "numpy")]
