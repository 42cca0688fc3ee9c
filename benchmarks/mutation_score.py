"""Mutation score of the core modules: mutmut (from PyPI, not a dependency of amer_lib) mutates one
module at a time in a copy of the committed tree and runs the module's own unit tests (`TESTS`)
that call each mutated function (mutmut's per-function test map). Writes the counts per module and every surviving
mutant with its changed lines to a JSON file; `studies/mutation_score/mutation_score.md` reads the survivors.

    pip install mutmut==3.8.1
    python benchmarks/mutation_score.py --out benchmarks/mutation_score.json [--modules metrics merge]

A mutant "survives" when every test that runs the mutated function passes; "no tests" counts
functions no selected test runs. The score is killed / (killed + survived), as mutmut reports it.

`--config-reads` measures another thing, without mutmut: whether each training setting bites. Each
read of a `TrainConfig` field in `amer_lib/core/train.py` (`config.<field>`, and `self.<field>` in
`TrainConfig`'s own methods) is replaced in turn by a neutral value (the field's default; for a
field without one, the smallest valid value) in a copy of the working tree (tracked and untracked
files git does not ignore: the tests may be new), and the given tests run against it (stopping at
the first failure). A read replaced by the value it already has in every run of the tests is a
mutant no test could kill; the JSON lists each survivor with its line.

    python benchmarks/mutation_score.py --config-reads --out benchmarks/mutation_config_reads.json \
        [--tests tests/core/test_knobs.py]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
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


# ----- config reads: each read of a training setting replaced by a neutral value ----------------------
TRAIN_MODULE = "amer_lib/core/train.py"
CONFIG_READ_TESTS = ["tests/core/test_knobs.py"]
# a neutral value for the fields without a default: the smallest valid one
NEUTRAL_REQUIRED = {"n_outputs": 1, "steps": 1, "batch_size": 1}


def neutral_values() -> dict:
    """Each `TrainConfig` field's neutral value: its default, or `NEUTRAL_REQUIRED`'s; a group of
    settings' fields (`SETTING_GROUPS`) each under "group.field", at the group's default."""
    from amer_lib.core import train

    TrainConfig = train.TrainConfig
    values = {}
    for name in getattr(train, "SETTING_GROUPS", {}):
        group = getattr(TrainConfig, name)
        values.update({f"{name}.{field.name}": getattr(group, field.name) for field in dataclasses.fields(group)})
    for field in dataclasses.fields(TrainConfig):
        if field.default is not dataclasses.MISSING:
            values[field.name] = field.default
        elif field.name in NEUTRAL_REQUIRED:
            values[field.name] = NEUTRAL_REQUIRED[field.name]
        else:
            raise ValueError(f"TrainConfig.{field.name} has no default: give it a neutral value in NEUTRAL_REQUIRED")
    return values


def config_read_mutants(source: str, neutral: dict) -> list[dict]:
    """Every read of a setting in `source` (train.py's text): `config.<field>` (or
    `config.<group>.<field>`) anywhere and `self.<field>` in `TrainConfig`'s methods, with its line,
    function and the text replacing it."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    mutants = []

    def visit(node: ast.AST, function: str, in_config: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name, in_config)
                continue
            if isinstance(child, ast.ClassDef):
                visit(child, function, child.name == "TrainConfig")
                continue
            owner, key = getattr(child, "value", None), getattr(child, "attr", None)
            if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name):
                owner, key = owner.value, f"{owner.attr}.{key}"  # a group's field: config.<group>.<field>
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.ctx, ast.Load)
                and isinstance(owner, ast.Name)
                and (owner.id == "config" or (owner.id == "self" and in_config))
                and key in neutral
                and child.lineno == child.end_lineno
            ):
                text = lines[child.lineno - 1][child.col_offset : child.end_col_offset]
                if text == f"{owner.id}.{key}":  # positions inside an f-string may be off before 3.12
                    mutants.append(
                        dict(
                            line=child.lineno,
                            column=child.col_offset,
                            end_column=child.end_col_offset,
                            function=function,
                            field=key,
                            replacement=repr(neutral[key]),
                        )
                    )
                    if "." in key:
                        continue  # its group's read inside it is this mutant's
            visit(child, function, in_config)

    visit(tree, "<module>", False)
    return sorted(mutants, key=lambda m: (m["line"], m["column"]))


def mutated(source: str, mutant: dict) -> str:
    lines = source.splitlines(keepends=True)
    line = lines[mutant["line"] - 1]
    lines[mutant["line"] - 1] = line[: mutant["column"]] + mutant["replacement"] + line[mutant["end_column"] :]
    return "".join(lines)


def working_tree(destination: Path) -> None:
    """The checkout's tracked files and its untracked ones git does not ignore, as they are now."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the checkout is left out
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def run_tests(tree: Path, tests: list[str], timeout: float, keyword: str | None = None) -> str:
    """ "passed", "failed" or "timeout": the tests against the tree's code, stopping at the first failure.
    With `keyword`, the tests whose names hold it run first (a mutant of a field is mostly caught by
    the tests named after it: the whole set then runs only for those they do not catch)."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *tests]
    environment = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    for selection in ([["-k", keyword]] if keyword else []) + [[]]:
        try:
            done = subprocess.run(
                command + selection, cwd=tree, capture_output=True, text=True, env=environment, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return "timeout"
        if done.returncode == 1:
            return "failed"
        if done.returncode not in (0, 5):  # 5: no test holds the keyword
            ran = " ".join(command + selection)
            raise RuntimeError(f"{ran} could not run the tests (exit {done.returncode}):\n{done.stdout[-3000:]}")
    return "passed"


def config_reads_score(tests: list[str]) -> dict:
    """The config-read mutants of train.py against `tests`, in a copy of the working tree."""
    neutral = neutral_values()
    source = (ROOT / TRAIN_MODULE).read_text()
    mutants = config_read_mutants(source, neutral)
    with tempfile.TemporaryDirectory(prefix="mutation-config-reads-") as scratch:
        tree = Path(scratch) / "tree"
        working_tree(tree)
        shared = ROOT.parent / "shared"
        if shared.exists():
            os.symlink(shared, Path(scratch) / "shared")
        where = subprocess.run(
            [sys.executable, "-c", "import amer_lib; print(amer_lib.__file__)"],
            cwd=tree,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tree)},
        ).stdout.strip()
        if not where.startswith(str(tree)):
            raise RuntimeError(f"the copy's tests would import amer_lib from {where}, not from {tree}")
        began = time.time()
        if run_tests(tree, tests, timeout=3600) != "passed":
            raise RuntimeError(f"{tests} fail on the unmutated tree: fix them first")
        clean = time.time() - began
        for number, mutant in enumerate(mutants, 1):
            (tree / TRAIN_MODULE).write_text(mutated(source, mutant))
            mutant["status"] = {"failed": "killed", "passed": "survived", "timeout": "timeout"}[
                run_tests(tree, tests, timeout=max(120.0, 5 * clean), keyword=mutant["field"])
            ]
            print(
                f"{number}/{len(mutants)} line {mutant['line']} {mutant['function']}: "
                f"{mutant['field']} -> {mutant['replacement']}: {mutant['status']}",
                flush=True,
            )
        (tree / TRAIN_MODULE).write_text(source)
    count = lambda status: sum(m["status"] == status for m in mutants)
    killed, survived = count("killed"), count("survived")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {
        "commit": commit,
        "tree": "working tree at that commit (tracked and untracked files git does not ignore)",
        "module": TRAIN_MODULE,
        "tests": tests,
        "neutral": {name: repr(value) for name, value in neutral.items()},
        "killed": killed,
        "survived": survived,
        "timeout": count("timeout"),
        "total": len(mutants),
        "score": round(killed / (killed + survived), 4) if killed + survived else None,
        "fields": len({m["field"] for m in mutants}),
        "clean_seconds": round(clean, 1),
        "seconds": round(time.time() - began, 1),
        "mutants": mutants,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write (updated per module)")
    parser.add_argument("--modules", nargs="+", choices=MODULES, default=list(MODULES))
    parser.add_argument(
        "--config-reads",
        action="store_true",
        help=f"instead of mutmut: each read of a TrainConfig field in {TRAIN_MODULE} replaced by a neutral value",
    )
    parser.add_argument(
        "--tests", nargs="+", default=CONFIG_READ_TESTS, help="with --config-reads: the tests run against each mutant"
    )
    args = parser.parse_args()
    # stopped with SIGTERM: unwind, so the scratch trees are removed and mutmut is killed with its run
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    if shutil.which("git") is None:
        sys.exit("git is needed (the committed tree is what is mutated)")
    from amer_lib.io import write_json

    if args.config_reads:
        row = config_reads_score(args.tests)
        print(
            f"config reads of {TRAIN_MODULE}: {row['killed']} killed, {row['survived']} survived, "
            f"{row['timeout']} timeouts of {row['total']}, score {row['score']} ({row['seconds']:.0f} s)",
            flush=True,
        )
        write_json(args.out, row)
        return

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
