"""Every notebook run alone from an empty results folder either starts its work or stops at once
naming what to run first: the notebook that makes the missing file, its command and what it took
(the committed provenance.json), before any work."""

import json
import shutil
import subprocess
import sys
import time

import pytest
import yaml
from conftest import ROOT

from amer_lib.data import preparation
from amer_lib.experiments.real_data import ready_benchmark
from amer_lib.params import CONFIGS, from_files
from amer_lib.prerequisites import INPUTS, MissingInputError, require_inputs

READERS = [nb for nb in CONFIGS if INPUTS[nb]]


@pytest.fixture
def empty_checkout(tmp_path):
    """The repository's parameter files and published provenance, and no results/ at all."""
    shutil.copytree(ROOT / "params", tmp_path / "params")
    for record in (ROOT / "figures").glob("*/provenance.json"):
        (tmp_path / "figures" / record.parent.name).mkdir(parents=True)
        shutil.copy(record, tmp_path / "figures" / record.parent.name)
    (tmp_path / "notebooks").mkdir()
    return tmp_path


def minutes(folder: str) -> str:
    """A published run's wall time as the message gives it, read here from the record."""
    return f"{json.loads((ROOT / 'figures' / folder / 'provenance.json').read_text())['wall_seconds'] / 60:.0f} min"


def test_notebooks_05_to_07_read_02_and_04_and_the_others_no_notebooks_results():
    assert READERS == ["05_ablations", "06_diversity_analysis", "07_beyond"]
    for notebook in READERS:
        assert {maker for _, maker in INPUTS[notebook]} == {"02_synthetic", "04_real_data"}


@pytest.mark.parametrize("notebook", READERS)
def test_a_reader_from_empty_results_names_each_missing_file_its_notebook_command_and_time(notebook, empty_checkout):
    began = time.monotonic()
    with pytest.raises(MissingInputError) as stopped:
        require_inputs(notebook, from_files(f"{notebook}.ipynb"), empty_checkout)
    assert time.monotonic() - began < 20
    message = str(stopped.value)
    assert (
        "synthetic_params = '../results/02_synthetic/params.yaml': notebook 02_synthetic writes it: "
        "papermill notebooks/02_synthetic.ipynb build/executed/02_synthetic.ipynb (or run it in JupyterLab); "
        f"its published run took {minutes('02_synthetic')} on 2 cores under 'make figures', runs it found already made "
        "not counted (figures/02_synthetic/provenance.json)"
    ) in message
    assert (
        "real_params = '../results/04_real_data/params_minilm_wordnet_senses+wordnet_kinds.yaml': notebook "
        "04_real_data writes it: papermill notebooks/04_real_data.ipynb build/executed/04_real_data.ipynb"
    ) in message
    assert f"its published run took {minutes('04_real_data')} on 2 cores" in message and message.count("\n- ") == 2

    # notebook 02 run: only 04's file is named
    (empty_checkout / "results" / "02_synthetic").mkdir(parents=True)
    (empty_checkout / "results" / "02_synthetic" / "params.yaml").write_text("seed: 0\n")
    with pytest.raises(MissingInputError) as stopped:
        require_inputs(notebook, from_files(f"{notebook}.ipynb"), empty_checkout)
    assert "02_synthetic" not in str(stopped.value) and str(stopped.value).count("\n- ") == 1


def test_a_parameter_file_names_the_command_with_its_file(empty_checkout):
    """Notebook 06 on the compound benchmark reads what notebook 04 writes with compound.yaml."""
    params = from_files("06_diversity_analysis.ipynb", ROOT / "params" / "06_diversity_analysis" / "compound.yaml")
    with pytest.raises(MissingInputError) as stopped:
        require_inputs("06_diversity_analysis", params, empty_checkout)
    assert (
        "build/executed/04_real_data.ipynb -f params/04_real_data/compound.yaml (or run it in JupyterLab); "
        f"its published run took {minutes('04_real_data_compound')} on 2 cores under 'make figures-compound'"
    ) in str(stopped.value)
    mine = params.replace(real_params=["/nowhere/params_mine.yaml"])
    with pytest.raises(MissingInputError, match="'/nowhere/params_mine.yaml': notebook 04_real_data writes it, with"):
        require_inputs("06_diversity_analysis", mine, empty_checkout)


@pytest.mark.parametrize("notebook", [nb for nb in CONFIGS if nb not in READERS])
def test_the_other_notebooks_read_nothing_another_notebook_makes(notebook, empty_checkout):
    assert require_inputs(notebook, from_files(f"{notebook}.ipynb"), empty_checkout) is None


class Started(Exception):
    """Raised where a notebook would start its long work."""


def test_notebooks_01_and_04_prepare_the_offline_benchmark_themselves(tmp_path, monkeypatch):
    """From an empty prepared_dir, notebook 01's and notebook 04's first call starts notebook 03's
    preparation (stopped here), and a benchmark only notebook 03 makes is named."""
    prepared = []

    def prepare(params, progress=True):
        prepared.append(params.prepared_dir)
        raise Started

    monkeypatch.setattr(preparation, "prepare", prepare)
    recipe = from_files("03_real_data_prep.ipynb")
    failure = from_files("01_failure_analysis.ipynb").replace(prepared_dir=str(tmp_path / "01"))
    with pytest.raises(Started):
        preparation.prepared_benchmark(failure.prepared_dir, failure.datasets, recipe, failure.device)
    real = from_files("04_real_data.ipynb").replace(prepared_dir=str(tmp_path / "04"))
    with pytest.raises(Started):
        ready_benchmark(real, recipe)
    assert prepared == [str(tmp_path / "01"), str(tmp_path / "04")]
    paper = from_files("01_failure_analysis.ipynb", ROOT / "params" / "01_failure_analysis" / "paper.yaml")
    with pytest.raises(FileNotFoundError, match="with notebooks/03_real_data_prep.ipynb first"):
        preparation.prepared_benchmark(tmp_path / "paper", paper.datasets, recipe)


@pytest.mark.parametrize("notebook", READERS)
def test_the_check_is_the_first_thing_after_the_parameters(notebook):
    cells = [c for c in json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text())["cells"]]
    code = [c for c in cells if c["cell_type"] == "code"]
    [at] = [i for i, c in enumerate(code) if "parameters" in c["metadata"].get("tags", [])]
    first = "".join(code[at + 1]["source"]).splitlines()
    assert first[:2] == [
        f'params = notebook_params.collect("{notebook}", globals(), _before)',
        f'require_inputs("{notebook}", params)  # notebooks 02 and 04\'s runs are there, else what to run first',
    ]


@pytest.mark.slow  # a kernel up to the check: about 20 s
def test_notebook_06_from_empty_results_stops_at_the_check(tmp_path):
    """The issue's case: notebook 06 alone stops naming notebook 04, not with a bare FileNotFoundError
    from deep inside."""
    params = {
        "real_params": [str(tmp_path / "results" / "params_minilm_wordnet_senses+wordnet_kinds.yaml")],
        "synthetic_params": str(tmp_path / "results" / "params.yaml"),
        "figures_dir": str(tmp_path / "figures"),
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    command = [sys.executable, "-m", "papermill", "notebooks/06_diversity_analysis.ipynb", str(tmp_path / "out.ipynb")]
    began = time.monotonic()
    run = subprocess.run(
        [*command, "-f", str(tmp_path / "params.yaml"), "-k", "python3"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode != 0 and time.monotonic() - began < 120
    output = run.stdout + run.stderr
    assert "MissingInputError" in output and "notebook 04_real_data writes it" in output, output[-3000:]
    assert not (tmp_path / "figures").exists()  # stopped before it staged anything
