"""The results page's parts (`amer_lib.report.results_page`): a claim of the README's verdict
table and its section, and the registries the work beyond the paper adds its own to
(`amer_lib.beyond.compound_results`): claims after the paper's, parts of the page after the claims,
sections of tables and figures after the paper's, the Makefile target of a folder's suffix and the
commit a folder's runs were trained at."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from amer_lib.report.evidence import read_evidence

FIGURES = Path("figures")  # the command runs from the repository root, as every command shown does


def read_rows(figures: Path, name: str) -> list[dict]:
    """The rows of a CSV under `figures`, or of a JSON list of rows (a notebook's summary)."""
    if name.endswith(".json"):
        return json.loads((figures / name).read_text())
    with open(figures / name, newline="") as f:
        return list(csv.DictReader(f))


@dataclass(frozen=True)
class Claim:
    """One row of the README's verdict table and its section of figures/RESULTS.md. The README's cells
    are short (one claim, the paper's number, ours, the verdict: about 20 words at most); the section
    gives each in full, where `paper_in_full`, `ours_in_full` and `verdict_in_full` say more. The
    readers take the rows of each file in `files`, one argument per file, in order, and then, where
    `evidence` names the claim's records (`amer_lib.report.evidence`), the list of them."""

    claim: str  # also the heading of its section on the results page, which the README's row links
    paper: str  # a quote of the paper's numbers
    files: tuple[str, ...]  # under figures/
    ours: Callable[..., str]
    verdict: Callable[..., str]
    notebook: str  # the notebooks that make the files
    paper_in_full: str = ""
    ours_in_full: Callable[..., str] | None = None
    verdict_in_full: Callable[..., str] | None = None
    note: str = ""  # a sentence the section adds (a legend, what the row is not)
    evidence: str = ""  # the claim key of its studies' records under evidence.EVIDENCE, read last

    def cells(self, figures: Path) -> tuple[str, str, str]:
        """The paper's number, ours and the verdict, short."""
        rows = self._read(figures)
        return self.paper, self.ours(*rows), self.verdict(*rows)

    def cells_in_full(self, figures: Path) -> tuple[str, str, str]:
        rows = self._read(figures)
        ours, verdict = self.ours_in_full or self.ours, self.verdict_in_full or self.verdict
        return self.paper_in_full or self.paper, ours(*rows), verdict(*rows)

    def _read(self, figures: Path) -> list:
        rows: list = [read_rows(figures, name) for name in self.files]
        if self.evidence:
            rows.append(read_evidence(claim=self.evidence))
        return rows


ADDED_CLAIMS: list[Claim] = []  # rows after the paper's claims
ADDED_PARTS: list[tuple[str, Callable[[Path], str]]] = []  # (heading, its text from figures/) after the claims
ADDED_SECTIONS: list[tuple[str, list[str], list[tuple[str, str]]]] = []  # (heading, tables, (image, caption))
ADDED_MADE_BY: dict[str, str] = {}  # the Makefile target of each folder suffix (`make figures` for the rest)
# Folders whose notebook-04 runs were trained at another commit than the folder's own, which
# provenance.json does not record: (the folder's commit, the runs' commit, where the record of it is)
RUNS_TRAINED_AT: dict[str, tuple[str, str, str]] = {}
