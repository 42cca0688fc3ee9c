"""Every committed folder under figures/ was made by one commit of the code, through a Makefile
target, with the kernels the figure targets hold; every committed parameter file still loads."""

import json

import pytest
import yaml
from conftest import ROOT

from amer_lib.io import KERNEL_VARIABLES
from amer_lib.params import CONFIGS, from_files

FIGURES = ROOT / "figures"
FOLDERS = sorted(p for p in FIGURES.iterdir() if p.is_dir())
TARGETS = {"make figures", "make figures-compound", "make figures-mlp-sweep"}


def notebook_of(folder) -> str:
    """`04_real_data_compound` and `04_real_data_compound_distilled` -> `04_real_data`,
    `02_synthetic_mlp_sweep` -> `02_synthetic`."""
    return folder.name.removesuffix("_distilled").removesuffix("_compound").removesuffix("_mlp_sweep")


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
    page = (FIGURES / "RESULTS.md").read_text()
    assert f"commit `{commit}`" in page and "different commits" not in page


@pytest.mark.parametrize("path", sorted(FIGURES.glob("*/params*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_parameter_file_loads_in_the_current_code(path):
    """As papermill's `-f` reads it (over the defaults) and as notebooks 05-07 and `amer_lib.export`
    read a notebook's written parameters (every key named; a parameter added later and off by default
    reads as its default, `param(default_if_absent=True)`)."""
    notebook = notebook_of(path.parent)
    from_files(ROOT / "notebooks" / f"{notebook}.ipynb", path)
    CONFIGS[notebook].from_yaml(path)


def test_a_written_parameter_file_missing_a_parameter_that_shapes_runs_is_refused(tmp_path):
    path = next(FIGURES.glob("04_real_data/params_*.yaml"))
    values = yaml.safe_load(path.read_text())
    del values["lr"]
    values.pop("train_compounds", None)  # absent: its default
    incomplete = tmp_path / "params.yaml"
    incomplete.write_text(yaml.safe_dump(values))
    with pytest.raises(KeyError, match=r"missing parameter\(s\) \['lr'\] for RealConfig"):
        CONFIGS["04_real_data"].from_yaml(incomplete)
