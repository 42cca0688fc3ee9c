"""Tables written as CSV, Markdown and LaTeX side by side, atomically."""

from __future__ import annotations

from pathlib import Path

from amer_lib.io import write_text


def to_markdown(df) -> str:
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(map(str, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body]) + "\n"


def _latex_escape(value) -> str:
    return str(value).replace("_", r"\_").replace("%", r"\%")


def to_latex(df) -> str:
    lines = [
        r"\begin{tabular}{" + "l" * len(df.columns) + "}",
        r"\toprule",
        " & ".join(_latex_escape(c) for c in df.columns) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(_latex_escape(v) for v in row) + r" \\" for row in df.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}"]
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
    """A relative change as the paper prints it (+4.18%); rounding noise never shows as -0.00%."""
    return f"{round(100 * fraction, 2) + 0.0:+.2f}%"


FULL_RESULTS_TABLES = {"llama8b": 5, "qwen4b": 6, "llama3b": 7, "llama1b": 8}  # the paper's appendix


def full_results_name(backbone: str, tag: str) -> str:
    """The file name of one backbone's full results: `table5_<tag>` .. `table8_<tag>` for the
    paper's backbones, `full_results_<tag>` for any other."""
    number = FULL_RESULTS_TABLES.get(backbone)
    return f"table{number}_{tag}" if number else f"full_results_{tag}"


def real_results_table(summary_rows: list[dict], alpha: float = 0.05, systems=SYSTEM_ROWS):
    """Tables 5-8 (one backbone each): per dataset, MRecall@100 (mean +- std over seeds) and the relative
    gain over single-query on the whole and the low-similarity test set; * marks p < alpha in
    the paired bootstrap against single-query. `systems`: the (system, label) rows, in order
    (notebook 07 passes its own, against its own baseline, with the vectors each searches)."""
    import pandas as pd

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
                star = "*" if result.get(f"{subset}_p", 1.0) < alpha else ""
                row[f"{name} MRec@100"] = f"{result[f'{subset}_mean']:.2f}±{result[f'{subset}_std']:.2f}{star}"
                row[f"{name} Δ"] = percent_change(result[f"{subset}_delta"])
            rows.append(row)
    return pd.DataFrame(rows)


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
