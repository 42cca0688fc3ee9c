"""`make check-figures`: a cheap subset of the committed figures rerun from nothing (notebook 02's
linear Multi setting, notebook 04's seed 0 on wordnet_senses; `params/*/check_figures.yaml`)
compared with the committed files to the last digit. Every row the rerun wrote must be in the
committed table with the same value in every compared column: the same text, or the same number
(`300.0` and `300`).

    python -m amer_lib.report.check_figures build/check-figures/figures figures
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Check:
    rerun: str  # a file under the rerun's figures folder
    committed: str  # a glob under the committed figures folder: exactly one file
    keys: tuple[str, ...]  # the columns naming a row
    ignored: tuple[str, ...] = ()  # columns that are not results (wall times)


CHECKS = (
    Check(
        "02_synthetic/results.csv", "02_synthetic/results.csv", ("transform", "setting", "system"), ("train_seconds",)
    ),
    Check(
        "04_real_data/per_seed_minilm_wordnet_senses.csv",
        "04_real_data/per_seed_minilm_*.csv",
        ("dataset", "system", "seed"),
    ),
)


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise FileNotFoundError(
            f"{folder}/{pattern} matches {len(found)} files ({[p.name for p in found]}); expected one "
            "(a committed folder made before the code wrote it needs regenerating: make figures)"
        )
    return found[0]


def _same_value(committed: str, rerun: str) -> bool:
    """The same text, or the same number written two ways (`300.0` in a column that also holds
    blanks, `300` in one that does not)."""
    if committed == rerun:
        return True
    try:
        return float(committed) == float(rerun)
    except ValueError:
        return False


def compare(check: Check, rerun_dir: Path, committed_dir: Path) -> tuple[int, list[str]]:
    """The rows of one rerun table and their differences from the committed one: a line per
    missing column, missing row or differing value (none: they agree to the last digit)."""
    rerun = pd.read_csv(rerun_dir / check.rerun, dtype=str, keep_default_na=False)
    if rerun.empty:
        return 0, [f"{check.rerun}: the rerun wrote no rows"]
    committed_path = _one(committed_dir, check.committed)
    committed = pd.read_csv(committed_path, dtype=str, keep_default_na=False).set_index(list(check.keys))
    columns = [c for c in rerun.columns if c not in check.keys and c not in check.ignored]
    differences = [f"{committed_path}: no column {c!r}" for c in columns if c not in committed.columns]
    columns = [c for c in columns if c in committed.columns]
    for row in rerun.to_dict("records"):
        key = tuple(row[k] for k in check.keys)
        where = f"{committed_path} {dict(zip(check.keys, key))}"
        if key not in committed.index:
            differences.append(f"{where}: no such row")
            continue
        kept = committed.loc[key]
        differences += [
            f"{where} {c}: committed {kept[c]}, rerun {row[c]}" for c in columns if not _same_value(kept[c], row[c])
        ]
    return len(rerun), differences


def check_all(rerun_dir: str | Path, committed_dir: str | Path, checks: tuple[Check, ...] | None = None) -> list[str]:
    """Every check's (by default `CHECKS`) differences, after printing what was compared."""
    differences = []
    for check in CHECKS if checks is None else checks:
        rows, found = compare(check, Path(rerun_dir), Path(committed_dir))
        print(f"{check.rerun}: {rows} row(s) against {check.committed}: {'same' if not found else 'DIFFERENT'}")
        differences += found
    return differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rerun_dir", type=Path, help="the rerun's figures folder (build/check-figures/figures)")
    parser.add_argument("committed_dir", type=Path, help="the committed figures folder (figures)")
    args = parser.parse_args(argv)
    try:
        differences = check_all(args.rerun_dir, args.committed_dir)
    except FileNotFoundError as error:  # no rerun yet, or a committed folder without the table
        sys.exit(f"error: {error}")
    for line in differences:
        print(line, file=sys.stderr)
    if differences:
        print(
            f"{len(differences)} difference(s): the committed figures are not what this code gives here "
            "(see each folder's provenance.json for the commit and the kernels that made them)",
            file=sys.stderr,
        )
        return 1
    print("the rerun matches the committed figures to the last digit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
