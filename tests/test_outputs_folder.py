"""Where a notebook's outputs go: results/figures/<notebook> (git-ignored) for a run by hand, also
when a parameter file names a folder under figures/; figures/ only under the Makefile's figure
targets; a figures_dir of the user's own elsewhere as it is;
and every folder the figure targets publish is still the committed one the readers of figures/
expect."""

import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from amer_lib.io import COMMAND_VARIABLE, figures_folder
from amer_lib.params import CONFIGS, cell_defaults, from_files


@pytest.mark.parametrize("notebook", CONFIGS)
def test_a_run_by_hand_writes_to_an_ignored_folder_and_says_how_to_publish(notebook, monkeypatch, capsys):
    monkeypatch.delenv(COMMAND_VARIABLE, raising=False)
    assert cell_defaults(notebook)["figures_dir"] == ""  # the notebook's parameters cell
    folder = figures_folder("", notebook)
    assert folder == Path("../results/figures") / notebook
    [line] = capsys.readouterr().out.splitlines()
    assert line == (
        f"outputs: ../results/figures/{notebook} (git-ignored; figures/{notebook}, which git tracks, is written "
        "only by the Makefile's figure targets: make figures, make figures-compound, make figures-mlp-sweep)"
    )
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", f"{folder.relative_to('..')}/figure1.png"], cwd=ROOT
    )
    assert ignored.returncode == 0, "results/ is git-ignored"


def test_a_makefile_target_publishes_and_a_named_folder_is_used_as_it_is(monkeypatch, capsys):
    monkeypatch.setenv(COMMAND_VARIABLE, "make figures")
    assert figures_folder("", "04_real_data") == Path("../figures/04_real_data")
    assert (
        capsys.readouterr().out
        == "outputs: ../figures/04_real_data (published: this run's provenance.json names 'make figures')\n"
    )
    assert figures_folder("/tmp/mine", "04_real_data", echo=False) == Path("/tmp/mine")
    monkeypatch.delenv(COMMAND_VARIABLE)
    assert figures_folder("/tmp/mine", "04_real_data") == Path("/tmp/mine")
    assert capsys.readouterr().out == "outputs: /tmp/mine\n"


@pytest.mark.parametrize("notebook", CONFIGS)
def test_a_parameter_file_naming_a_figures_folder_writes_it_only_under_a_figure_target(notebook, monkeypatch, capsys):
    """Every parameter file that sends its outputs under figures/ (the compound benchmark's, the paper
    scale's): run by hand, to results/figures/<the same name>."""
    monkeypatch.chdir(ROOT / "notebooks")  # where the kernel runs
    files = sorted((ROOT / "params" / notebook).glob("*.yaml"))
    named = [f for f in files if from_files(f"{notebook}.ipynb", f).figures_dir.startswith("../figures/")]
    for file in named:
        figures_dir = from_files(f"{notebook}.ipynb", file).figures_dir
        name = figures_dir.removeprefix("../figures/")
        monkeypatch.delenv(COMMAND_VARIABLE, raising=False)
        assert figures_folder(figures_dir, notebook, echo=False) == Path("../results/figures") / name, file
        monkeypatch.setenv(COMMAND_VARIABLE, "make figures-compound")
        assert figures_folder(figures_dir, notebook, echo=False) == Path(figures_dir), file
    monkeypatch.delenv(COMMAND_VARIABLE, raising=False)
    assert figures_folder("../figures/04_real_data_paper", notebook) == Path("../results/figures/04_real_data_paper")
    assert "figures/04_real_data_paper, which git tracks, is written only by" in capsys.readouterr().out


def _makefile_list(name: str) -> list[str]:
    [line] = [x for x in (ROOT / "Makefile").read_text().splitlines() if x.startswith(f"{name} ?=")]
    return line.split("?=", 1)[1].split()


def test_every_figure_target_still_publishes_into_the_committed_folders(monkeypatch):
    """Each notebook a figure target runs (with its parameter file, where it passes one) resolves,
    with the target's AMER_COMMAND, to a committed folder under figures/ (which results_page,
    check_figures and the tests read)."""
    makefile = (ROOT / "Makefile").read_text()
    runs = [("make figures", nb, []) for nb in _makefile_list("NOTEBOOKS")]
    runs += [("make figures-mlp-sweep", "02_synthetic", ["mlp_sweep.yaml"])]
    runs += [("make figures-compound", nb, ["compound.yaml"]) for nb in _makefile_list("COMPOUND_NOTEBOOKS")]
    runs += [("make figures-compound", nb, ["compound_distilled.yaml"]) for nb in _makefile_list("DISTILLED_NOTEBOOKS")]
    published = set()
    for target, notebook, files in runs:
        assert f"{target.split()[1]}: export {COMMAND_VARIABLE} := {target}" in makefile
        assert all(re.search(rf"-f params/(\$\$nb|{notebook})/{file}", makefile) for file in files), target
        monkeypatch.setenv(COMMAND_VARIABLE, target)
        config = from_files(f"{notebook}.ipynb", *(ROOT / "params" / notebook / file for file in files))
        folder = figures_folder(config.figures_dir, notebook, echo=False)
        assert folder.parent == Path("../figures"), (target, notebook, folder)
        published.add(folder.name)
    assert published == {p.name for p in (ROOT / "figures").iterdir() if p.is_dir()}
