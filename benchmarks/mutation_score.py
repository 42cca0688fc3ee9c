"""Mutation score of the core modules: mutmut (from PyPI, not a dependency of amer_lib) mutates one
module at a time in a copy of the committed tree and runs the module's own unit tests (`TESTS`)
that call each mutated function (mutmut's per-function test map). Writes the counts per module and every surviving
mutant with its changed lines to a JSON file; `studies/mutation_score/mutation_score.md` reads the survivors.

    pip install mutmut==3.8.1
    python benchmarks/mutation_score.py --out benchmarks/mutation_score.json [--modules metrics merge]

A mutant "survives" when every test that runs the mutated function passes; "no tests" counts
functions no selected test runs. The score is killed / (killed + survived), as mutmut reports it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# each module's own unit tests (a mutant runs those of them that call the mutated function)
TESTS = {
    "loss": ["tests/core/test_loss.py", "tests/core/test_stopping.py"],
    "metrics": ["tests/core/test_metrics.py", "tests/core/test_properties.py"],
    "merge": ["tests/core/test_merge.py", "tests/core/test_properties.py"],
    # micro-batches, gradient accumulation and autocast are tested beside the precision path
    "train": [
        "tests/core/test_train.py",
        "tests/runs/test_train_config.py",
        "tests/core/test_precision_and_memory.py",
        "tests/core/test_stopping.py",  # fit_stop_head
    ],
    # the prefix-LM (MiniLM) and bfloat16 paths are tested beside the precision path
    "model": ["tests/core/test_model.py", "tests/core/test_stopping.py", "tests/core/test_precision_and_memory.py"],
}
MODULES = tuple(TESTS)


def committed_tree(destination: Path, commit: str) -> None:
    """The repository at `commit` (tracked files only) under `destination`."""
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    destination.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(destination)], input=archive, check=True)


def configure(tree: Path, module: str) -> None:
    config = {
        "source_paths": [f"amer_lib/core/{module}.py"],
        "also_copy": [
            "amer_lib",
            "tests",
            "benchmarks",
            "params",
            "notebooks",
            "docs",
            "studies",
            "figures",
            "README.md",
            "Makefile",
        ],
        "pytest_add_cli_args_test_selection": TESTS[module],
        "pytest_add_cli_args": ["-m", "not slow", "-p", "no:cacheprovider"],
    }
    lines = ["", "[tool.mutmut]"] + [f"{key} = {json.dumps(value)}" for key, value in config.items()]
    with open(tree / "pyproject.toml", "a") as out:
        out.write("\n".join(lines) + "\n")


def mutmut(tree: Path, *args: str) -> str:
    command = [str(Path(sys.executable).parent / "mutmut"), *args]
    # one thread: mutmut limits each mutant's CPU seconds, and idle OpenMP threads spinning on a
    # busy machine would spend them (the loss module's first run timed out 106 of 158 mutants so)
    environment = {**os.environ, "NO_COLOR": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed in {tree}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def changed_lines(diff: str) -> list[str]:
    """The removed and added lines of `mutmut show`'s diff of one mutant (file headers left out)."""
    return [line for line in diff.splitlines() if line[:1] in "-+" and line[:3] not in ("---", "+++")]


def score(module: str, commit: str) -> dict:
    """One module's counts and surviving mutants, from a fresh copy of `commit`."""
    with tempfile.TemporaryDirectory(prefix=f"mutation-{module}-") as scratch:
        tree = Path(scratch) / "tree"
        shared = ROOT.parent / "shared"
        committed_tree(tree, commit)
        if shared.exists():
            os.symlink(shared, Path(scratch) / "shared")
        configure(tree, module)
        began = time.time()
        mutmut(tree, "run")
        mutmut(tree, "export-cicd-stats")
        stats = json.loads((tree / "mutants" / "mutmut-cicd-stats.json").read_text())
        listing = mutmut(tree, "results")
        survivors = [line.split(":")[0].strip() for line in listing.splitlines() if line.strip().endswith("survived")]
        changes = {name: changed_lines(mutmut(tree, "show", name)) for name in survivors}
        killed, survived = stats["killed"], stats["survived"]
        return {
            "killed": killed,
            "survived": survived,
            "no_tests": stats["no_tests"],
            "timeout": stats["timeout"],
            "total": stats["total"],
            "score": round(killed / (killed + survived), 4) if killed + survived else None,
            "seconds": round(time.time() - began, 1),
            "survivors": changes,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write (updated per module)")
    parser.add_argument("--modules", nargs="+", choices=MODULES, default=list(MODULES))
    args = parser.parse_args()
    # stopped with SIGTERM: unwind, so the scratch trees are removed and mutmut is killed with its run
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    if shutil.which("git") is None:
        sys.exit("git is needed (the committed tree is what is mutated)")
    from amer_lib.io import write_json

    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    for module in args.modules:
        # the commit mutated, read when the module starts (the checkout may move on during a long run)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        results[module] = {"commit": commit, **score(module, commit)}
        row = results[module]
        print(
            f"{module}: {row['killed']} killed, {row['survived']} survived, {row['no_tests']} without tests, "
            f"score {row['score']} ({row['seconds']:.0f} s)",
            flush=True,
        )
        write_json(args.out, results)


if __name__ == "__main__":
    main()
