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


REAL_SYSTEM_COLORS = {"single": "#9a9a9a", "query_expansion": "#c7b37a", "rerank": "#8fb996", "amer": MLP_COLOR}
REAL_SYSTEM_LABELS = {"single": "Single-Query", "query_expansion": "+Query Expansion", "rerank": "+Re-ranking",
                      "amer": "AMER"}


def figure3(summary_rows: list[dict], path: str | Path | None = None, title: str = ""):
    """Figure 3: MRecall@100 (mean and std over seeds) on the whole and the low-similarity test
    set, one panel per dataset, one bar per system; * marks p < 0.05 against single-query."""
    sns.set_theme(style="whitegrid", context="paper")
    datasets = list(dict.fromkeys(r["dataset"] for r in summary_rows))
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.6 * len(datasets), 3.2), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        rows = [r for r in summary_rows if r["dataset"] == dataset]
        width = 0.8 / len(rows)
        for i, row in enumerate(rows):
            for j, subset in enumerate(("whole", "low_sim")):
                x = j + (i - (len(rows) - 1) / 2) * width
                value = row[f"{subset}_mean"]
                ax.bar(x, value, width=width * 0.95, yerr=row[f"{subset}_std"], capsize=2,
                       color=REAL_SYSTEM_COLORS[row["system"]], edgecolor="black", linewidth=0.4,
                       label=(row.get("label") or REAL_SYSTEM_LABELS[row["system"]]) if j == 0 else None)
                star = "*" if row.get(f"{subset}_p", 1.0) < 0.05 else ""
                ax.text(x, value + row[f"{subset}_std"] + 0.5, f"{value:.1f}{star}", ha="center", va="bottom",
                        fontsize=6)
        ax.set_xticks([0, 1], ["Whole set", "Low-similarity set"])
        ax.set_title(dataset, fontsize=9)
        ax.grid(axis="x", visible=False)
    axes[0][0].set_ylabel("MRecall@100 (%)")
    return _finish_with_legend(fig, axes[0][0], path, title, offset=-0.08)


def _finish_with_legend(fig, ax, path: str | Path | None, title: str, offset: float):
    """One legend under the panels (from `ax`), the title above, saved when `path` is given."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=8,
               bbox_to_anchor=(0.5, offset))
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def learning_curve_figure(curve_rows: list[dict], path: str | Path | None = None, title: str = ""):
    """Validation MRecall@100 against training steps (`real_experiment.learning_curves`): one
    panel per dataset and subset (whole / low-similarity validation questions), one line per
    system with a band of one std over seeds."""
    sns.set_theme(style="whitegrid", context="paper")
    datasets = list(dict.fromkeys(r["dataset"] for r in curve_rows))
    fig, axes = plt.subplots(1, 2 * len(datasets), figsize=(3.0 * 2 * len(datasets), 2.8), squeeze=False)
    panels = [(dataset, subset) for dataset in datasets for subset in ("whole", "low_sim")]
    for ax, (dataset, subset) in zip(axes[0], panels):
        for system in dict.fromkeys(r["system"] for r in curve_rows if r["dataset"] == dataset):
            rows = [r for r in curve_rows if r["dataset"] == dataset and r["system"] == system]
            steps = [r["step"] for r in rows]
            mean = [r[f"{subset}_mean"] for r in rows]
            std = [r[f"{subset}_std"] for r in rows]
            color = REAL_SYSTEM_COLORS[system]
            ax.plot(steps, mean, marker="o", markersize=2.5, color=color, label=REAL_SYSTEM_LABELS[system])
            ax.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                            color=color, alpha=0.2, linewidth=0)
        ax.set_title(f"{dataset}: {'whole' if subset == 'whole' else 'low-similarity'} validation set", fontsize=8)
        ax.set_xlabel("training step")
    axes[0][0].set_ylabel("validation MRecall@100 (%)")
    return _finish_with_legend(fig, axes[0][0], path, title, offset=-0.1)


MERGE_COLORS = {"round_robin": MLP_COLOR, "rrf": LINEAR_COLOR, "max_score": "#7a9a5c"}
MERGE_LABELS = {"round_robin": "round-robin (paper)", "rrf": "reciprocal-rank fusion", "max_score": "max score"}


def vector_count_figure(rows: list[dict], path: str | Path | None = None):
    """MRecall@100 (solid) and @10 (dashed) against the number of generated vectors searched,
    one line per merge, one panel per benchmark."""
    sns.set_theme(style="whitegrid", context="paper")
    benchmarks = list(dict.fromkeys(r["benchmark"] for r in rows))
    fig, axes = plt.subplots(1, len(benchmarks), figsize=(3.3 * len(benchmarks), 3.0), squeeze=False)
    for ax, benchmark in zip(axes[0], benchmarks):
        for merge in dict.fromkeys(r["merge"] for r in rows):
            line = sorted((r for r in rows if r["benchmark"] == benchmark and r["merge"] == merge), key=lambda r: r["n"])
            n = [r["n"] for r in line]
            ax.plot(n, [100 * r["mrecall@100"] for r in line], "-o", ms=3, color=MERGE_COLORS[merge],
                    label=f"{MERGE_LABELS[merge]}, @100")
            ax.plot(n, [100 * r["mrecall@10"] for r in line], "--s", ms=3, color=MERGE_COLORS[merge], alpha=0.7,
                    label=f"{MERGE_LABELS[merge]}, @10")
        ax.set_title(benchmark, fontsize=9)
        ax.set_xlabel("generated vectors searched (n)")
        ax.set_xticks(sorted({r["n"] for r in rows}))
    axes[0][0].set_ylabel("MRecall (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, fontsize=7, bbox_to_anchor=(0.5, -0.14))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


RETRIEVER_LABELS = {"bm25": "BM25", "minilm": "all-MiniLM-L6-v2", "contriever-msmarco": "Contriever",
                    "stella-400m": "Stella-400M", "inf-retriever-v1-1.5b": "Inf-Retriever-1.5B",
                    "nv-embed-v2": "NV-Embed-v2"}
DATASET_LABELS = {"ambigqa": "AmbigQA", "qampari": "QAMPARI", "wordnet_senses": "WordNet senses",
                  "wordnet_kinds": "WordNet kinds"}


def figure1(rows: list[dict], distance: str, path: str | Path | None = None):
    """Figure 1: MRecall@100 per quartile of target distance, one line per retriever; one row of
    panels per dataset: the whole test set, then each answer-set size (n = questions per panel)."""
    sns.set_theme(style="whitegrid", context="paper")
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    columns = {d: list(dict.fromkeys(r["answers"] for r in rows if r["dataset"] == d)) for d in datasets}
    width = max(map(len, columns.values()))
    retrievers = list(dict.fromkeys(r["retriever"] for r in rows))
    colors = dict(zip(retrievers, sns.color_palette("deep", len(retrievers))))
    fig, axes = plt.subplots(len(datasets), width, figsize=(2.3 * width, 2.4 * len(datasets)), sharey="row",
                             squeeze=False)
    for row_axes, dataset in zip(axes, datasets):
        for ax, answers in zip(row_axes, columns[dataset]):
            panel = [r for r in rows if r["dataset"] == dataset and r["answers"] == answers]
            for retriever in retrievers:
                line = [r for r in panel if r["retriever"] == retriever]
                ax.plot([r["bin"] for r in line], [r["mrecall"] for r in line], "-o", ms=3.5, color=colors[retriever],
                        label=RETRIEVER_LABELS.get(retriever, retriever))
            questions = sum(r["questions"] for r in panel if r["retriever"] == retrievers[0])
            name = "whole test set" if answers == "all" else f"{answers} answers"
            ax.set_title(f"{name} (n={questions})", fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
        for ax in row_axes[len(columns[dataset]):]:
            ax.set_visible(False)
        row_axes[0].set_ylabel(f"{DATASET_LABELS.get(dataset, dataset)}\nMRecall@100 (%)")
    for ax in axes[-1]:
        ax.set_xlabel(f"{distance} distance between targets", fontsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=8,
               bbox_to_anchor=(0.5, -0.05))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


TARGET_COLOR = "#a6cee3"  # the paper's "Between Targets" blue


def figure5(rows: list[dict], path: str | Path | None = None):
    """Figure 5: mean pairwise cosine among AMER's generated vectors per backbone (mean and std
    over seeds) beside the cosine among the training targets; one panel per dataset. Lower is
    more diverse."""
    sns.set_theme(style="whitegrid", context="paper")
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(datasets), figsize=(1.2 + 1.1 * (1 + len(rows) // len(datasets)) * len(datasets), 3.0),
                             sharey=True, squeeze=False)
    lowest = 0.0
    for ax, dataset in zip(axes[0], datasets):
        panel = [r for r in rows if r["dataset"] == dataset]
        labels, values, errors, colors = ["between\ntargets"], [panel[0]["train_target_cos"]], [0.0], [TARGET_COLOR]
        for row in panel:
            labels.append(f"AMER,\n{row['backbone']}")
            values.append(row["output_cos_mean"])
            errors.append(row["output_cos_std"])
            colors.append(MLP_COLOR)
        ax.bar(range(len(values)), values, color=colors, edgecolor="black", linewidth=0.4)
        ax.errorbar(range(1, len(values)), values[1:], yerr=errors[1:], fmt="none", ecolor="black", capsize=2)
        for x, (value, error) in enumerate(zip(values, errors)):
            below = value < 0  # a negative bar is labelled under its end
            ax.text(x, value - error - 0.03 if below else value + error + 0.02, f"{value:.2f}", ha="center",
                    va="top" if below else "bottom", fontsize=7)
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_xticks(range(len(labels)), labels, fontsize=7)
        ax.set_title(DATASET_LABELS.get(dataset, dataset), fontsize=9)
        ax.grid(axis="x", visible=False)
        lowest = min(lowest, min(v - e for v, e in zip(values, errors)))
    axes[0][0].set_ylim(min(0.0, lowest - 0.15), 1.1)  # shared by every panel
    axes[0][0].set_ylabel("mean pairwise cosine\n(lower = more diverse)")
    legend = [Patch(facecolor=TARGET_COLOR, edgecolor="black", label="between targets (training set)"),
              Patch(facecolor=MLP_COLOR, edgecolor="black", label="between AMER's output vectors (test set)")]
    fig.legend(handles=legend, loc="lower center", ncol=2, frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def target_diversity_figure(rows: list[dict], path: str | Path | None = None):
    """The appendix figure: cosine between two targets of one question and between targets of two
    random questions, per data source; reported (not measured) values are hatched."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(1.0 + 1.1 * len(rows), 3.0))
    for x, row in enumerate(rows):
        hatch = "//" if row["source"] == "paper (reported)" else None
        for offset, key, color in ((-0.2, "same_question_cos", MLP_COLOR), (0.2, "random_pair_cos", ORACLE_COLOR)):
            ax.bar(x + offset, row[key], width=0.38, color=color, edgecolor="black", linewidth=0.4, hatch=hatch)
            ax.text(x + offset, max(row[key], 0) + 0.02, f"{row[key]:.2f}", ha="center", va="bottom", fontsize=7)
    names = [DATASET_LABELS.get(r["data"], r["data"]).replace(", ", ",\n") for r in rows]
    ax.set_xticks(range(len(rows)), names, fontsize=7)
    ax.set_ylabel("cosine similarity")
    ax.axhline(0, color="black", linewidth=0.5)
    ax.grid(axis="x", visible=False)
    legend = [Patch(facecolor=MLP_COLOR, edgecolor="black", label="two targets of the same question"),
              Patch(facecolor=ORACLE_COLOR, edgecolor="black", label="targets of two random questions"),
              Patch(facecolor="white", edgecolor="black", hatch="//", label="reported in the paper")]
    fig.legend(handles=legend, loc="lower center", ncol=3, frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig
