"""The times a newcomer reads before a long command: the README's, docs/usage.md's, the Makefile's
help and each notebook's cost line (the first line of its parameters cell) quote
benchmarks/times.json, and each entry there is the measurement in the file it names."""

import json
import re
from pathlib import Path

import pytest

from amer_lib.params import CONFIGS

ROOT = Path(__file__).resolve().parent.parent
STEPS = json.loads((ROOT / "benchmarks" / "times.json").read_text())["steps"]
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
# a time as the documents write one: 17 s, 4 min, 3.0 h, 7 minutes, five and a half hours
TIME = re.compile(r"\b\d+(?:\.\d+)? ?(?:s|min|minutes|h|hours)\b|\b(?:a|one|two|three|four|five|six)\b[\w ]* hours?\b")


def minutes(step: str, key: str = "seconds") -> str:
    return f"{round(STEPS[step][key] / 60)} min"


def hours(step: str) -> str:
    return f"{STEPS[step]['seconds'] / 3600:.1f} h"


def cores(step: str) -> str:
    return "shared cores" if STEPS[step]["shared"] else "idle cores"


def one_line(text: str) -> str:
    return " ".join(text.split())


# ----- each entry is its source's measurement -----------------------------------------------------


def test_each_provenance_entry_is_its_notebooks_wall_time():
    for step, entry in STEPS.items():
        if not entry["source"].startswith("figures/") or "*" in entry["source"]:
            continue
        provenance = json.loads((ROOT / entry["source"]).read_text())
        assert entry["seconds"] == provenance["wall_seconds"], step
        assert provenance["commit"].startswith(entry["commit"]) and provenance["cpu_count"] == entry["cores"], step
        assert entry["machine"].startswith(provenance["cpu"]), step


def test_make_figures_is_its_notebooks_summed():
    entry = STEPS["make figures"]
    assert entry["seconds"] == pytest.approx(sum(STEPS[part]["seconds"] for part in entry["parts"]))
    notebooks = [f"notebook {name[:2]}" for name in MAKEFILE.split("NOTEBOOKS ?= ")[1].split("\n")[0].split()]
    assert entry["parts"] == notebooks  # every notebook the target runs, in its order


def test_make_figures_compound_is_the_makefiles_sittings_summed():
    """Both recipes' sittings are their folders' own wall times (provenance.json, at the entry's
    commit), as the Makefile's help sums them."""
    entry = STEPS["make figures-compound"]
    parts = entry["parts_seconds"]
    assert entry["seconds"] == sum(parts.values())
    comment = one_line(MAKEFILE[MAKEFILE.index("# the compound benchmark") : MAKEFILE.index("COMPOUND_NOTEBOOKS ?=")])
    first = ("03_real_data_prep", "01_failure_analysis", "04_real_data", "06_diversity_analysis", "07_beyond")
    distilled = ("04_real_data", "06_diversity_analysis", "07_beyond")
    folders = {nb[:2]: f"{nb}_compound" for nb in first} | {
        f"{nb[:2]} distilled": f"{nb}_compound_distilled" for nb in distilled
    }
    assert set(parts) == set(folders)
    for part, folder in folders.items():
        made = json.loads((ROOT / "figures" / folder / "provenance.json").read_text())
        assert made["commit"].startswith(entry["commit"]), folder
        assert parts[part] == round(made["wall_seconds"]), folder
    seconds = [parts[nb[:2]] for nb in first]
    seconds_distilled = [parts[f"{nb[:2]} distilled"] for nb in distilled]
    assert "03 {} s + 01 {} s + 04 {} s + 06 {} s + 07 {} s".format(*seconds) in comment
    assert f"= {sum(seconds) / 3600:.1f} h (AMD EPYC, {entry['commit']}" in comment
    assert "then the distilled 04 {} s + 06 {} s + 07 {} s".format(*seconds_distilled) in comment
    assert (
        f"= {sum(seconds_distilled) / 3600:.1f} h" in comment
        and f"{sum(parts.values()) / 3600:.1f} h in all" in comment
    )
    recipe = (ROOT / "params" / "04_real_data" / "compound.yaml").read_text()
    assert f"provenance.json: {round(parts['04'] / 60)} minutes for 3)" in recipe
    assert f"About {round(parts['04'] / 60 / 3)} minutes per seed on 2 cores" in recipe


def test_the_make_test_and_ci_entries_are_benchmarks_make_test():
    """Each entry is the sentence of benchmarks/make_test.md that starts at its commit: its pytest
    time, its counts (as the entry's `what` says them) and its time in all."""
    record = one_line((ROOT / "benchmarks" / "make_test.md").read_text())

    def clock(seconds):
        return f"{seconds // 60} min {seconds % 60} s"

    for step, command in (("make test", "`make test`"), ("CI", "`.ci/run`")):
        entry = STEPS[step]
        counts = re.search(r"\d+ passed(?:, \d+ skipped)?", entry["what"]).group(0)
        records = re.split(r"(?=At [0-9a-f]{7} \()", record)  # one measurement each
        sentences = [r for r in records if r.startswith(f"At {entry['commit']} (") and command in r[:200]]
        assert len(sentences) == 1, (step, entry["commit"])
        (sentence,) = sentences
        assert ("not alone" in sentence) == entry["shared"] and "alone" in sentence, step
        assert f"pytest {clock(entry['pytest_seconds'])} ({counts}), {clock(entry['seconds'])} in all" in sentence


def test_the_install_and_check_figures_entries_are_benchmarks_check_figures():
    rows = [line.split("|") for line in (ROOT / "benchmarks" / "check_figures.md").read_text().splitlines()]
    row = next(r for r in rows if len(r) > 3 and r[1].strip() == STEPS["make check-figures"]["commit"])
    install = STEPS["make install"]
    assert f"{install['seconds']} s" == row[2].strip() and install["commit"] == row[1].strip()
    assert f"{STEPS['make check-figures']['seconds']} s" == row[3].strip()
    assert row[5].strip().startswith("shared") and STEPS["make install"]["shared"]


def test_the_own_data_entries_are_benchmarks_own_data_commands():
    record = (ROOT / "benchmarks" / "own_data_commands.md").read_text()
    assert f"in a fresh clone at\n{STEPS['own data: notebook 03']['commit']}" in record
    for notebook in ("03", "04"):
        seconds = STEPS[f"own data: notebook {notebook}"]["seconds"]
        assert re.search(rf"\| `papermill --log-output notebooks/{notebook}_\w+\.ipynb .*\| {seconds} \| 0 \|", record)


def test_the_rehearsal_entry_is_benchmarks_make_test():
    entry = STEPS["rehearsal"]
    record = one_line((ROOT / entry["source"]).read_text())
    at = record.index(f"At {entry['commit']} (issue 38")
    clock = f"{entry['seconds'] // 60} min {entry['seconds'] % 60} s"
    assert f"the rehearsal {clock} (9 passed)" in record[at : at + 1200] and not entry["shared"]


def test_the_readmes_rehearsal_says_its_measured_time():
    entry = STEPS["rehearsal"]
    assert f"**Rehearse first (CPU, {minutes('rehearsal')} at {entry['commit']}):**" in README


def test_the_first_use_entry_is_benchmarks_notebook_first_use():
    entry = STEPS["notebook 01 first use"]
    record = (ROOT / entry["source"]).read_text()
    assert f"| notebook 01, first use (papermill's command, kernel start included) | {entry['seconds']} | 0 |" in record
    assert f"at {entry['commit']}" in one_line(record) and "**not alone**" in record and entry["shared"]


# ----- each quoted time is its entry's -------------------------------------------------------------


def test_the_readmes_install_commands_say_their_measured_times():
    block = README[README.index("## Start here") :].split("```")[1]
    expected = {
        "make test": f"({minutes('make test')}, {cores('make test')}",
        "make figures": f"({hours('make figures')}, {cores('make figures')})",
        "make install": f"({minutes('make install')}, {cores('make install')})",
        "make check-figures": f"({minutes('make check-figures')}, {cores('make check-figures')})",
    }
    lines = [line for line in block.splitlines() if line.startswith("make ")]
    assert {line.split("#")[0].strip() for line in lines} == set(expected)
    for line in lines:
        assert expected[line.split("#")[0].strip()] in line, line
    assert "`benchmarks/times.json`" in README


def test_the_makefiles_help_says_the_measured_times():
    lines = MAKEFILE.splitlines()
    help_ = one_line("\n".join(lines[: next(i for i, line in enumerate(lines) if not line.startswith("#"))]))
    for target, quoted in {
        "make test": f"({minutes('make test')}, {cores('make test')}; "
        f"with the slow tests, as CI: {minutes('CI')}, {cores('CI')})",
        "make figures": f"({hours('make figures')}, {cores('make figures')})",
        "make install": f"; {minutes('make install')}, {cores('make install')})",
        "make figures-mlp-sweep": f"{minutes('make figures-mlp-sweep')}, {cores('make figures-mlp-sweep')})",
        "make figures-compound": f"{hours('make figures-compound')} more, {cores('make figures-compound')})",
        "make check-figures": f"({minutes('make check-figures')}, {cores('make check-figures')})",
    }.items():
        assert f"# {target} " in MAKEFILE and quoted in help_, target
    assert "benchmarks/times.json" in help_
    assert TIME.findall(help_) == [
        minutes("make test"),
        minutes("CI"),
        hours("make figures"),
        minutes("make install"),
        minutes("make figures-mlp-sweep"),
        hours("make figures-compound"),
        minutes("make check-figures"),
    ]  # no time in the help that is not one of these


# the times each notebook's cost line quotes, in order
COST_LINES = {
    "01_failure_analysis": [f"{round(STEPS['notebook 01']['seconds'])} s", minutes("notebook 01 first use")],
    "02_synthetic": [minutes("notebook 02")],
    "03_real_data_prep": [minutes("notebook 03")],
    "04_real_data": [minutes("notebook 04")],
    "05_ablations": [minutes("notebook 05")],
    "06_diversity_analysis": [minutes("notebook 06")],
    "07_beyond": [minutes("notebook 07")],
}


@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_each_notebooks_cost_line_quotes_its_measured_time(notebook):
    """Every time in the cost line is an entry's, rounded as written, and the line says where it was
    measured; notebook 01 says its first use (preparing and encoding the corpus) beside a rerun's."""
    header = CONFIGS[notebook].CELL_HEADER
    step = f"notebook {notebook[:2]}"
    assert TIME.findall(header) == COST_LINES[notebook], header
    assert f"Offline CPU default: {COST_LINES[notebook][0]} on 2 {cores(step)}" in header
    assert "(make figures; benchmarks/times.json)" in header  # the entry names its commit; the notebook none
    if notebook == "01_failure_analysis":
        first = "notebook 01 first use"
        assert f"first use, preparing and encoding the corpus: {minutes(first)} on 2 {cores(first)}" in header
        assert re.search(r"\b[0-9a-f]{7}\b", header) is None


def test_the_notebooks_markdown_quotes_no_unmeasured_time():
    """Times in the notebooks' markdown cells are the measured ones the tests above or
    tests/test_readme_numbers.py check (notebook 02's MLP sweep: its provenance's minutes)."""
    allowed = {"02_synthetic": [f"{round(STEPS['make figures-mlp-sweep']['seconds'] / 60)} minutes"]}
    for notebook in CONFIGS:
        cells = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text())["cells"]
        text = one_line(" ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"))
        assert TIME.findall(text) == allowed.get(notebook, []), notebook


def test_the_start_here_quotes_the_measured_times():
    begin = README.index("## Start here")
    start = one_line(README[begin : README.index("\n## ", begin)])
    assert f"`make install` ({minutes('make install')})" in start
    assert f"{minutes('notebook 01 first use')} on first use on {cores('notebook 01 first use')}" in start
    assert f"{round(STEPS['notebook 01']['seconds'])} s after)" in start
    own = (STEPS["own data: notebook 03"]["seconds"], STEPS["own data: notebook 04"]["seconds"])
    assert f"({round(own[0])} s and {round(own[1] / 60)} min, idle cores)" in start
    assert "`benchmarks/times.json`" in start
