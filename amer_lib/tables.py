"""Tables written as CSV, Markdown and LaTeX side by side, atomically."""
from __future__ import annotations

from pathlib import Path

from .io import write_text


def to_markdown(df) -> str:
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(map(str, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body]) + "\n"


def _latex_escape(value) -> str:
    return str(value).replace("_", r"\_").replace("%", r"\%")


def to_latex(df) -> str:
    lines = [r"\begin{tabular}{" + "l" * len(df.columns) + "}", r"\toprule",
             " & ".join(_latex_escape(c) for c in df.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_escape(v) for v in row) + r" \\" for row in df.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table(df, path: str | Path) -> None:
    """`path` without suffix -> path.csv, path.md, path.tex."""
    path = Path(path).with_suffix("")
    for suffix, text in ((".csv", df.to_csv(index=False)), (".md", to_markdown(df)), (".tex", to_latex(df))):
        write_text(path.with_suffix(suffix), text)
