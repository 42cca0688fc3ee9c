"""A notebook runs as often as a researcher presses Run All: in one kernel, Run All, edit the
parameters cell, Run All again. The second pass takes the cell's values as they are now (a changed
one its new value; a deleted one is missing, as on a first pass: an error naming it, or the
config's default where the config gives one), never the first pass's. Each notebook's cells run
in a kernel started in the repository root, as JupyterLab's would be, with a papermill-style cell
after the parameters cell sending every output to a temporary folder. Notebook 02 (the cheap one)
runs whole at small values (slow); every notebook runs up to its first long call (`STOPS`)."""

import ast
import json
import os
import subprocess

import nbformat
import pytest
import yaml
from conftest import ROOT
from jupyter_client.manager import KernelManager
from test_interactive_run import SMALL

from amer_lib.io import COMMAND_VARIABLE
from amer_lib.params import CONFIGS, parameter_names

# The first line a pass does not run: each notebook's first long call (preparing, encoding, training
# or drawing), or its first read of another notebook's runs, which a checkout may not have yet.
STOPS = {
    "01_failure_analysis": "benchmark = prepared_benchmark(",  # notebook 03's benchmark, prepared if missing
    "02_synthetic": "layout = sequence_layout(",  # Figure 2 (5 s a pass), then the training; the slow test runs both
    "03_real_data_prep": "benchmark, mapping = prepare(params)",  # downloads, prepares and encodes
    "04_real_data": "benchmark = ready_benchmark(",  # the benchmark prepared and the corpus encoded
    "05_ablations": "require_inputs(",  # notebooks 02 and 04's runs
    "06_diversity_analysis": "require_inputs(",
    "07_beyond": "require_inputs(",
}
# The parameter each notebook's second pass changes, to a value other than its default.
EDITS = {
    "01_failure_analysis": ("min_questions", 25),
    "02_synthetic": ("seed", 3),
    "03_real_data_prep": ("seed", 5),
    "04_real_data": ("component_weight", 0.5),
    "05_ablations": ("real_seeds", [1, 2]),
    "06_diversity_analysis": ("seeds", [2]),
    "07_beyond": ("synthetic_seeds", [1]),
}
# Its line deleted, a parameter is missing (the pass stops at the parameters' check), or, where its
# config declares a default for a cell without it (`default_if_absent`), takes that default.
DELETED_DEFAULTS = {"04_real_data": 0.0}
# The notebooks whose pass writes its parameters into its figures folder before the stop.
STAGED = ("01_failure_analysis", "02_synthetic", "03_real_data_prep")


def git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


class Kernel:
    """A python3 kernel started in the repository root, as JupyterLab starts one for a notebook."""

    def __init__(self):
        env = {k: v for k, v in os.environ.items() if k != COMMAND_VARIABLE}  # a run by hand, not a Makefile target
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(ROOT), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)

    def run(self, code: str) -> tuple[str, str | None]:
        """Execute `code` as a cell: what it printed, and its error as `Name: value` (None if none)."""
        printed = []
        hook = lambda msg: printed.append(msg["content"]["text"]) if msg["msg_type"] == "stream" else None
        reply = self.client.execute_interactive(code, output_hook=hook, timeout=900, allow_stdin=False)["content"]
        error = f"{reply['ename']}: {reply['evalue']}" if reply["status"] == "error" else None
        return "".join(printed), error

    def fresh(self) -> None:
        """A new notebook's namespace and folder, as a new kernel has them (modules stay imported)."""
        assert self.run(f"%reset -f\n__import__('os').chdir({str(ROOT)!r})")[1] is None

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel():
    kernel = Kernel()  # one for the file: the imports (torch) once, each notebook in a fresh namespace
    yield kernel
    kernel.shutdown()


def code_cells(notebook: str) -> tuple[list[str], int]:
    """The notebook's code cells' sources, and the index of its parameters cell among them."""
    cells = [c for c in nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4).cells]
    code = [c for c in cells if c.cell_type == "code"]
    [index] = [i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])]
    return [c.source for c in code], index


def edited(source: str, name: str, value=None, delete: bool = False) -> str:
    """The parameters cell with `name`'s assignment (all its lines) set to `value`, or deleted."""
    [node] = [n for n in ast.parse(source).body if isinstance(n, ast.Assign) and n.targets[0].id == name]
    lines = source.splitlines()
    new = [] if delete else [f"{name} = {value!r}"]
    return "\n".join(lines[: node.lineno - 1] + new + lines[node.end_lineno :])


def injected(notebook: str, folder) -> str:
    """Papermill's injected-parameters cell, as it would follow the parameters cell: every folder
    the notebook writes to, in `folder` (which changes from pass to pass)."""
    outputs = [name for name in ("results_dir", "runs_dir", "figures_dir") if name in parameter_names(notebook)]
    return "\n".join(f"{name} = {str(folder / name)!r}" for name in outputs)


def run_all(kernel: Kernel, notebook: str, parameters: str, folder, stop: str | None) -> tuple[dict | None, str | None]:
    """One Run All of the notebook's code cells, with `parameters` as its parameters cell, up to the
    line starting with `stop` (None: every cell). The config the pass built (None if it stopped at
    an error), and the error."""
    cells, index = code_cells(notebook)
    cells = [*cells[:index], parameters, injected(notebook, folder), *cells[index + 1 :]]
    for source in cells:
        lines = source.splitlines()
        last = next((i for i, line in enumerate(lines) if stop and line.startswith(stop)), None)
        _, error = kernel.run("\n".join(lines[:last]))
        if error:
            return None, error
        if last is not None:
            break
    else:
        assert stop is None, f"{notebook}: no line starts with {stop!r}"
    printed, error = kernel.run("print(__import__('json').dumps(params.as_dict()))")
    assert error is None, error
    return json.loads(printed), None


def staged_parameters(folder) -> dict:
    """The params.yaml a pass wrote into its figures folder's stage."""
    [path] = (folder / "figures_dir").glob(".unpublished-*/params.yaml")
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_run_all_twice_in_one_kernel_takes_the_parameters_cell_as_it_is_now(notebook, kernel, tmp_path):
    status = git_status()
    kernel.fresh()
    cells, index = code_cells(notebook)
    committed = cells[index]
    name, value = EDITS[notebook]
    default = CONFIGS[notebook].defaults()[name]
    assert value != default

    first, error = run_all(kernel, notebook, committed, tmp_path / "pass1", STOPS[notebook])
    assert error is None, error
    assert first[name] == default and first["figures_dir"] == str(tmp_path / "pass1" / "figures_dir")

    second, error = run_all(kernel, notebook, edited(committed, name, value), tmp_path / "pass2", STOPS[notebook])
    assert error is None, error
    assert second[name] == value  # the edited cell's value, not the first pass's
    assert second["figures_dir"] == str(tmp_path / "pass2" / "figures_dir")  # papermill's cell's, this pass
    assert {k: v for k, v in second.items() if k not in (name, "figures_dir", "results_dir", "runs_dir")} == {
        k: v for k, v in first.items() if k not in (name, "figures_dir", "results_dir", "runs_dir")
    }
    if notebook in STAGED:  # and what the cells after it wrote
        assert staged_parameters(tmp_path / "pass1")[name] == default
        assert staged_parameters(tmp_path / "pass2")[name] == value

    third, error = run_all(kernel, notebook, edited(committed, name, delete=True), tmp_path / "pass3", STOPS[notebook])
    if notebook in DELETED_DEFAULTS:
        assert error is None and third[name] == DELETED_DEFAULTS[notebook] == default
    else:
        assert third is None and error == f'KeyError: "missing parameter(s) [{name!r}] for notebook {notebook}"'

    again, error = run_all(kernel, notebook, committed, tmp_path / "pass4", STOPS[notebook])  # the cell restored
    assert error is None and again == {**first, **{k: v for k, v in again.items() if k.endswith("_dir")}}
    assert git_status() == status


@pytest.mark.slow  # notebook 02 whole, twice, at small values: it trains (14 s on 2 shared cores; 8 runs)
def test_notebook_02_run_whole_twice_in_one_kernel_trains_the_second_passs_seed(kernel, tmp_path):
    status = git_status()
    kernel.fresh()
    cells, index = code_cells("02_synthetic")
    small = cells[index] + "\n" + SMALL
    first, error = run_all(kernel, "02_synthetic", small, tmp_path / "pass1", None)
    assert error is None and first["seed"] == 0
    second, error = run_all(kernel, "02_synthetic", edited(small, "seed", 1), tmp_path / "pass2", None)
    assert error is None and second["seed"] == 1
    run = json.loads((tmp_path / "pass2" / "results_dir" / "linear_single_amer_seed1.json").read_text())
    assert run["params"]["seed"] == 1 and run["params"]["steps"] == 4  # trained with the second pass's cell
    published = yaml.safe_load((tmp_path / "pass2" / "figures_dir" / "params.yaml").read_text())
    assert published["seed"] == 1
    assert not (tmp_path / "pass2" / "results_dir" / "linear_single_amer_seed0.json").exists()
    assert git_status() == status


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_no_cell_above_the_parameters_cell_defines_a_parameter_name(notebook):
    """`snapshot` removes every notebook's parameter names from the kernel's namespace at the
    imports cell (so that a second pass sees the parameters cell's names afresh): no cell above the
    parameters cell defines one, which it would remove."""
    cells, index = code_cells(notebook)
    defined = set()
    for source in cells[:index]:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                defined |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
    assert defined and not defined & parameter_names()
    assert "notebook_params.snapshot(globals())" in cells[index - 1]
