"""Issue 70: how much the compound benchmark's validation split shares with its test split, and what
that sharing changed in the runs that read validation.

The prepared benchmark keeps validation and test components apart by word, but a WordNet gloss
belongs to every word of its synset, so a validation component can share a gold document with a
test component whose word differs ("car" and "automobile"). This script counts, per k, the
validation components that share a gold document with any test compound and the validation
compounds made with one, and reads each run's kept step in the runs that select a checkpoint on
validation: a run that kept its last step chose nothing on validation, so the overlap changed none
of its numbers. From the repository root, with the prepared benchmark and the runs in `results/`:

    .venv/bin/python studies/validation_overlap/validation_overlap.py

It writes `studies/validation_overlap/validation_overlap.json`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from amer_lib.beyond import compound  # noqa: E402
from amer_lib.data.benchmark import Benchmark  # noqa: E402
from amer_lib.io import write_json  # noqa: E402

HERE = Path(__file__).resolve().parent
PREPARED = ROOT / "results" / "prepared" / "compound"
RUNS = {  # the runs read after the validation overlap was found, each keeping the checkpoint validation chose
    "fair_control": ROOT / "results" / "04_compound_fair_control",
    "component_count": ROOT / "results" / "04_compound_component_count",
}


def overlap(benchmark: Benchmark) -> dict:
    """Per dataset: validation compounds and components, the components sharing a gold document with
    any dataset's test compounds, and the validation compounds holding one; then the distinct
    validation components across the datasets and how many of them share."""
    by_qid = compound.component_questions()
    test = compound.gold_documents([q for d in benchmark.datasets for q in benchmark.questions(d, "test")])
    shares = lambda qid: bool(compound.gold_documents([by_qid[qid]]) & test)  # noqa: E731
    found, every = {}, set()
    for dataset in benchmark.datasets:
        validation = benchmark.questions(dataset, "validation")
        components = {qid for q in validation for qid in compound.components_of(q)}
        shared = {qid for qid in components if shares(qid)}
        every |= components
        found[dataset] = {
            "validation_compounds": len(validation),
            "validation_components": len(components),
            "sharing_components": len(shared),
            "compounds_with_one": sum(bool(set(compound.components_of(q)) & shared) for q in validation),
        }
    found["all"] = {"validation_components": len(every), "sharing_components": sum(map(shares, every))}
    return found


def kept_steps(folder: Path) -> dict:
    """Per trained run in `folder` (its results files): the kept step and the last step validated."""
    runs = {}
    for path in sorted(folder.glob("*_seed*.json")):
        result = json.loads(path.read_text())
        if result.get("history"):
            runs[path.stem] = {"kept": result["best_step"], "last": result["history"][-1]["step"]}
    return runs


def main() -> None:
    runs = {name: kept_steps(folder) for name, folder in RUNS.items() if folder.exists()}
    result = {
        "overlap": overlap(Benchmark(PREPARED)),
        "runs": {
            name: {"trained": len(r), "kept_the_last_step": sum(v["kept"] == v["last"] for v in r.values())}
            for name, r in runs.items()
        },  # fmt: skip
        "kept_steps": runs,
    }
    write_json(HERE / "validation_overlap.json", result)
    print(json.dumps({k: result[k] for k in ("overlap", "runs")}, indent=1))


if __name__ == "__main__":
    main()
