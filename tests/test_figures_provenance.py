"""Every committed folder under figures/ was made by one commit of the code, through a Makefile
target, with the kernels the figure targets hold; every committed parameter file still loads."""

import json

import pytest
from conftest import ROOT

from amer_lib.io import KERNEL_VARIABLES
from amer_lib.params import from_files

FIGURES = ROOT / "figures"
FOLDERS = sorted(p for p in FIGURES.iterdir() if p.is_dir())
TARGETS = {"make figures", "make figures-compound", "make figures-mlp-sweep"}


def notebook_of(folder) -> str:
    """`04_real_data_compound` -> `04_real_data`, `02_synthetic_mlp_sweep` -> `02_synthetic`."""
    return folder.name.removesuffix("_compound").removesuffix("_mlp_sweep")


def provenance(folder) -> dict:
    return json.loads((folder / "provenance.json").read_text())


def test_every_folder_names_one_clean_commit_a_makefile_target_and_the_figure_kernels():
    assert len(FOLDERS) >= 13
    made = {folder.name: provenance(folder) for folder in FOLDERS}
    commits = {m["commit"] for m in made.values()}
    assert len(commits) == 1, {name: m["commit"] for name, m in made.items()}
    [commit] = commits
    assert len(commit) == 40 and not commit.endswith("+dirty")
    for name, m in made.items():
        assert m["command"] in TARGETS, name
        assert m["kernels"]["torch"] == "AVX2" and m["kernels"]["environment"] == KERNEL_VARIABLES, name
        assert m["wall_seconds"] > 0 and m["versions"]["torch"], name
    assert f"commit `{commit}`" in (FIGURES / "RESULTS.md").read_text()


@pytest.mark.parametrize("path", sorted(FIGURES.glob("*/params*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_parameter_file_loads_in_the_current_code(path):
    from_files(ROOT / "notebooks" / f"{notebook_of(path.parent)}.ipynb", path)
