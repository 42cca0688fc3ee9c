"""What papermill reads of each notebook's `parameters` cell: every line parsed (no "Unable to
parse"), every name the cell assigns inferred with its default, every parameter with its help in
`papermill --help-notebook`, and no README or docs command passing a name papermill would call
unknown. Papermill's own inference runs here (`papermill.inspection`, the code `--help-notebook`
and its "Passed unknown parameter" check use); the cell's names and values come from `ast`."""

import ast
import logging
import re
import shlex

import nbformat
import papermill.cli
import pytest
import yaml
from click.testing import CliRunner
from conftest import ROOT, documentation
from papermill.inspection import _infer_parameters
from papermill.iorw import load_notebook_node
from test_readme_commands import readme_commands

from amer_lib.params import CONFIGS, STUDY_LEVERS, _assignment, _study_levers_help


def _cell(notebook: str) -> str:
    document = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return next(c for c in document.cells if "parameters" in c.metadata.get("tags", [])).source


def _inferred(notebook: str, caplog) -> dict:
    """Papermill's parameters of the notebook, and no warning from its parser."""
    document = load_notebook_node(str(ROOT / "notebooks" / f"{notebook}.ipynb"))  # as papermill reads it
    with caplog.at_level(logging.WARNING, logger="papermill"):
        parameters = _infer_parameters(document)
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("papermill")]
    assert not warnings, f"{notebook}: papermill's parser warned {warnings}"
    return {p.name: p for p in parameters}


def _assigned(source: str) -> dict:
    """The cell's assignments, name to value, read by Python's parser."""
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
    }


def _helps(notebook: str) -> dict[str, str]:
    """Each parameter's help as its config declares it."""
    config = CONFIGS[notebook]
    helps = {name: f.metadata.get("help", "") for name, f in config.__dataclass_fields__.items()}
    return {**helps, STUDY_LEVERS: _study_levers_help(notebook) if config.study_lever_names() else ""}


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_papermill_parses_every_line_and_infers_every_name_of_the_parameters_cell(notebook, caplog):
    inferred = _inferred(notebook, caplog)
    assigned = _assigned(_cell(notebook))
    assert list(inferred) == list(assigned)  # every name, in the cell's order
    assert {name: ast.literal_eval(p.default) for name, p in inferred.items()} == assigned


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_help_notebook_lists_every_parameter_with_its_help(notebook, caplog):
    """The help papermill shows is the start of the config's help, the rest on the comment lines
    below; `--help-notebook` prints it under or beside each parameter."""
    inferred = _inferred(notebook, caplog)
    helps = _helps(notebook)
    for name, parameter in inferred.items():
        assert parameter.help and helps[name].startswith(parameter.help), name
    lines = _cell(notebook).splitlines()
    for name in inferred:  # the comment lines after the parameter's last line finish its help
        start = next(i for i, line in enumerate(lines) if line.startswith(f"{name} = "))
        end = next(i for i in range(start, len(lines)) if "  # " in lines[i])
        rest = [line[len("#   ") :] for line in lines[end + 1 :]]
        rest = rest[: next((i for i, line in enumerate(lines[end + 1 :]) if not line.startswith("#   ")), len(rest))]
        assert " ".join([inferred[name].help, *rest]) == helps[name], name

    printed = CliRunner().invoke(papermill.cli.papermill, ["--help-notebook", f"notebooks/{notebook}.ipynb"])
    listing = printed.output.split("Parameters inferred for notebook")[1].splitlines()[1:]
    shown = {}
    for i, line in enumerate(listing):
        match = re.match(r"  (\w+): .*\(default .*\)(.*)$", line)
        if match:  # the help beside a short definition, else on the line below
            shown[match[1]] = match[2].strip() or listing[i + 1].strip()
    assert shown == {name: p.help for name, p in inferred.items()}


def test_a_help_papermill_cannot_read_is_refused_when_the_cell_is_written():
    with pytest.raises(ValueError, match=r"parameter 'x': its help 'p = 1' must be given and hold no '='"):
        _assignment("x", 1, "p = 1")
    with pytest.raises(ValueError, match=r"parameter 'x': its help '' must be given"):
        _assignment("x", 1, "")
    long = " ".join(["word"] * 40)  # 199 characters: beside the line, then one comment line below
    assert _assignment("x", [1, 2], long) == [
        f"x = [1, 2]  # {' '.join(['word'] * 21)}",
        "#   " + " ".join(["word"] * 19),
    ]


def papermill_commands() -> list[str]:
    """Every papermill command the README and docs show, in a code block or inline."""
    text = documentation()
    lines = [line for block in re.findall(r"```\w*\n(.*?)```", text, re.S) for line in block.splitlines()]
    inline = re.findall(r"`(papermill [^`]+)`", text)
    return list(dict.fromkeys(" ".join(c.split()) for c in lines + inline if c.strip().startswith("papermill ")))


def test_readme_commands_pass_only_names_papermill_infers(monkeypatch, caplog):
    """Papermill warns "Passed unknown parameter" for a `-p` or `-f` name its parser did not infer
    (the value still applies): no command of the README or docs would, run through papermill's
    own command line up to the execution."""
    commands = [c for c in papermill_commands() if " -p " in c or " -f " in c]
    assert len(commands) >= 19 and set(readme_commands()) & set(commands), commands
    passed = []
    monkeypatch.setattr(papermill.cli, "execute_notebook", lambda **kwargs: passed.append(kwargs))
    monkeypatch.chdir(ROOT)
    for command in commands:
        result = CliRunner().invoke(papermill.cli.papermill, shlex.split(command, comments=True)[1:])
        assert result.exit_code == 0, (command, result.output)
        run = passed.pop()
        names = set(run["parameters"]) - {"PAPERMILL_INPUT_PATH", "PAPERMILL_OUTPUT_PATH"}
        notebook = load_notebook_node(run["input_path"])
        with caplog.at_level(logging.WARNING, logger="papermill"):
            unknown = names - {p.name for p in _infer_parameters(notebook)}
        assert names and not unknown, f"{command}: papermill would warn 'Passed unknown parameter' for {unknown}"
    assert not [r for r in caplog.records if "Unable to parse" in r.getMessage()]


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_every_parameter_file_holds_only_names_papermill_infers(notebook, caplog):
    """The files of params/ are what `-f` passes."""
    inferred = set(_inferred(notebook, caplog))
    files = sorted((ROOT / "params" / notebook).glob("*.yaml"))
    for path in files:
        unknown = set(yaml.safe_load(path.read_text()) or {}) - inferred
        assert not unknown, f"{path.relative_to(ROOT)}: papermill would warn 'Passed unknown parameter' for {unknown}"
