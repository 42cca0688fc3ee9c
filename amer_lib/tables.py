"""Tables written as CSV, Markdown and LaTeX side by side, atomically."""
from __future__ import annotations

from pathlib import Path

from .io import atomic_path


def to_markdown(df) -> str:
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(map(str, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body]) + "\n"


def to_latex(df) -> str:
    escape = lambda v: str(v).replace("_", r"\_").replace("%", r"\%")
    lines = [r"\begin{tabular}{" + "l" * len(df.columns) + "}", r"\toprule",
             " & ".join(escape(c) for c in df.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(escape(v) for v in row) + r" \\" for row in df.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table(df, path: str | Path) -> None:
    """`path` without suffix -> path.csv, path.md, path.tex."""
    path = Path(path).with_suffix("")
    for suffix, text in ((".csv", df.to_csv(index=False)), (".md", to_markdown(df)), (".tex", to_latex(df))):
        with atomic_path(path.with_suffix(suffix)) as tmp:
            tmp.write_text(text)
