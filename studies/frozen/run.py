"""Issue 70: a study run from a frozen recipe, which reads a test split only once the recipe was
committed before its data existed, so that a lever is chosen on validation by construction; issue 79:
every read of a test split logged in a committed ledger, and read once.

A recipe is a YAML file (`studies/frozen/README.md` shows one): the notebook, its parameters, the
seeds, the data files, the metric and the decision rule, written before the data. From the
repository root:

    .venv/bin/python studies/frozen/run.py RECIPE.yaml --freeze         # then commit it and the ledger
    .venv/bin/python studies/frozen/run.py RECIPE.yaml                  # validation: at any time
    .venv/bin/python studies/frozen/run.py RECIPE.yaml --split test     # the test split: once, frozen

`--freeze` writes the recipe's freeze into the ledger (`LEDGER`): its sha256 and the sha256 of each of
its data files that exists already (None for the others), to be committed together with the recipe.
A validation run is allowed at any time: the notebook runs on a view of the prepared benchmark whose
test split is its validation split (`validation_view`), so the real test questions are not in any
file the notebook opens. A test run is refused, with the problem and its fix, unless

1. the working tree has no uncommitted change to a tracked file, and the code (`CODE`) is the code of
   the recipe's commit (the last one that changed it): the code is frozen with the recipe;
2. the recipe is committed, unmodified, and its freeze is in the ledger as that commit holds it;
3. each data file was made after the freeze: a file in git was first committed in a strict descendant
   of the recipe's commit (and is unmodified); a file outside git is absent from the freeze, or has
   other bytes than it had then (a copy or `touch` of an older file keeps its bytes, and is refused);
4. every file the evaluation opens for its test questions (`evaluation_files`: the prepared
   benchmark's test files and manifest) is one of the data files; and
5. the ledger holds no earlier read of the recipe; `--force` reads it again, and the read is logged
   as forced and counted in the result.

Either run writes its result atomically beside the recipe (`RECIPE_validation.json` or
`RECIPE_test.json`): the recipe's path, commit and state, each data file's sha256 and how it was
checked, and the metric's mean per dataset, system and seed as the notebook's run files give it. A
test read is appended to the ledger: the recipe, its commit, the code's commit, the time and the
sha256 of every file it read, for the change to be committed with the result.
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
LEDGER = Path("studies") / "frozen" / "ledger.json"  # committed: every freeze and every test read
CODE = ("amer_lib", "notebooks", "studies/frozen/run.py")  # what a test read must run as the recipe's commit had it


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


def data_state(root: Path, name: str, recipe: dict, frozen: dict | None = None) -> dict:
    """One data file's sha256 and whether it was made after the recipe's commit (`after`): by git
    when the file is tracked (its first commit a strict descendant of the recipe's), else by the
    recipe's freeze in the ledger (`frozen`: the file absent then, or its bytes other than then)."""
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
    if frozen is None:
        return state | {"check": "freeze", "at_freeze": "no freeze", "after": False}
    then = frozen["data"].get(name, "not listed")
    return state | {
        "check": "freeze",
        "at_freeze": then,
        "after": then is None or then not in (state["sha256"], "not listed"),
    }


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def provenance(recipe_path: Path, recipe: dict) -> dict:
    """The recipe's state, its freeze and each data file's state, as the result keeps them."""
    root = repository(recipe_path)
    state = recipe_state(root, recipe_path)
    freeze = frozen_entry(root, state, sha256_of(recipe_path))
    data = [data_state(root, name, state, freeze) for name in recipe["data"]]
    return {"root": root, "recipe": state, "freeze": freeze, "data": data}


def read_ledger(root: Path, commit: str | None = None) -> list[dict]:
    """The ledger's entries, in the working tree or as `commit` holds it ([] where there is none)."""
    if commit is not None:
        text = _git_or_nothing(root, "show", f"{commit}:{LEDGER.as_posix()}")
    else:
        text = (root / LEDGER).read_text() if (root / LEDGER).exists() else ""
    return json.loads(text) if text else []


def frozen_entry(root: Path, recipe: dict, recipe_sha256: str) -> dict | None:
    """The recipe's freeze as the ledger of the recipe's commit holds it (None: none there)."""
    if recipe["commit"] is None:
        return None
    freezes = [
        e
        for e in read_ledger(root, recipe["commit"])
        if e["event"] == "freeze" and e["recipe"] == recipe["path"] and e["recipe_sha256"] == recipe_sha256
    ]
    return freezes[-1] if freezes else None


def freeze(recipe_path: Path) -> dict:
    """Write `recipe_path`'s freeze into the ledger: its sha256, the time, and each data file's sha256
    where it exists already (None where it does not). Commit the recipe and the ledger together next."""
    recipe_path = recipe_path.resolve()
    recipe = load_recipe(recipe_path)
    root = repository(recipe_path)
    data = {name: sha256_of(root / name) if (root / name).is_file() else None for name in recipe["data"]}
    entry = {
        "event": "freeze",
        "recipe": str(recipe_path.relative_to(root)),
        "recipe_sha256": sha256_of(recipe_path),
        "time": _iso(datetime.now(timezone.utc).timestamp()),
        "data": data,
    }
    write_json(root / LEDGER, [*read_ledger(root), entry])
    return entry


def evaluation_files(root: Path, recipe: dict) -> list[str]:
    """The files the recipe's notebook opens for its test questions: per dataset, its prepared
    benchmark's test file, and the benchmark's manifest (those that exist), from the repository root."""
    prepared = (root / "notebooks" / recipe["parameters"].get("prepared_dir", "../results/prepared/wordnet")).resolve()
    names = [f"{dataset}_test.jsonl" for dataset in recipe["parameters"].get("datasets", [])] + ["manifest.json"]
    found = [prepared / name for name in names if (prepared / name).is_file()]
    return [str(p.relative_to(root.resolve())) if p.is_relative_to(root.resolve()) else str(p) for p in found]


def check_frozen(found: dict, root: Path, recipe_fields: dict, force: bool = False) -> None:
    """Refuse the test split unless the tree is clean and runs the recipe's code, the recipe is
    committed, unmodified and frozen in the ledger, every data file is newer than the freeze, every
    file the evaluation opens is a data file, and the recipe was not read before (unless `force`)."""
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
    dirty = _git_or_nothing(root, "diff", "--name-only", "HEAD")  # tracked files changed, staged or not
    if dirty:
        files = ", ".join(dirty.splitlines()[:5])
        raise NotFrozen(
            f"the working tree has uncommitted changes ({files}): a test read runs committed code only. Commit "
            "or stash them first"
        )
    changed = _git_or_nothing(root, "diff", "--name-only", recipe["commit"], "HEAD", "--", *CODE)
    if changed:
        files = ", ".join(changed.splitlines()[:5])
        raise NotFrozen(
            f"the code changed since the recipe's commit {recipe['commit'][:10]} ({files}): a test read runs the "
            f"code frozen with its recipe. Check out {recipe['commit'][:10]}'s code to read it, or write a new recipe"
        )
    if found["freeze"] is None:
        raise NotFrozen(
            f"recipe {recipe['path']} has no freeze in the ledger of its commit {recipe['commit'][:10]} ({LEDGER}): "
            f"run studies/frozen/run.py {recipe['path']} --freeze before making its data, and commit the recipe "
            "and the ledger together"
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
        elif data["at_freeze"] == "not listed":
            why = "is not in the recipe's freeze"
        else:
            why = (
                f"holds the bytes it held when the recipe was frozen (sha256 {data['sha256'][:12]}; a touch or a "
                "copy keeps them)"
            )
        raise NotFrozen(
            f"data file {data['path']} {why}: the test split is read only with data made after the recipe was "
            "frozen. Make the data again after the recipe's commit (or write a new recipe and freeze it before the "
            "data), or run --split validation"
        )
    listed = set(recipe_fields["data"])
    unlisted = [name for name in evaluation_files(root, recipe_fields) if name not in listed]
    if unlisted:
        raise NotFrozen(
            f"the evaluation opens {', '.join(unlisted)}, which the recipe's data does not list: every file a test "
            "read opens is checked. Add it to the recipe's data (a new recipe, frozen before its data)"
        )
    reads = [e for e in read_ledger(root) if e["event"] == "read" and e["recipe"] == recipe["path"]]
    if reads and not force:
        raise NotFrozen(
            f"recipe {recipe['path']} was read on the test split {len(reads)} time(s) already (last at "
            f"{reads[-1]['time']}, {LEDGER}): a test split is read once. --force reads it again, logged as forced"
        )


def run(
    recipe_path: Path,
    split: str,
    evaluate: Callable[[dict, str, Path], dict] | None = None,
    out: Path | None = None,
    force: bool = False,
) -> dict:
    """Check, evaluate, write: the result of `recipe_path`'s recipe on `split` (`evaluate(recipe, split,
    folder)` gives its scores; by default `notebook_scores`), written atomically beside the recipe; a
    test read logged in the ledger (`force`: read again a recipe the ledger says was read)."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: choose one of {', '.join(SPLITS)}")
    recipe_path = recipe_path.resolve()
    recipe = load_recipe(recipe_path)
    found = provenance(recipe_path, recipe)
    root = found.pop("root")
    if split == "test":
        check_frozen(found, root, recipe, force)
        opened = {name: sha256_of(Path(root / name)) for name in evaluation_files(root, recipe)}
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
    if split == "test":
        result["reads"] = log_read(root, found, opened, force)
    write_json(out or recipe_path.with_name(f"{recipe_path.stem}_{split}.json"), result)
    return result


def log_read(root: Path, found: dict, opened: dict[str, str], forced: bool) -> int:
    """Append a test read to the ledger: the recipe, its commit, the code's commit, the time, and the
    sha256 of every file read (the data and those the evaluation opened). Returns the recipe's reads
    so far, this one included."""
    files = {d["path"]: d["sha256"] for d in found["data"]} | opened
    entry = {
        "event": "read",
        "recipe": found["recipe"]["path"],
        "recipe_commit": found["recipe"]["commit"],
        "code_commit": git(root, "rev-parse", "HEAD"),
        "time": _iso(datetime.now(timezone.utc).timestamp()),
        "files": files,
        "forced": forced,
    }
    entries = [*read_ledger(root), entry]
    write_json(root / LEDGER, entries)
    return sum(e["event"] == "read" and e["recipe"] == entry["recipe"] for e in entries)


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
    parser.add_argument("--freeze", action="store_true", help="write the recipe's freeze into the ledger, and stop")
    parser.add_argument("--force", action="store_true", help="read the test split of a recipe read before (logged)")
    args = parser.parse_args()
    if args.freeze:
        entry = freeze(args.recipe)
        print(f"frozen in {LEDGER}: commit {entry['recipe']} and {LEDGER} together, then make the data")
        return
    try:
        result = run(args.recipe, args.split, out=args.out, force=args.force)
    except NotFrozen as refused:
        raise SystemExit(f"refused: {refused}") from None
    print(json.dumps(result["scores"], indent=1))


if __name__ == "__main__":
    main()
