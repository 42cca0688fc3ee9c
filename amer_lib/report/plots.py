"""Figures in the paper's style."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.patches import Patch

from amer_lib.core.merge import MERGES
from amer_lib.io import atomic_path

LINEAR_COLOR = "#f6a25c"  # the paper's light orange
MLP_COLOR = "#5c95c2"  # the paper's light blue
SYSTEM_LABELS = {"single": "Single-\nQuery", "oracle": "Mean of\ntargets", "amer": "AMER"}
SETTING_LABELS = {"single": "Single", "multi": "Multi", "ood": "OOD"}


EXAMPLE_QUERY = ["kinds", "of", "tree?"]  # Figure 2's text query, one box per prompt token


def figure2(layout, path: str | Path | None = None, prompt_labels: list[str] | None = None):
    """Figure 2: AMER in training (left) and at inference (right), both drawn from
    `model.sequence_layout` (a list of `Position`), as the paper's figure has them.

    Bottom row: what each position is fed: the query's tokens (`prompt_labels`, by default a text
    query), then, in training, the gold targets in a random order or, with the scheduled-sampling
    probability p, the previous output; at inference the previous output. Middle: the decoder LM.
    Top: the query embeddings e_j = W_out h read at their positions; in training matched to the
    gold set (Hungarian) for the InfoNCE loss, at inference each searched and merged round-robin.
    Dashed arrows: an output fed back as the next input."""
    sns.set_theme(style="white", context="paper")
    n_positions = len(layout)
    prompt_labels = prompt_labels or EXAMPLE_QUERY
    n_prompt = sum(p.fed == "prompt" for p in layout)
    if len(prompt_labels) != n_prompt:
        raise ValueError(f"{len(prompt_labels)} prompt labels for a layout with {n_prompt} prompt positions")
    fig, axes = plt.subplots(1, 2, figsize=(2 * (0.95 * n_positions + 1.2), 4.9))
    for ax, training in zip(axes, (True, False)):
        _architecture(ax, layout, prompt_labels, training)
    fig.tight_layout(w_pad=2.0)
    if path is not None:
        save(fig, path)
    return fig


def _architecture(ax, layout, prompt_labels: list[str], training: bool) -> None:
    """One panel of Figure 2 on `ax`."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    def box(x, y, w, h, text, color, fontsize=9):
        style = "round,pad=0.02,rounding_size=0.08"
        ax.add_patch(
            FancyBboxPatch(
                (x - w / 2, y - h / 2), w, h, boxstyle=style, facecolor=color, edgecolor="black", linewidth=0.8
            )
        )
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, zorder=5)

    def arrow(start, end, **kw):
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=9, linewidth=0.9, **kw))

    n_positions = len(layout)
    outputs = [p for p in layout if p.read_output is not None]
    first, last = outputs[0].index, outputs[-1].index
    box((n_positions - 1) / 2, 1.5, n_positions - 0.2, 0.7, "decoder LM", "#eeeeee")
    for p in layout:
        if p.fed == "prompt":
            fed, color = prompt_labels[p.index], "#fde9d6"
        elif training:
            fed, color = (
                f"$W_{{in}}\\,d_{{\\pi({p.fed_output + 1})}}$\nor $W_{{in}}\\,e_{{{p.fed_output + 1}}}$",
                "#e3d6f2",
            )
        else:
            fed, color = f"$W_{{in}}\\,e_{{{p.fed_output + 1}}}$", "#d6e6f2"
        box(p.index, 0.3, 0.9, 0.6, fed, color, fontsize=8 if training and p.fed == "output" else 9)
        arrow((p.index, 0.6), (p.index, 1.15), color="black")
    for p in outputs:
        j = p.read_output
        arrow((p.index, 1.85), (p.index, 2.45), color="black")
        box(p.index, 2.7, 0.9, 0.5, f"$e_{{{j + 1}}}=W_{{out}}h$", "#aecbe0")
        arrow((p.index, 2.95), (p.index, 3.45), color="black")
        if not training:
            box(p.index, 3.7, 0.9, 0.5, f"top-k of $e_{{{j + 1}}}$", "white", fontsize=8)
            arrow((p.index, 3.95), (p.index, 4.32), color="black")
        fed_at = [q for q in layout if q.fed_output == j]
        if fed_at:
            x = fed_at[0].index
            arrow(
                (p.index + 0.45, 2.7), (x - 0.1, 0.6), color=MLP_COLOR, linestyle="--", connectionstyle="arc3,rad=-0.25"
            )
            if training:
                ax.text(x - 0.42, 1.0, "p", color=MLP_COLOR, fontsize=9, style="italic", zorder=6)
    span = last - first + 0.9
    if training:
        box((first + last) / 2, 3.7, span, 0.5, "Hungarian matching to the gold set $\\{d_1,\\dots,d_m\\}$", "#f2e3d6")
        arrow(((first + last) / 2, 3.95), ((first + last) / 2, 4.32), color="black")
        box((first + last) / 2, 4.55, span, 0.45, "InfoNCE over the matched pairs, in-batch negatives", "#dbe8d0")
        ax.text(
            (n_positions - 1) / 2,
            -0.35,
            "$\\pi$: the gold targets in a random order; each is replaced by the previous output with\n"
            "probability $p=\\min(0.8,\\ \\mathrm{step}/\\mathrm{total})$ (scheduled sampling)",
            ha="center",
            va="top",
            fontsize=8,
        )
    else:
        box((first + last) / 2, 4.55, span, 0.45, "round-robin merge → one ranked list", "#dbe8d0")
        ax.text(
            (n_positions - 1) / 2, -0.35, "each output is fed back as the next input", ha="center", va="top", fontsize=8
        )
    ax.text(-0.55, 0.3, "fed", ha="right", va="center", fontsize=8)
    ax.text(-0.55, 2.7, "read", ha="right", va="center", fontsize=8)
    ax.set_title("Training" if training else "Inference", fontsize=11, fontweight="bold")
    ax.set_xlim(-1.3, n_positions - 0.3)
    ax.set_ylim(-1.0, 4.95)
    ax.axis("off")


def figure3(table, path: str | Path | None = None):
    """Figure 3 in the paper's layout: one section per input distribution (Single / Multi / OOD),
    single-query in its left half and AMER in its right half, Linear (orange) and MLP (blue) bars
    side by side, MRecall@10 solid and @100 light. The mean-of-targets oracle (not in the paper)
    gets a panel of its own at the right.

    `table` has columns transform, setting, system, mrecall@10, mrecall@100.
    """
    sns.set_theme(style="whitegrid", context="paper")
    settings = [s for s in SETTING_LABELS if (table["setting"] == s).any()]
    trained = [s for s in ("single", "amer") if (table["system"] == s).any()]
    has_oracle = bool((table["system"] == "oracle").any())
    fig, axes = plt.subplots(
        1,
        1 + has_oracle,
        figsize=(9.5 + 3.2 * has_oracle, 3.4),
        sharey=True,
        squeeze=False,
        gridspec_kw={"width_ratios": [len(trained) * len(settings)] + [len(settings)] * has_oracle},
    )
    _synthetic_bars(axes[0][0], table, settings, trained)
    axes[0][0].set_ylabel("MRecall (%)")
    if has_oracle:
        _synthetic_bars(axes[0][1], table, settings, ["oracle"])
        axes[0][1].set_title("extra: mean-of-targets oracle (one vector)", fontsize=8)
    legend = [
        Patch(facecolor=LINEAR_COLOR, edgecolor="black", label="Linear, MRecall@10"),
        Patch(facecolor=LINEAR_COLOR, alpha=0.45, edgecolor="black", label="Linear, MRecall@100"),
        Patch(facecolor=MLP_COLOR, edgecolor="black", label="MLP, MRecall@10"),
        Patch(facecolor=MLP_COLOR, alpha=0.45, edgecolor="black", label="MLP, MRecall@100"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=4, frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.07))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def _synthetic_bars(ax, table, settings: list[str], systems: list[str]) -> None:
    """One section per setting, one half per system, four bars per half (transform x k)."""
    bars = [(t, k) for t in ("linear", "mlp") for k in (10, 100)]
    width = 0.8 / len(bars)
    for s_index, setting in enumerate(settings):
        for h_index, system in enumerate(systems):
            center = s_index * len(systems) + h_index
            for b_index, (transform, k) in enumerate(bars):
                row = table[
                    (table["transform"] == transform) & (table["setting"] == setting) & (table["system"] == system)
                ]
                if not len(row):
                    continue
                value = 100 * float(row[f"mrecall@{k}"].iloc[0])
                x = center + (b_index - (len(bars) - 1) / 2) * width
                ax.bar(
                    x,
                    value,
                    width=width * 0.95,
                    color=LINEAR_COLOR if transform == "linear" else MLP_COLOR,
                    alpha=1.0 if k == 10 else 0.45,
                    edgecolor="black",
                    linewidth=0.4,
                )
                ax.text(
                    x,
                    value + 1.0,
                    f"{value:.0f}" if value in (0, 100) else f"{value:.1f}",
                    ha="center",
                    va="bottom",
                    fontsize=5,
                    rotation=90,
                )
        if s_index:
            ax.axvline(s_index * len(systems) - 0.5, color="black", linewidth=0.8)
        ax.text(
            s_index * len(systems) + (len(systems) - 1) / 2,
            121,
            SETTING_LABELS[setting],
            ha="center",
            fontsize=9,
            fontweight="bold",
        )
    ax.set_xticks(
        range(len(settings) * len(systems)), [SYSTEM_LABELS[s] for _ in settings for s in systems], fontsize=7
    )
    ax.set_xlim(-0.5, len(settings) * len(systems) - 0.5)
    ax.set_ylim(0, 130)
    ax.set_yticks(range(0, 101, 20))
    ax.grid(axis="x", visible=False)


def save(fig, path: str | Path) -> None:
    """Write PNG and PDF side by side, atomically (`path` without suffix, or with either suffix)."""
    path = Path(path).with_suffix("")
    for suffix in ("png", "pdf"):
        with atomic_path(path.with_suffix(f".{suffix}")) as tmp:
            fig.savefig(
                tmp,
                format=suffix,
                dpi=200,
                bbox_inches="tight",
                metadata={"CreationDate": None} if suffix == "pdf" else {"Software": None},
            )


REAL_SYSTEM_COLORS = {"single": "#9a9a9a", "query_expansion": "#c7b37a", "rerank": "#8fb996", "amer": MLP_COLOR}
REAL_SYSTEM_LABELS = {
    "single": "Single-Query",
    "query_expansion": "+Query Expansion",
    "rerank": "+Re-ranking",
    "amer": "AMER",
}


BACKBONE_LABELS = {
    "llama8b": "Llama-8B",
    "qwen4b": "Qwen3-4B",
    "llama3b": "Llama-3B",
    "llama1b": "Llama-1B",
    "minilm": "MiniLM (offline)",
    "smollm2": "SmolLM2-135M",
}


def backbone_order(backbones) -> list[str]:
    """The paper's order (Tables 5-8: 8B, 4B, 3B, 1B), then any other backbone by name."""
    paper = [b for b in ("llama8b", "qwen4b", "llama3b", "llama1b") if b in backbones]
    return paper + sorted(set(backbones) - set(paper))


def figure4(summaries: dict[str, list[dict]], path: str | Path | None = None):
    """Figure 4: MRecall@100 (mean and std over seeds) for every backbone side by side, one row
    of panels per dataset, whole set left and low-similarity set right, one bar per system;
    * / † mark a system significantly ahead of / behind single-query (two-sided p < 0.05 of the
    bootstrap over seeds and questions, Holm-corrected across each backbone's comparisons, as in its
    Table 5-8); the bars' ± is the population std over seeds (ddof 0). `summaries`: backbone -> its
    summary rows."""
    from amer_lib.report.summaries import with_marks

    sns.set_theme(style="whitegrid", context="paper")
    summaries = {backbone: with_marks(rows) for backbone, rows in summaries.items()}
    backbones = backbone_order(summaries)
    datasets = list(dict.fromkeys(r["dataset"] for b in backbones for r in summaries[b]))
    systems = list(dict.fromkeys(r["system"] for b in backbones for r in summaries[b]))
    width = 0.8 / len(systems)
    fig, axes = plt.subplots(
        len(datasets),
        2,
        figsize=(max(5.0, 1.6 * len(backbones) + 2.5) * 2 / 1.6, 2.8 * len(datasets)),
        squeeze=False,
        sharey="row",
    )
    for ax_row, dataset in zip(axes, datasets):
        for ax, (subset, subset_name) in zip(ax_row, (("whole", "whole set"), ("low_sim", "low-similarity set"))):
            for b_index, backbone in enumerate(backbones):
                rows = {r["system"]: r for r in summaries[backbone] if r["dataset"] == dataset}
                for s_index, system in enumerate(systems):
                    if system not in rows:
                        continue
                    row = rows[system]
                    x = b_index + (s_index - (len(systems) - 1) / 2) * width
                    value, std = row[f"{subset}_mean"], row[f"{subset}_std"]
                    ax.bar(
                        x,
                        value,
                        width=width * 0.95,
                        yerr=std,
                        capsize=2,
                        color=REAL_SYSTEM_COLORS[system],
                        edgecolor="black",
                        linewidth=0.4,
                        label=(row.get("label") or REAL_SYSTEM_LABELS[system]) if b_index == 0 else None,
                    )
                    mark = row.get(f"{subset}_mark", "")  # single-query: compared with nothing
                    ax.text(x, value + std + 0.5, f"{value:.1f}{mark}", ha="center", va="bottom", fontsize=6)
            ax.set_xticks(range(len(backbones)), [BACKBONE_LABELS.get(b, b) for b in backbones], fontsize=8)
            ax.set_title(f"{DATASET_LABELS.get(dataset, dataset)}: {subset_name}", fontsize=9)
            ax.grid(axis="x", visible=False)
        ax_row[0].set_ylabel("MRecall@100 (%)")
    return _finish_with_legend(fig, axes[0][0], path, "", offset=-0.06 / len(datasets) - 0.02)


def _finish_with_legend(fig, ax, path: str | Path | None, title: str, offset: float):
    """One legend under the panels (from `ax`), the title above, saved when `path` is given."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=8, bbox_to_anchor=(0.5, offset)
    )
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def learning_curve_figure(curve_rows: list[dict], path: str | Path | None = None, title: str = ""):
    """Validation MRecall@100 against training steps (`report.summaries.learning_curves`): one
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
            ax.fill_between(
                steps,
                [m - s for m, s in zip(mean, std)],
                [m + s for m, s in zip(mean, std)],
                color=color,
                alpha=0.2,
                linewidth=0,
            )
        ax.set_title(f"{dataset}: {'whole' if subset == 'whole' else 'low-similarity'} validation set", fontsize=8)
        ax.set_xlabel("training step")
    axes[0][0].set_ylabel("validation MRecall@100 (%)")
    return _finish_with_legend(fig, axes[0][0], path, title, offset=-0.1)


def vector_count_figure(rows: list[dict], path: str | Path | None = None):
    """MRecall@100 (solid) and @10 (dashed) against the number of generated vectors searched,
    one line per merge, one panel per benchmark."""
    sns.set_theme(style="whitegrid", context="paper")
    benchmarks = list(dict.fromkeys(r["benchmark"] for r in rows))
    fig, axes = plt.subplots(1, len(benchmarks), figsize=(3.3 * len(benchmarks), 3.0), squeeze=False)
    for ax, benchmark in zip(axes[0], benchmarks):
        for merge in dict.fromkeys(r["merge"] for r in rows):
            line = sorted(
                (r for r in rows if r["benchmark"] == benchmark and r["merge"] == merge), key=lambda r: r["n"]
            )
            n = [r["n"] for r in line]
            ax.plot(
                n,
                [100 * r["mrecall@100"] for r in line],
                "-o",
                ms=3,
                color=MERGES[merge].color,
                label=f"{MERGES[merge].label}, @100",
            )
            ax.plot(
                n,
                [100 * r["mrecall@10"] for r in line],
                "--s",
                ms=3,
                color=MERGES[merge].color,
                alpha=0.7,
                label=f"{MERGES[merge].label}, @10",
            )
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


RETRIEVER_LABELS = {
    "bm25": "BM25",
    "minilm": "all-MiniLM-L6-v2",
    "contriever-msmarco": "Contriever",
    "stella-400m": "Stella-400M",
    "inf-retriever-v1-1.5b": "Inf-Retriever-1.5B",
    "nv-embed-v2": "NV-Embed-v2",
}
DATASET_LABELS = {
    "ambigqa": "AmbigQA",
    "qampari": "QAMPARI",
    "wordnet_senses": "WordNet senses",
    "wordnet_kinds": "WordNet kinds",
    **{f"compound_k{k}": f"compound, k = {k}" for k in range(1, 9)},
}


def figure1(rows: list[dict], distance: str, path: str | Path | None = None):
    """Figure 1: MRecall@100 per quartile of target distance, one line per retriever; one row of
    panels per dataset: the whole test set, then each answer-set size (n = questions per panel)."""
    sns.set_theme(style="whitegrid", context="paper")
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    columns = {d: list(dict.fromkeys(r["answers"] for r in rows if r["dataset"] == d)) for d in datasets}
    width = max(map(len, columns.values()))
    retrievers = list(dict.fromkeys(r["retriever"] for r in rows))
    colors = dict(zip(retrievers, sns.color_palette("deep", len(retrievers))))
    fig, axes = plt.subplots(
        len(datasets), width, figsize=(2.3 * width, 2.4 * len(datasets)), sharey="row", squeeze=False
    )
    for row_axes, dataset in zip(axes, datasets):
        for ax, answers in zip(row_axes, columns[dataset]):
            panel = [r for r in rows if r["dataset"] == dataset and r["answers"] == answers]
            for retriever in retrievers:
                line = [r for r in panel if r["retriever"] == retriever]
                ax.plot(
                    [r["bin"] for r in line],
                    [r["mrecall"] for r in line],
                    "-o",
                    ms=3.5,
                    color=colors[retriever],
                    label=RETRIEVER_LABELS.get(retriever, retriever),
                )
            questions = sum(r["questions"] for r in panel if r["retriever"] == retrievers[0])
            name = "whole test set" if answers == "all" else f"{answers} answers"
            ax.set_title(f"{name} (n={questions})", fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
        for ax in row_axes[len(columns[dataset]) :]:
            ax.set_visible(False)
        row_axes[0].set_ylabel(f"{DATASET_LABELS.get(dataset, dataset)}\nMRecall@100 (%)")
    for ax in axes[-1]:
        ax.set_xlabel(f"{distance} distance between targets", fontsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.05)
    )
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
    fig, axes = plt.subplots(
        1,
        len(datasets),
        figsize=(1.2 + 1.1 * (1 + len(rows) // len(datasets)) * len(datasets), 3.0),
        sharey=True,
        squeeze=False,
    )
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
            ax.text(
                x,
                value - error - 0.03 if below else value + error + 0.02,
                f"{value:.2f}",
                ha="center",
                va="top" if below else "bottom",
                fontsize=7,
            )
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_xticks(range(len(labels)), labels, fontsize=7)
        ax.set_title(DATASET_LABELS.get(dataset, dataset), fontsize=9)
        ax.grid(axis="x", visible=False)
        lowest = min(lowest, min(v - e for v, e in zip(values, errors)))
    axes[0][0].set_ylim(min(0.0, lowest - 0.15), 1.1)  # shared by every panel
    axes[0][0].set_ylabel("mean pairwise cosine\n(lower = more diverse)")
    legend = [
        Patch(facecolor=TARGET_COLOR, edgecolor="black", label="between targets (training set)"),
        Patch(facecolor=MLP_COLOR, edgecolor="black", label="between AMER's output vectors (test set)"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=2, frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


SAME_QUESTION_COLOR = "#1f77b4"  # Figure 6's blue
RANDOM_PAIR_COLOR = "#ff7f0e"  # Figure 6's orange


def figure6(rows: list[dict], path: str | Path | None = None):
    """Figure 6: cosine distance (1 - cos; the rows' `same_question_distance` and
    `random_pair_distance`) between two targets of the same question (blue) and between targets
    of two random questions (orange), per data source. Blue at or above orange
    is what a benchmark of diverse targets needs; reported (not measured) values are hatched."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(1.0 + 1.1 * len(rows), 3.0))
    for x, row in enumerate(rows):
        hatch = "//" if row["source"] == "paper (reported)" else None
        for offset, key, color in (
            (-0.2, "same_question_distance", SAME_QUESTION_COLOR),
            (0.2, "random_pair_distance", RANDOM_PAIR_COLOR),
        ):
            distance = row[key]
            ax.bar(x + offset, distance, width=0.38, color=color, edgecolor="black", linewidth=0.4, hatch=hatch)
            ax.text(x + offset, distance + 0.02, f"{distance:.2f}", ha="center", va="bottom", fontsize=7)
    names = [DATASET_LABELS.get(r["data"], r["data"]).replace(", ", ",\n") for r in rows]
    ax.set_xticks(range(len(rows)), names, fontsize=7)
    ax.set_ylabel("cosine distance (1 - cos)")
    ax.grid(axis="x", visible=False)
    legend = [
        Patch(facecolor=SAME_QUESTION_COLOR, edgecolor="black", label="two targets of the same question"),
        Patch(facecolor=RANDOM_PAIR_COLOR, edgecolor="black", label="targets of two random questions"),
        Patch(facecolor="white", edgecolor="black", hatch="//", label="reported in the paper"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=3, frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def count_matrix(true_counts, predicted_counts, max_n: int):
    """`[max_n, max_n]` share of the inputs with m true targets (row m - 1) given n vectors by
    the stop head (column n - 1); a row sums to 1 (0 where no input has m targets)."""
    matrix = np.zeros((max_n, max_n))
    np.add.at(matrix, (np.asarray(true_counts) - 1, np.asarray(predicted_counts) - 1), 1)
    return matrix / np.maximum(matrix.sum(1, keepdims=True), 1)


def predicted_count_figure(true_counts, predicted_counts, max_n: int, path: str | Path | None = None):
    """Notebook 07: how many vectors the stop head emits against how many targets an input has,
    each row the distribution over n of the inputs with that m (the diagonal is right)."""
    sns.set_theme(style="white", context="paper")
    matrix = count_matrix(true_counts, predicted_counts, max_n)
    fig, ax = plt.subplots(figsize=(3.6, 3.2))
    labels = list(range(1, max_n + 1))
    sns.heatmap(
        100 * matrix,
        ax=ax,
        cmap="Blues",
        vmin=0,
        vmax=100,
        annot=True,
        fmt=".0f",
        annot_kws={"fontsize": 6},
        xticklabels=labels,
        yticklabels=labels,
        cbar_kws={"label": "% of inputs with m targets"},
    )
    ax.set_xlabel("vectors emitted (stop head's n)")
    ax.set_ylabel("targets of the input (m)")
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def cost_recall_figure(points: list[dict], ylabel: str, path: str | Path | None = None):
    """Notebook 07: retrieval quality against search cost, one panel per benchmark. `points`:
    {panel, label, vectors, mean, std, fixed}; the fixed-n points are joined (the cost curve of
    searching more vectors), the others (an adaptive n, another merge) are marked and named, so
    a point above the curve gains at its cost and one left of it saves search."""
    sns.set_theme(style="whitegrid", context="paper")
    panels = list(dict.fromkeys(p["panel"] for p in points))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.2), squeeze=False)
    markers = iter(["o", "s", "D", "^", "v", "P", "X", "*"] * 4)
    marker_of: dict[str, str] = {}
    for ax, panel in zip(axes[0], panels):
        fixed = sorted((p for p in points if p["panel"] == panel and p["fixed"]), key=lambda p: p["vectors"])
        ax.errorbar(
            [p["vectors"] for p in fixed],
            [p["mean"] for p in fixed],
            yerr=[p["std"] for p in fixed],
            fmt="-o",
            ms=3,
            color="0.45",
            capsize=2,
            label="fixed n (round-robin)",
        )
        for p in (p for p in points if p["panel"] == panel and not p["fixed"]):
            marker = marker_of.setdefault(p["label"], next(markers))
            ax.errorbar(p["vectors"], p["mean"], yerr=p["std"], fmt=marker, ms=6, capsize=2, label=p["label"])
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel("vectors searched per input")
    axes[0][0].set_ylabel(ylabel)
    handles = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=3,
        frameon=False,
        fontsize=7,
        bbox_to_anchor=(0.5, -0.16),
    )
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig


def similarity_gain_figure(rows: list[dict], path: str | Path | None = None):
    """The paper's argument as a dose-response curve (notebook 06): per data source, how much closer
    two targets of one question are than two random ones (`gap`: same-question minus random-pair
    cosine) against AMER's MRecall@100 gain over single-query, in points (left) and relative to
    single-query (right), for the real-text sources with runs (the synthetic ones sit far off this
    scale). The compound benchmark's k = 1, 2, 3 are joined by a line: the same text and documents
    with the spread as the dial."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    measured = [r for r in rows if r["source"] == "real" and np.isfinite(r["gain_points"])]
    dial = sorted((r for r in measured if r["data"].startswith("compound_k")), key=lambda r: r["data"])
    panels = (
        ("gain_points", 1, "AMER - single-query, MRecall@100 (points)"),
        ("gain_relative", 100, "relative gain (%)"),
    )
    for ax, (key, scale, label) in zip(axes, panels):
        if dial:
            ax.plot([r["gap"] for r in dial], [scale * r[key] for r in dial], color=MLP_COLOR, zorder=1)
        for row in measured:
            color = MLP_COLOR if row in dial else "#9a9a9a"
            point = (row["gap"], scale * row[key])
            ax.scatter(*point, color=color, edgecolor="black", linewidth=0.4, zorder=2)
            text = DATASET_LABELS.get(row["data"], row["data"])
            ax.annotate(text, point, textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xlabel("same-question minus random-pair cosine of the targets")
        ax.set_ylabel(label)
    fig.tight_layout()
    if path is not None:
        save(fig, path)
    return fig
