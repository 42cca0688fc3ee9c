"""docs/architecture.md's table of issue 77's targets quotes what the tree holds now: each "now"
cell recomputed (lines and files of core/, TrainConfig's fields, real_data.py's lines, the modules
that name the compound benchmark, the matched loss's parameters)."""

import dataclasses
import inspect
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def now_cells() -> dict[str, str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Issue 77's targets, measured") :].split("\n## ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[0].strip("| `"): cells[-1].rstrip(" |") for cells in rows[1:]}


def test_the_targets_table_quotes_the_tree_as_it_is():
    from amer_lib.core.loss import MatchedLoss
    from amer_lib.core.train import TrainConfig

    cells = now_cells()
    core = sorted((ROOT / "amer_lib" / "core").glob("*.py"))
    lines = sum(len(path.read_text().splitlines()) for path in core)
    assert cells["core/"] == f"{lines:,} lines in {len(core)} files"
    assert cells["TrainConfig` fields"].startswith(f"{len(dataclasses.fields(TrainConfig))},")
    real_data = len((ROOT / "amer_lib" / "experiments" / "real_data.py").read_text().splitlines())
    assert cells["experiments/real_data.py"].startswith(f"{real_data:,} lines")
    # the table's grep: its module imported, or its figure folders named (04_real_data_compound: the dot any character)
    pattern = re.compile(r"data.compound|data import .*compound")
    importing = [p for p in (ROOT / "amer_lib").rglob("*.py") if pattern.search(p.read_text())]
    outside = len([p for p in importing if "beyond" not in p.parts])
    assert cells["modules naming the compound benchmark"] == f"{len(importing)}, {outside} of them outside the wing"
    called = [p for p in inspect.signature(MatchedLoss.__call__).parameters if p != "self"]
    assert cells["the matched loss's parameters"].startswith(f"{len(called)} ")
