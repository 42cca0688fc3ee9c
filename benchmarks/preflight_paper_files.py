"""The memory preflight of every paper training file, on one GPU and on four: the table of
`docs/paper_scale.md` ("Memory of the paper files").

    .venv/bin/python benchmarks/preflight_paper_files.py   # seconds; prints the Markdown table

Each file is read as notebook 04 (or 02) reads it, and projected with the paper's data sizes (the
run's own preflight reads them from the prepared benchmark instead): AmbigQA 5,044 training
questions with at most 10 answers each (AmbigQA's `train_light.json` as read here: 4,573 kept
questions, the largest answer set 10), QAMPARI 32,023 with 5-8, prompts of 65 tokens (the
authors' instruction in the chat template and a question), 1,536-dimensional targets, 1M float16
negatives, 25M corpus passages; the synthetic task's 20,000 inputs with 5 targets, one input
position, 200,000 float32 negatives of 1,024 dimensions.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from amer_lib.core.backbones import Description, describe  # noqa: E402
from amer_lib.params import from_files  # noqa: E402
from amer_lib.runs import memory  # noqa: E402

H100 = 78 * memory.GIB  # what torch leaves usable of an H100 80GB (it reports 79.1 GiB in all)
PROMPT_TOKENS = 65
PAPER_DATA = {
    "ambigqa": dict(training_questions=5044, max_targets=10),
    "qampari": dict(training_questions=32023, max_targets=8),
}
REAL_SIZES = dict(embedding_dim=1536, negatives=1_000_000, corpus_size=25_000_000)
SYNTHETIC = dict(
    prompt_tokens=1, training_questions=20000, max_targets=5, embedding_dim=1024, negatives=200_000, corpus_size=200_000
)
FILES = [f"04_real_data/{d}_{b}.yaml" for b in ("llama1b", "llama3b", "llama8b", "qwen4b") for d in PAPER_DATA] + [
    "02_synthetic/paper_scale.yaml"
]


def paper_workload(name: str) -> tuple[Description, memory.Workload]:
    """A paper file's backbone and workload on the GPUs its file names (one process a GPU)."""
    notebook = name.split("/")[0]
    params = from_files(ROOT / "notebooks" / f"{notebook}.ipynb", ROOT / "params" / name)
    backbone = describe(params.backbone)
    if notebook == "02_synthetic":
        work = memory.workload_of(params, **SYNTHETIC, negative_bytes=4)
    else:
        data = PAPER_DATA[params.datasets[0]]
        work = memory.workload_of(params, prompt_tokens=PROMPT_TOKENS, **data, **REAL_SIZES)
    return backbone, work


def rows() -> list[dict]:
    """Each paper file on 1 and 4 GPUs: the file's own layout, its peak, and the largest micro-batch
    that fits an H100 (78 GiB) with what it leaves free."""
    found = []
    for name in FILES:
        backbone, work = paper_workload(name)
        for gpus in (1, 4):
            on = replace(work, nproc=gpus)
            projected = memory.plan(backbone, on)
            peak = projected.device_peak
            fits = memory.settings_that_fit(backbone, replace(on, micro_batch_size=0), H100)
            found.append(
                {
                    "file": name,
                    "gpus": gpus,
                    "micro_batch": on.micro_batch,
                    "checkpointing": on.gradient_checkpointing,
                    "tokens": on.sequence,
                    "peak_gib": round(peak / memory.GIB, 1),
                    "fits_h100": peak <= H100,
                    "host_gib": round(projected.host_peak / memory.GIB, 1),
                    "largest_that_fits": fits[0] if fits else "none",
                }
            )
    return found


def markdown(table: list[dict]) -> str:
    lines = [
        "| file | GPUs | questions per micro-batch | tokens | projected GPU peak | fits an H100 | host per process "
        "| the largest micro-batch that fits an H100 (peak, free of 78 GiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        checkpointing = " (checkpointed)" if r["checkpointing"] else ""
        lines.append(
            f"| `{r['file']}` | {r['gpus']} | {r['micro_batch']}{checkpointing} | {r['tokens']} | "
            f"{r['peak_gib']} GiB | {'yes' if r['fits_h100'] else '**no**'} | {r['host_gib']} GiB | "
            f"{r['largest_that_fits']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(rows()))
