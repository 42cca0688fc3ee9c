"""How far one training run moves across CPU instruction sets: notebook 04's AMER on wordnet_senses
(seed 0, its offline defaults: 300 steps on one thread; single-query trains beside it, as the
notebook requires), trained three times on this machine with
torch's kernels held to AVX-512, AVX2 and no vector extension (`ATEN_CPU_CAPABILITY`, with oneDNN
and MKL held to the same set), each in a process of its own. The thread count is fixed
(`threads`), so what differs is only the kernels' instruction set, as between two machines.

    python studies/instruction_sets/instruction_sets.py --out studies/instruction_sets/instruction_sets
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATASET = "wordnet_senses"
SETS = {  # the name torch reports -> the environment that holds every library to it
    "AVX512": {"ATEN_CPU_CAPABILITY": "avx512"},
    "AVX2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "DEFAULT": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}


def params(isa: str | None = None):
    from amer_lib.params import from_files

    defaults = from_files("04_real_data.ipynb").replace(datasets=[DATASET], seeds=[0], baselines=[])
    if isa is None:
        return defaults
    return defaults.replace(results_dir=f"../results/study/isa_{isa}", runs_dir=f"../runs/study/isa_{isa}")


def train(isa: str) -> dict:
    """One run in this process (its instruction set set by the parent's environment)."""
    import torch

    from amer_lib.experiments.real_data import run_all

    [run] = [r for r in run_all(params(isa), progress=False) if r["system"] == "amer"]
    return {
        "reported_isa": torch.backends.cpu.get_cpu_capability(),
        "val_loss": [h["val_loss"] for h in run["history"]],
        "best_step": run["best_step"],
        "mrecall@100": 100 * sum(run["mrecall"]) / len(run["mrecall"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="output path without suffix (.json and .md)")
    parser.add_argument("--isa", choices=tuple(SETS), help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    out = args.out.resolve() if args.out else None  # before the change of folder below
    os.chdir(ROOT / "notebooks")  # the notebooks' relative paths
    if args.isa:
        print(json.dumps(train(args.isa)))
        return
    from amer_lib.experiments.real_data import ready_benchmark
    from amer_lib.io import write_json, write_text
    from amer_lib.params import from_files

    ready_benchmark(params(), from_files("03_real_data_prep.ipynb"))
    runs = {}
    for isa, environment in SETS.items():
        command = [sys.executable, str(Path(__file__).resolve()), "--isa", isa]
        done = subprocess.run(command, env={**os.environ, **environment}, capture_output=True, text=True, check=True)
        runs[isa] = json.loads(done.stdout.strip().splitlines()[-1])
        print(isa, runs[isa], flush=True)
    write_json(out.with_suffix(".json"), runs)
    write_text(out.with_suffix(".md"), report(runs))


def report(runs: dict) -> str:
    reference = runs["AVX512"]
    lines = [
        f"# One run across CPU instruction sets ({DATASET}, AMER, seed 0, notebook 04's defaults)",
        "",
        "Written by `studies/instruction_sets/instruction_sets.py`: the same run trained three times on one machine,",
        "torch's, oneDNN's and MKL's kernels held to each instruction set (one thread each).",
        "",
        "| kernels | torch reports | validation losses | most from AVX-512 | best step | MRecall@100 (%) |",
        "|---|---|---|---|---|---|",
    ]
    for isa, run in runs.items():
        difference = max(abs(a - b) for a, b in zip(run["val_loss"], reference["val_loss"]))
        losses = " / ".join(f"{v:.4f}" for v in run["val_loss"])
        lines.append(
            f"| {isa} | {run['reported_isa']} | {losses} | {difference:.2e} | {run['best_step']} | "
            f"{run['mrecall@100']:.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
