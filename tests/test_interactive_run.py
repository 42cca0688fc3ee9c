"""A notebook run as JupyterLab runs it (nbclient, in notebooks/, no Makefile target) and saved
leaves the checkout as git sees it: its outputs go to results/figures/<notebook>, git-ignored, and
the saved notebook keeps no outputs in git's view. In a throwaway clone, so this checkout is
untouched."""

import importlib
import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from jupyter_server.extension.config import ExtensionConfigManager
from jupyter_server.services.contents.filemanager import FileContentsManager
from nbclient import NotebookClient

from amer_lib.clean_notebook import install
from amer_lib.io import COMMAND_VARIABLE, NOT_A_TARGET

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "02_synthetic"  # the cheapest notebook at small values: no benchmark to prepare
# what a user types at the end of the parameters cell for a quick first run
SMALL = """
settings = ["single"]
transforms = ["linear", "mlp"]
dim = 16
n_train = 120
n_test = 20
corpus_size = 1000
backbone_overrides = {"hidden_size": 32, "intermediate_size": 64}
steps = 4
batch_size = 16
eval_every = 2
workers = 1
"""


def git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True, check=True).stdout


def clone_with_this_working_tree(target: Path) -> Path:
    """A clone of the repository with this checkout's uncommitted changes committed in it (the
    code under test), set up as `make install` does (its Jupyter config under target/jupyter)."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(target / "clone")], check=True)
    clone = target / "clone"
    for name in git(ROOT, "ls-files", "-z", "--modified", "--others", "--exclude-standard").split("\0"):
        if name and (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    for name in git(ROOT, "ls-files", "-z", "--deleted").split("\0"):
        if name:
            (clone / name).unlink(missing_ok=True)
    git(clone, "add", "-A")
    if git(clone, "status", "--porcelain"):
        git(clone, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "working tree")
    install(clone, target / "jupyter")
    return clone


@pytest.mark.slow  # a kernel and six tiny runs: 22 s (36 s with the clone)
def test_a_notebook_run_and_saved_as_in_jupyterlab_leaves_git_status_clean(tmp_path, monkeypatch):
    clone = clone_with_this_working_tree(tmp_path)
    monkeypatch.delenv(COMMAND_VARIABLE, raising=False)  # not a Makefile target
    monkeypatch.setenv("PYTHONPATH", str(clone))  # the kernel imports the clone's amer_lib, and moves to its notebooks/
    path = clone / "notebooks" / f"{NOTEBOOK}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    [parameters] = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    committed_source = parameters.source
    parameters.source += "\n" + SMALL
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()

    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""
    outputs = clone / "results" / "figures" / NOTEBOOK
    printed = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    assert (
        f"outputs: ../results/figures/{NOTEBOOK} (git-ignored; figures/{NOTEBOOK}, which git tracks, is written"
        in printed
    )
    assert json.loads((outputs / "provenance.json").read_text())["command"] == NOT_A_TARGET
    assert (outputs / "figure2.png").exists() and not list(outputs.glob(".unpublished-*"))
    run = json.loads((clone / "results" / NOTEBOOK / "linear_single_amer_seed0.json").read_text())
    assert run["params"]["steps"] == 4 and run["params"]["figures_dir"] == ""
    rows = [line.split(",") for line in (outputs / "results.csv").read_text().splitlines()]
    header, *rows = rows
    [row] = [dict(zip(header, r)) for r in rows if r[:3] == ["linear", "single", "amer"]]
    assert float(row["mrecall@100"]) == round(run["metrics"]["mrecall@100"], 4)  # the table is the run's

    # saved from JupyterLab (its contents manager, with the extension make install enables), the user's
    # edit of the parameters cell undone: the file is the committed one again
    parameters.source = committed_source
    enabled = ExtensionConfigManager(read_config_path=[str(tmp_path / "jupyter")]).get_jpserver_extensions()
    assert enabled == {"amer_lib.clean_notebook": True}
    manager = FileContentsManager(root_dir=str(clone))
    importlib.import_module("amer_lib.clean_notebook")._load_jupyter_server_extension(
        SimpleNamespace(contents_manager=manager)
    )
    manager.save({"type": "notebook", "format": "json", "content": notebook}, f"notebooks/{NOTEBOOK}.ipynb")
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""
    assert path.read_bytes() == (ROOT / "notebooks" / f"{NOTEBOOK}.ipynb").read_bytes()

    # saved with its outputs by another writer (or AMER_KEEP_OUTPUTS=1): git's filter keeps them out
    nbformat.write(notebook, path)
    assert '"output_type"' in path.read_text()
    assert git(clone, "diff") == "" and git(clone, "diff", "--stat") == ""
    git(clone, "add", "-A")  # git status re-reads a file whose size changed only when it is added
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(clone, "diff", "--cached", "HEAD") == ""
