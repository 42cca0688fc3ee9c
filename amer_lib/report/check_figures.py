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
            f"{folder}/{pattern} matches {len(found)} files ({[p.name for p in found]}); expected one"
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


def compare(check: Check, rerun_dir: Path, committed_dir: Path) -> list[str]:
    """The differences between one rerun table and the committed one: a line per missing row or
    differing value (empty: they agree to the last digit)."""
    rerun = pd.read_csv(rerun_dir / check.rerun, dtype=str, keep_default_na=False)
    committed_path = _one(committed_dir, check.committed)
    committed = pd.read_csv(committed_path, dtype=str, keep_default_na=False).set_index(list(check.keys))
    columns = [c for c in rerun.columns if c not in check.keys and c not in check.ignored]
    if rerun.empty:
        return [f"{check.rerun}: the rerun wrote no rows"]
    differences = []
    for row in rerun.to_dict("records"):
        key = tuple(row[k] for k in check.keys)
        if key not in committed.index:
            differences.append(f"{committed_path}: no row {dict(zip(check.keys, key))}")
            continue
        kept, where = committed.loc[key], f"{committed_path} {dict(zip(check.keys, key))}"
        for column in columns:
            if column not in kept.index:
                differences.append(f"{committed_path}: no column {column!r}")
            elif not _same_value(kept[column], row[column]):
                differences.append(f"{where} {column}: committed {kept[column]}, rerun {row[column]}")
    return differences


def check_all(rerun_dir: str | Path, committed_dir: str | Path, checks: tuple[Check, ...] | None = None) -> list[str]:
    """Every check's (by default `CHECKS`) differences, after printing what was compared."""
    differences = []
    for check in CHECKS if checks is None else checks:
        found = compare(check, Path(rerun_dir), Path(committed_dir))
        rows = len(pd.read_csv(Path(rerun_dir) / check.rerun))
        print(f"{check.rerun}: {rows} row(s) against {check.committed}: {'same' if not found else 'DIFFERENT'}")
        differences += found
    return differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rerun_dir", type=Path, help="the rerun's figures folder (build/check-figures/figures)")
    parser.add_argument("committed_dir", type=Path, help="the committed figures folder (figures)")
    args = parser.parse_args(argv)
    differences = check_all(args.rerun_dir, args.committed_dir)
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
