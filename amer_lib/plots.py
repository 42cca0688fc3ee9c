"""Figures in the paper's style."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import seaborn as sns

from .io import atomic_path

LINEAR_COLOR = "#f6a25c"  # the paper's light orange
MLP_COLOR = "#5c95c2"  # the paper's light blue
ORACLE_COLOR = "#9a9a9a"
SYSTEM_LABELS = {"single": "Single-\nQuery", "oracle": "Mean of\ntargets", "amer": "AMER"}
SETTING_LABELS = {"single": "Single", "multi": "Multi", "ood": "OOD"}


def figure4(table, path: str | Path | None = None):
    """Figure 4: MRecall@10 and @100 per system in six sections (Linear / MLP x Single / Multi / OOD).

    `table` has columns transform, setting, system, mrecall@10, mrecall@100. Solid bars are @10,
    light bars @100; the grey bars are the mean-of-targets oracle (one vector), for reference.
    """
    sns.set_theme(style="whitegrid", context="paper")
    def rows_of(transform: str, setting: str):
        return table[(table["transform"] == transform) & (table["setting"] == setting)]

    sections = [(t, s) for t in ("linear", "mlp") for s in ("single", "multi", "ood") if len(rows_of(t, s))]
    systems = [s for s in ("single", "oracle", "amer") if (table["system"] == s).any()]
    fig, axes = plt.subplots(1, len(sections), figsize=(2.6 * len(sections), 3.4), sharey=True, squeeze=False)
    for ax, (transform, setting) in zip(axes[0], sections):
        color = LINEAR_COLOR if transform == "linear" else MLP_COLOR
        rows = rows_of(transform, setting).set_index("system")
        for i, system in enumerate(systems):
            if system not in rows.index:
                continue
            fill = ORACLE_COLOR if system == "oracle" else color
            for j, (k, alpha) in enumerate(((10, 1.0), (100, 0.45))):
                value = 100 * rows.loc[system, f"mrecall@{k}"]
                x = i + (j - 0.5) * 0.38
                ax.bar(x, value, width=0.36, color=fill, alpha=alpha, edgecolor="black", linewidth=0.4,
                       hatch="//" if system == "oracle" else None)
                ax.text(x, value + 1.5, f"{value:.1f}", ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(systems)), [SYSTEM_LABELS[s] for s in systems], fontsize=7)
        ax.set_title(f"{'Linear' if transform == 'linear' else 'MLP'} / {SETTING_LABELS[setting]}", fontsize=9)
        ax.set_ylim(0, 112)
        ax.grid(axis="x", visible=False)
    axes[0][0].set_ylabel("MRecall (%)")
    legend = [Patch(facecolor=LINEAR_COLOR, edgecolor="black", label="Linear data"),
              Patch(facecolor=MLP_COLOR, edgecolor="black", label="MLP data"),
              Patch(facecolor=ORACLE_COLOR, edgecolor="black", hatch="//", label="Mean-of-targets oracle (one vector)"),
              Patch(facecolor="white", edgecolor="black", label="left bar: @10 (solid), right bar: @100 (light)")]
    fig.legend(handles=legend, loc="lower center", ncol=4, frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.06))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def save(fig, path: str | Path) -> None:
    """Write PNG and PDF side by side, atomically (`path` without suffix, or with either suffix)."""
    path = Path(path).with_suffix("")
    for suffix in ("png", "pdf"):
        with atomic_path(path.with_suffix(f".{suffix}")) as tmp:
            fig.savefig(tmp, format=suffix, dpi=200, bbox_inches="tight",
                        metadata={"CreationDate": None} if suffix == "pdf" else {"Software": None})
