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
    from amer_lib.data.benchmark import TRAINING_DRAWS
    from amer_lib.data.preparation import PrepConfig
    from amer_lib.runs.configs import RealConfig

    cells = now_cells()
    core = sorted((ROOT / "amer_lib" / "core").glob("*.py"))
    lines = sum(len(path.read_text().splitlines()) for path in core)
    assert cells["core/"] == f"{lines:,} lines in {len(core)} files"
    assert cells["TrainConfig` fields"].startswith(f"{len(dataclasses.fields(TrainConfig))},")
    real_data = len((ROOT / "amer_lib" / "experiments" / "real_data.py").read_text().splitlines())
    assert cells["experiments/real_data.py"].startswith(f"{real_data:,} lines")
    # the table's grep: a module outside the wing importing one of its compound modules
    pattern = re.compile(r"^\s*(from|import) amer_lib\.beyond(\.compound| import .*compound)", re.M)
    wing = ROOT / "amer_lib" / "beyond"
    outside = sorted(
        str(p.relative_to(ROOT / "amer_lib")) for p in (ROOT / "amer_lib").rglob("*.py")
        if wing not in p.parents and pattern.search(p.read_text())
    )  # fmt: skip
    cell = cells["modules outside the wing importing the compound benchmark"]
    assert cell.startswith(f"{len(outside)}: ") and all(f"`{path}`" in cell for path in outside)
    drawn = [name for draw in TRAINING_DRAWS for name in draw.fields]  # RealConfig's, the compound draws'
    prepared = [f.name for f in dataclasses.fields(PrepConfig) if f.name.startswith("compound_")]
    fields = [name for name in drawn if name in {f.name for f in dataclasses.fields(RealConfig)}] + prepared
    assert f"its {len(fields)} notebook fields" in cell
    called = [p for p in inspect.signature(MatchedLoss.__call__).parameters if p != "self"]
    assert cells["the matched loss's parameters"].startswith(f"{len(called)} ")
