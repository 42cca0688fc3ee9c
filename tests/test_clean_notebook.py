"""Saved notebooks keep no outputs in git's view: the clean filter and the save hook give a run
notebook back as committed, and leave the committed notebooks exactly as they are."""

import asyncio
import copy
import inspect
import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from amer_lib import clean_notebook
from amer_lib.clean_notebook import (
    EXTENSION,
    FILTER,
    HOOK_CONFIG,
    KEEP_OUTPUTS,
    as_the_kernel_reports,
    clean,
    dumps,
    install,
    jupyter_hook,
)

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


def nbformat_writes_file(notebook: dict) -> bytes:
    """The bytes Jupyter server saves a notebook as: `nbformat.write` (its file manager's
    `_save_notebook`), which is `nbformat.writes` and the newline it ends a file with."""
    text = io.StringIO()
    nbformat.write(nbformat.from_dict(notebook), text, version=nbformat.NO_CONVERT)
    return text.getvalue().encode("utf-8")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_committed_notebook_read_validated_and_written_back_by_nbformat_is_byte_identical(path):
    """What Jupyter does to a notebook it opens and saves unchanged: the bytes stay, so the file
    itself (nbformat 4.5, cell ids, key order, indent, final newline) is not what makes JupyterLab
    mark it modified (that is the kernel's metadata: the tests below)."""
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert (notebook.nbformat, notebook.nbformat_minor) == (4, 5) and all("id" in c for c in notebook.cells)
    assert nbformat_writes_file(notebook) == path.read_bytes()
    assert (nbformat.writes(notebook) + "\n").encode() == path.read_bytes()


def with_attachments(committed: dict) -> dict:
    """A markdown cell with a pasted image, an SVG and a text attachment (nbformat writes the last
    two as lines, the image's base64 as one string)."""
    notebook = copy.deepcopy(committed)
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    cell["source"] = "![plot](attachment:plot.png) é\n"
    cell["attachments"] = {
        "plot.png": {"image/png": "iVBORw0KGgo=\n"},
        "plot.svg": {"image/svg+xml": "<svg>\n<g/>\n</svg>\n"},
        "notes.txt": {"text/plain": "two\nlines\n"},
    }
    return notebook


@pytest.mark.parametrize("kind", ["committed", "saved after a run", "with attachments"])
def test_the_filter_writes_what_nbformat_writes(kind):
    committed = json.loads((ROOT / "notebooks" / "02_synthetic.ipynb").read_text())
    notebook = {
        "committed": committed,
        "saved after a run": as_saved_after_a_run(committed),
        "with attachments": with_attachments(committed),
    }[kind]
    cleaned = clean(notebook)
    nbformat.validate(nbformat.from_dict(cleaned))
    assert dumps(cleaned).encode() == nbformat_writes_file(cleaned)
    if kind == "with attachments":  # by hand: the lines nbformat writes, the base64 as it is
        attachments = json.loads(dumps(cleaned))["cells"][0]["attachments"]
        assert attachments["plot.svg"] == {"image/svg+xml": ["<svg>\n", "<g/>\n", "</svg>\n"]}
        assert attachments["notes.txt"] == {"text/plain": ["two\n", "lines\n"]}
        assert attachments["plot.png"] == {"image/png": "iVBORw0KGgo=\n"}


@pytest.fixture(scope="module")
def kernel_report():
    """What a started python3 kernel tells JupyterLab: its spec's name, display name and language
    (JupyterLab's `_updateSpec`) and the `language_info` of its kernel_info reply (`_updateLanguage`)."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        language_info = client.kernel_info(reply=True, timeout=60)["content"]["language_info"]
        spec = manager.kernel_spec
        return {"kernelspec": {"name": "python3", "display_name": spec.display_name, "language": spec.language}} | {
            "language_info": language_info
        }
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def jupyterlab_marks_modified(served: dict, report: dict) -> list[str]:
    """The metadata keys JupyterLab's notebook panel changes once the kernel starts, each of which
    marks the notebook modified (@jupyter/ydoc's setMetadata skips a value deep-equal to the one
    there, else sets dirty): JupyterLab 4.6's `_updateSpec` and `_updateLanguage`."""
    return [key for key in ("kernelspec", "language_info") if served["metadata"].get(key) != report[key]]


def served_by(manager, path: str) -> dict:
    model = manager.get(path)
    if inspect.isawaitable(model):
        model = asyncio.run(model)
    return model


@pytest.mark.parametrize("asynchronous", [False, True], ids=["FileContentsManager", "AsyncFileContentsManager"])
def test_jupyterlab_opens_every_notebook_unmodified_and_a_save_gives_the_committed_bytes(
    asynchronous, kernel_report, tmp_path, monkeypatch
):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_server.services.contents.filemanager import AsyncFileContentsManager, FileContentsManager

    monkeypatch.delenv(KEEP_OUTPUTS, raising=False)
    copy_ = tmp_path / "checkout"  # a copy: the save writes the file
    (copy_ / "amer_lib").mkdir(parents=True)
    (copy_ / "amer_lib" / "clean_notebook.py").write_text("")  # what marks a checkout of this repository
    (copy_ / "notebooks").mkdir()
    manager = (AsyncFileContentsManager if asynchronous else FileContentsManager)(root_dir=str(copy_))
    for path in NOTEBOOKS:
        (copy_ / "notebooks" / path.name).write_bytes(path.read_bytes())
    (copy_ / "mine.ipynb").write_bytes(NOTEBOOKS[0].read_bytes())  # the user's own, elsewhere
    plain = served_by(manager, f"notebooks/{NOTEBOOKS[0].name}")["content"]
    assert jupyterlab_marks_modified(plain, kernel_report) == ["kernelspec", "language_info"]  # the cause

    clean_notebook._load_jupyter_server_extension(
        SimpleNamespace(contents_manager=manager, kernel_spec_manager=KernelSpecManager())
    )
    for path in NOTEBOOKS:
        model = served_by(manager, f"notebooks/{path.name}")
        assert jupyterlab_marks_modified(model["content"], kernel_report) == [], path.name
        saved = manager.save(
            {"type": "notebook", "format": "json", "content": model["content"]}, f"notebooks/{path.name}"
        )
        if inspect.isawaitable(saved):
            asyncio.run(saved)
        assert (copy_ / "notebooks" / path.name).read_bytes() == path.read_bytes(), path.name
    assert served_by(manager, "mine.ipynb")["content"]["metadata"] == plain["metadata"]


def test_a_kernel_of_another_python_or_unknown_here_keeps_its_metadata():
    class Specs:
        def get_kernel_spec(self, name):
            if name == "python3":
                return SimpleNamespace(
                    display_name="Py", language="python", argv=["/other/python", "-m", "ipykernel_launcher"]
                )
            raise KeyError(name)

    committed = json.loads(NOTEBOOKS[0].read_text())
    other = as_the_kernel_reports(copy.deepcopy(committed), Specs())["metadata"]
    assert other == {"kernelspec": {"name": "python3", "display_name": "Py", "language": "python"}} | {
        "language_info": {"name": "python"}
    }
    unknown = copy.deepcopy(committed)
    unknown["metadata"]["kernelspec"]["name"] = "julia"
    assert as_the_kernel_reports(copy.deepcopy(unknown), Specs()) == unknown
