"""Issue 70: a study run from a frozen recipe, which reads a test split only once the recipe was
committed before its data existed, so that a lever is chosen on validation by construction.

A recipe is a YAML file (`studies/frozen/README.md` shows one): the notebook, its parameters, the
seeds, the data files, the metric and the decision rule, written and committed before the data.
From the repository root:

    .venv/bin/python studies/frozen/run.py RECIPE.yaml                  # validation: at any time
    .venv/bin/python studies/frozen/run.py RECIPE.yaml --split test     # the test split: once frozen

A validation run is allowed at any time, the recipe committed or not: the notebook runs on a view of
the prepared benchmark whose test split is its validation split (`validation_view`), so the real
test questions are not in any file the notebook opens. A test run is refused, with the problem and
its fix, unless

1. the recipe file is committed and unmodified in the working tree (its commit: the last one that
   changed it), and
2. each data file was made after that commit: a file in git was first committed in a strict
   descendant of the recipe's commit (and is unmodified); a file outside git has a modification time
   after the recipe commit's time. The second is a weak check (a copy or `touch` sets a new time), so
   the result keeps each file's sha256 beside the recipe's commit for anyone to compare later.

Either run writes its result atomically beside the recipe (`RECIPE_validation.json` or
`RECIPE_test.json`): the recipe's path, commit and state, each data file's sha256 and how it was
checked, and the metric's mean per dataset, system and seed as the notebook's run files give it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script from the repository root, as every study is
    sys.path.insert(0, str(ROOT))

from amer_lib.io import write_json  # noqa: E402
from amer_lib.packaged import sha256_of  # noqa: E402

SPLITS = ("validation", "test")
FIELDS = ("notebook", "parameters", "seeds", "data", "metric", "decision")
# the runner decides where a run's outputs go (a validation run's never beside a test run's)
RUNNER_PARAMETERS = ("seeds", "results_dir", "runs_dir", "figures_dir")
NOTEBOOKS = ("04_real_data", "05_ablations", "06_diversity_analysis", "07_beyond")  # those that train on a benchmark
RESULTS = Path("results") / "studies" / "frozen"  # under the repository root, ignored by git


class NotFrozen(Exception):
    """The test split was asked for before the recipe was frozen: the message names why and the fix."""


def load_recipe(path: Path) -> dict:
    """The recipe's fields, each checked: an error names the field and what it may be."""
    if not path.is_file():
        raise FileNotFoundError(f"recipe {path} does not exist")
    recipe = yaml.safe_load(path.read_text())
    if not isinstance(recipe, dict):
        raise ValueError(f"recipe {path} is not a YAML mapping of {', '.join(FIELDS)}")
    missing, unknown = [f for f in FIELDS if f not in recipe], sorted(set(recipe) - set(FIELDS))
    if missing or unknown:
        raise ValueError(f"recipe {path}: missing {missing}, unknown {unknown}; its fields are {', '.join(FIELDS)}")
    if recipe["notebook"] not in NOTEBOOKS:
        raise ValueError(f"recipe {path}: notebook {recipe['notebook']!r}; choose one of {', '.join(NOTEBOOKS)}")
    if not isinstance(recipe["parameters"], dict) or set(recipe["parameters"]) & set(RUNNER_PARAMETERS):
        raise ValueError(
            f"recipe {path}: parameters must be a mapping of the notebook's parameters without "
            f"{', '.join(RUNNER_PARAMETERS)} (seeds is its own field; the runner chooses where outputs go)"
        )
    if not recipe["seeds"] or not all(isinstance(s, int) for s in recipe["seeds"]):
        raise ValueError(f"recipe {path}: seeds {recipe['seeds']!r}; give a list of integers")
    if not recipe["data"] or not all(isinstance(d, str) for d in recipe["data"]):
        raise ValueError(f"recipe {path}: data {recipe['data']!r}; give a list of file paths from the repository root")
    for field in ("metric", "decision"):
        if not isinstance(recipe[field], str) or not recipe[field].strip():
            raise ValueError(f"recipe {path}: {field} must be a non-empty text")
    return recipe


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def repository(path: Path) -> Path:
    """The root of the git repository holding `path`; an error when it is in none."""
    try:
        return Path(git(path.parent, "rev-parse", "--show-toplevel"))
    except subprocess.CalledProcessError as exc:
        raise NotFrozen(f"{path} is not in a git repository: a recipe is frozen by committing it") from exc


def recipe_state(root: Path, path: Path) -> dict:
    """The recipe's commit (the last that changed it), its time, and whether the working tree's file
    is that commit's: "committed", "modified" or "not committed"."""
    name = str(path.resolve().relative_to(root))
    found = _git_or_nothing(root, "log", "-1", "--format=%H %ct", "--", name)
    if not found:
        return {"path": name, "commit": None, "time": None, "state": "not committed"}
    commit, time = found.split()
    changed = git(root, "status", "--porcelain", "--", name)
    return {"path": name, "commit": commit, "time": int(time), "state": "modified" if changed else "committed"}


def _git_or_nothing(root: Path, *args: str) -> str:
    """`git(root, *args)`, or "" where git has nothing to say (a repository without commits yet)."""
    try:
        return git(root, *args)
    except subprocess.CalledProcessError:
        return ""


def data_state(root: Path, name: str, recipe: dict) -> dict:
    """One data file's sha256 and whether it was made after the recipe's commit (`after`): by git
    when the file is tracked (its first commit a strict descendant of the recipe's), else by its
    modification time (after the recipe commit's time; a weak check)."""
    path = root / name
    if not path.is_file():
        raise FileNotFoundError(f"data file {name} (the recipe's data, from the repository root {root}) does not exist")
    state = {"path": name, "sha256": sha256_of(path)}
    inside = path.resolve().is_relative_to(root.resolve())
    added = _git_or_nothing(root, "log", "--diff-filter=A", "--format=%H", "--", name).splitlines() if inside else []
    if added:
        first = added[-1]  # the earliest commit that added it
        modified = bool(git(root, "status", "--porcelain", "--", name))
        after = (
            recipe["commit"] is not None
            and first != recipe["commit"]
            and subprocess.run(["git", "merge-base", "--is-ancestor", recipe["commit"], first], cwd=root).returncode
            == 0
        )
        return state | {"check": "git", "first_commit": first, "modified": modified, "after": after and not modified}
    mtime = path.stat().st_mtime
    after = recipe["time"] is not None and mtime > recipe["time"]
    return state | {"check": "mtime (weak: a copy or touch sets it)", "mtime": _iso(mtime), "after": after}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def provenance(recipe_path: Path, recipe: dict) -> dict:
    """The recipe's state and each data file's, as the result keeps them."""
    root = repository(recipe_path)
    state = recipe_state(root, recipe_path)
    return {"root": root, "recipe": state, "data": [data_state(root, name, state) for name in recipe["data"]]}


def check_frozen(found: dict) -> None:
    """Refuse the test split unless the recipe is committed, unmodified, and older than every data file."""
    recipe = found["recipe"]
    if recipe["state"] == "not committed":
        raise NotFrozen(
            f"recipe {recipe['path']} is not committed: the test split is read only with a recipe committed before "
            f"its data exist. Commit it (git add {recipe['path']} && git commit), then make the data, or run "
            "--split validation"
        )
    if recipe["state"] == "modified":
        raise NotFrozen(
            f"recipe {recipe['path']} differs from its commit {recipe['commit'][:10]}: the test split is read only "
            f"with the recipe as committed. Restore it (git checkout -- {recipe['path']}), or commit the change and "
            "make the data again after it (a recipe changed after its data is a recipe chosen on them)"
        )
    for data in found["data"]:
        if data["after"]:
            continue
        if data["check"] == "git":
            why = (
                f"was modified in the working tree after its commit {data['first_commit'][:10]}"
                if data["modified"]
                else f"was first committed at {data['first_commit'][:10]}, not after the recipe's commit "
                f"{recipe['commit'][:10]}"
            )
        else:
            why = f"was last modified at {data['mtime']}, before the recipe's commit at {_iso(recipe['time'])}"
        raise NotFrozen(
            f"data file {data['path']} {why}: the test split is read only with data made after the recipe was "
            "frozen. Make the data again after the recipe's commit (or write a new recipe and commit it before the "
            "data), or run --split validation"
        )


def run(
    recipe_path: Path, split: str, evaluate: Callable[[dict, str, Path], dict] | None = None, out: Path | None = None
) -> dict:
    """Check, evaluate, write: the result of `recipe_path`'s recipe on `split` (`evaluate(recipe, split,
    folder)` gives its scores; by default `notebook_scores`), written atomically beside the recipe."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: choose one of {', '.join(SPLITS)}")
    recipe_path = recipe_path.resolve()
    recipe = load_recipe(recipe_path)
    found = provenance(recipe_path, recipe)
    if split == "test":
        check_frozen(found)
    root = found.pop("root")
    folder = root / RESULTS / recipe_path.stem / split
    scores = (evaluate or notebook_scores)(recipe, split, folder)
    result = {
        "split": split,
        **found,
        "notebook": recipe["notebook"],
        "parameters": recipe["parameters"],
        "seeds": recipe["seeds"],
        "metric": recipe["metric"],
        "decision": recipe["decision"],
        "scores": scores,
    }
    write_json(out or recipe_path.with_name(f"{recipe_path.stem}_{split}.json"), result)
    return result


def notebook_scores(recipe: dict, split: str, folder: Path) -> dict:
    """The recipe's notebook run by papermill on its parameters and seeds, its outputs under
    `folder`; on the validation split against `validation_view` of its prepared benchmark. The
    metric's mean (x 100) over the questions of each run file, by dataset, system and seed."""
    import papermill

    notebooks = ROOT / "notebooks"
    parameters = recipe["parameters"] | {
        "seeds": recipe["seeds"],
        "results_dir": str(folder / "results"),
        "runs_dir": str(folder / "runs"),
        "figures_dir": str(folder / "figures"),
    }
    if split == "validation":
        prepared = (notebooks / parameters.get("prepared_dir", "../results/prepared/wordnet")).resolve()
        parameters["prepared_dir"] = str(validation_view(prepared, folder / "prepared"))
    folder.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(
        str(notebooks / f"{recipe['notebook']}.ipynb"),
        str(folder / f"{recipe['notebook']}.ipynb"),
        parameters=parameters,
        cwd=str(notebooks),
        kernel_name="python3",
    )
    return read_scores(folder / "results", recipe["metric"])


def read_scores(results: Path, metric: str) -> dict:
    """`metric`'s mean (x 100) over the questions of each run file in `results` (notebook 04's
    `<dataset>_<system>_seed<n>.json`, and a seed-free run's `<dataset>_<system>.json`, such as the
    teacher's decomposition, keyed `.../none`), keyed `dataset/system/seed`."""
    scores = {}
    for path in sorted(results.glob("*.json")):
        run = json.loads(path.read_text())
        if not isinstance(run, dict) or "system" not in run or "seed" not in run:
            continue  # not a run file (a summary, a table)
        if metric not in run:
            raise KeyError(f"{path} has no {metric!r}; a run file's metrics: mrecall, recall, mrecall_10, ...")
        values = run[metric]
        seed = "none" if run["seed"] is None else run["seed"]
        scores[f"{run['dataset']}/{run['system']}/{seed}"] = 100 * sum(values) / len(values)
    return scores


def validation_view(prepared: Path, folder: Path) -> Path:
    """A prepared benchmark whose test split is `prepared`'s validation split, for a validation run
    that cannot open the test questions: per dataset the training questions and the validation ones
    (the benchmark's own validation file, or else 10% of its training questions drawn by seed 0, the
    same for every seed), the latter also as the test file; the manifest and corpus the same, the
    embeddings linked."""
    from amer_lib.core.train import split_train_validation
    from amer_lib.data.benchmark import Benchmark
    from amer_lib.data.questions import write_questions

    benchmark = Benchmark(prepared)
    folder.mkdir(parents=True, exist_ok=True)
    for dataset in benchmark.datasets:
        train = benchmark.questions(dataset, "train")
        if (prepared / f"{dataset}_validation.jsonl").exists():
            validation = benchmark.questions(dataset, "validation")
        else:
            fitted, held = split_train_validation(len(train), 0)
            train, validation = [train[i] for i in fitted.tolist()], [train[i] for i in held.tolist()]
        write_questions(folder / f"{dataset}_train.jsonl", train)
        for split in ("validation", "test"):
            write_questions(folder / f"{dataset}_{split}.jsonl", validation)
    embeddings = folder / "embeddings"
    if not embeddings.exists():
        embeddings.symlink_to(prepared / "embeddings", target_is_directory=True)
    corpus = os.path.relpath(benchmark.corpus_path.resolve(), folder.resolve())
    write_json(folder / "manifest.json", benchmark.manifest | {"corpus": corpus, "corpus_from": "benchmark"})
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", type=Path, help="the recipe YAML")
    parser.add_argument("--split", choices=SPLITS, default="validation", help="test: only with a frozen recipe")
    parser.add_argument("--out", type=Path, help="the result's JSON (default: RECIPE_<split>.json beside the recipe)")
    args = parser.parse_args()
    try:
        result = run(args.recipe, args.split, out=args.out)
    except NotFrozen as refused:
        raise SystemExit(f"refused: {refused}") from None
    print(json.dumps(result["scores"], indent=1))


if __name__ == "__main__":
    main()
