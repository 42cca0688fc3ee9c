"""Tables written as CSV, Markdown and LaTeX side by side, atomically. A table's `attrs["bold"]`
(a set of (row, column) positions) marks cells printed in bold in Markdown and LaTeX; its
`attrs["note"]` (what its ± and marks mean) is printed under it in Markdown and LaTeX."""

from __future__ import annotations

import math
from pathlib import Path

from amer_lib.io import write_text
from amer_lib.report.significance import note
from amer_lib.report.summaries import compared_count, with_marks


def _cells(df, bold_cell, text=str) -> list[list[str]]:
    """Each row's cells as `text`, those in `df.attrs["bold"]` passed through `bold_cell`."""
    bold = df.attrs.get("bold", set())
    return [
        [bold_cell(text(value)) if (i, column) in bold else text(value) for column, value in zip(df.columns, row)]
        for i, row in enumerate(df.itertuples(index=False))
    ]


def to_markdown(df) -> str:
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(row) + " |" for row in _cells(df, lambda text: f"**{text}**")]
    note = [f"\n{df.attrs['note']}"] if df.attrs.get("note") else []
    return "\n".join([header, rule, *body, *note]) + "\n"


def _latex_escape(value) -> str:
    return str(value).replace("_", r"\_").replace("%", r"\%")


def to_latex(df) -> str:
    lines = [
        r"\begin{tabular}{" + "l" * len(df.columns) + "}",
        r"\toprule",
        " & ".join(_latex_escape(c) for c in df.columns) + r" \\",
        r"\midrule",
    ]
    bold = lambda text: r"\textbf{" + text + "}"
    lines += [" & ".join(row) + r" \\" for row in _cells(df, bold, _latex_escape)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if df.attrs.get("note"):
        lines += [r"\par\smallskip{\footnotesize " + _latex_escape(df.attrs["note"]) + "}"]
    return "\n".join(lines) + "\n"


def write_table(df, path: str | Path) -> None:
    """`path` without suffix -> path.csv, path.md, path.tex."""
    path = Path(path).with_suffix("")
    for suffix, text in ((".csv", df.to_csv(index=False)), (".md", to_markdown(df)), (".tex", to_latex(df))):
        write_text(path.with_suffix(suffix), text)


SYSTEM_ROWS = (
    ("single", "Single-Query"),
    ("query_expansion", "+Query Expansion"),
    ("rerank", "+Re-ranking"),
    ("amer", "AMER"),
)
PENDING = "not run"  # rows whose system has no results


def percent_change(fraction: float) -> str:
    """A relative change as the paper prints it (+4.18%); rounding noise never shows as -0.00%, and
    a change from zero, which has no size, shows as n/a."""
    if math.isnan(fraction):
        return "n/a"
    return f"{round(100 * fraction, 2) + 0.0:+.2f}%"


FULL_RESULTS_TABLES = {"llama8b": 5, "qwen4b": 6, "llama3b": 7, "llama1b": 8}  # the paper's appendix


def full_results_name(backbone: str) -> str:
    """The file name of one backbone's full results, every dataset it ran on: `table5_llama8b` ..
    `table8_llama1b` for the paper's backbones, `full_results_<backbone>` for any other."""
    number = FULL_RESULTS_TABLES.get(backbone)
    return f"table{number}_{backbone}" if number else f"full_results_{backbone}"


def real_results_table(
    summary_rows: list[dict], alpha: float = 0.05, systems=SYSTEM_ROWS, method: str = "holm", baseline="single-query"
):
    """Tables 5-8 (one backbone each, its datasets one under the other): per dataset, MRecall@100
    (mean +- population standard deviation over seeds, numpy's ddof 0; the paper's text calls its spread
    variance) and the relative gain over single-query on the whole and the low-similarity test set;
    * / † mark a system significantly ahead of / behind the baseline: two-sided p of the paired
    bootstrap over seeds and questions below alpha after `method`'s correction across the table's
    comparisons (every system shown but the baseline, on each dataset and subset), said in the
    table's note. `systems`: the (system, label) rows, in order (notebook 07 passes its own, against
    its own baseline, named by `baseline` in the note, with the vectors each searches)."""
    import pandas as pd

    shown = {system for system, _ in systems}
    summary_rows = with_marks([r for r in summary_rows if r["system"] in shown], alpha, method)
    n_comparisons = compared_count(summary_rows)
    rows = []
    for dataset in dict.fromkeys(r["dataset"] for r in summary_rows):
        by_system = {r["system"]: r for r in summary_rows if r["dataset"] == dataset}
        for system, label in systems:
            result = by_system.get(system)
            row = {"Dataset": dataset, "System": (result or {}).get("label") or label}
            if result is not None and "vectors" in result:
                row["Vectors"] = f"{result['vectors']:.2f}"
            for subset, name in (("whole", "Whole Set"), ("low_sim", "Low Similarity Set")):
                if result is None:
                    row[f"{name} MRec@100"] = row[f"{name} Δ"] = PENDING
                    continue
                mark = result.get(f"{subset}_mark", "")
                row[f"{name} MRec@100"] = f"{result[f'{subset}_mean']:.2f}±{result[f'{subset}_std']:.2f}{mark}"
                row[f"{name} Δ"] = percent_change(result[f"{subset}_delta"])
            rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs["bold"] = _best_cells(table, summary_rows, systems)
    table.attrs["note"] = note(n_comparisons, alpha, method, baseline)
    return table


def _best_cells(table, summary_rows: list[dict], systems) -> set[tuple[int, str]]:
    """The best MRecall@100 per dataset and test subset (the paper bolds "the best performances in
    each subset"), as (row, column) positions of `table`; ties all bold."""
    best = set()
    for subset, name in (("whole", "Whole Set"), ("low_sim", "Low Similarity Set")):
        for dataset in dict.fromkeys(table["Dataset"]):
            means = {r["system"]: r[f"{subset}_mean"] for r in summary_rows if r["dataset"] == dataset}
            top = max((means[system] for system, _ in systems if system in means), default=None)
            row_of = [i for i in table.index if table.at[i, "Dataset"] == dataset]
            for i, (system, _) in zip(row_of, systems):
                if means.get(system) == top:
                    best.add((i, f"{name} MRec@100"))
    return best


def relative_gain_table(summaries: dict[str, list[dict]]):
    """Table 2: relative gain over single-query, macro-averaged over the backbones that have
    results (`summaries`: backbone -> summary rows), per dataset and test subset."""
    import numpy as np
    import pandas as pd

    rows = []
    for system, label in SYSTEM_ROWS[1:]:
        labels = {r.get("label") for rs in summaries.values() for r in rs if r["system"] == system}
        row = {"System": " / ".join(sorted(lab for lab in labels if lab)) or label}
        for dataset in dict.fromkeys(r["dataset"] for rs in summaries.values() for r in rs):
            for subset, name in (("whole", "Whole Set"), ("low_sim", "Low Similarity Set")):
                gains = [
                    r[f"{subset}_delta"]
                    for rs in summaries.values()
                    for r in rs
                    if r["dataset"] == dataset and r["system"] == system
                ]
                row[f"{dataset} ({name})"] = percent_change(np.mean(gains)) if gains else PENDING
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs["backbones"] = sorted(summaries)
    return table
