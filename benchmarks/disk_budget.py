"""The disk the paper at scale takes, step by step: the table of `docs/paper_scale.md` ("Disk budget").

    .venv/bin/python benchmarks/disk_budget.py   # seconds; prints the Markdown table, writes disk_budget.json

Every size is a *projection* to the paper's 25M passages, with its arithmetic in the table: from
this repository's measurements where it has them (the document store and the BM25 index per million
passages, `benchmarks/prep.json`, measured by `bench_prep.py` on 2 cores), from the byte layout the
code writes (float16 shards: rows x dimensions x 2 bytes; the BM25 build's runs: three int32 per
posting against the index's float32 score and int32 document, so 12 / 8 of the index), from
parameter counts (backbones counted on the meta device from their published configs; encoders
from their model cards), or from the file sizes the hub lists (named in the row). The paper files'
encoders and backbones are read from `params/`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from amer_lib.core.backbones import backbone_config, describe, get_backbone  # noqa: E402
from amer_lib.data.encoders import get_encoder_spec  # noqa: E402
from amer_lib.io import write_text  # noqa: E402

GB = 1e9
PASSAGES = 25_000_000
MEASURED_AT = "4000000"  # prep.json's largest run: its per-million rates are projected
ID_BYTES = 12  # one QAMPARI id ("<page>__<chunk>", about 11 characters) and its newline in a shard's .ids
# a chunk line of QAMPARI's jsonl, as its chunking script writes it (models/retrievers/BM25/chunk_wiki.py):
# id, contents (title + about 100 words, ~640 bytes) and meta, which repeats the text ("content") with
# revid, url, title, file_path, page_id, chunk_id (~800 bytes); about 760 bytes if meta holds url and title only
CHUNK_LINE_BYTES = (760, 1450)
# the question files: AmbigQA's light files measured (tests/fixtures/published/whole/), NQ-open's
# as AmbigQA's README lists them, QAMPARI's train file as 61,911 x the bytes of its one whole
# record in tests/fixtures/published/ (3,880), dev as 1,000 x the mean of the four dev records (3,147)
QUESTION_BYTES = 999_774 + 3_414_352 + 1_100_000 + 489_000 + 61_911 * 3_880 + 1_000 * 3_147
TARBALL_GB = 6.4  # chunked_wikipedia.tar.gz as a third party's notes report it (not downloaded here)
# files the hub lists (GB): the weights as `hf download` stores them
LISTED = {
    "nvidia/NV-Embed-v2": (5.0 + 4.92 + 5.0 + 0.789, "4 safetensors listed: 5 + 4.92 + 5 + 0.789 GB"),
    "meta-llama/Llama-3.1-8B-Instruct": (4.98 + 5.0 + 4.92 + 1.17, "4 safetensors listed: 4.98 + 5 + 4.92 + 1.17 GB"),
}
# encoders' parameters (their model cards) and bytes per parameter as published: assumed, not read here
# (inf-retriever 16-bit as its 7B sibling's bf16 upload, Contriever and Stella float32)
ENCODER_WEIGHTS = {
    "infly/inf-retriever-v1-1.5b": (1.54e9, 2, "1.54B x 2 bytes (16-bit weights)"),
    "facebook/contriever-msmarco": (0.11e9, 4, "0.11B x 4 bytes (float32)"),
    "NovaSearch/stella_en_400M_v5": (0.435e9, 4, "0.435B x 4 bytes (float32)"),
}
PAPER_RUNS = (
    "04_real_data/{dataset}_{backbone}.yaml",
    ("ambigqa", "qampari"),
    ("llama1b", "llama3b", "llama8b", "qwen4b"),
)
RUNS_PER_FILE = 6  # single-query and AMER, 3 seeds
SYNTHETIC_RUNS = 12  # notebook 02's paper_scale.yaml: 6 settings x 2 systems


def params(name: str) -> dict:
    return yaml.safe_load((ROOT / "params" / name).read_text())


def measured_gib(field: str) -> float:
    """GiB per million passages in prep.json's largest run."""
    run = json.loads((ROOT / "benchmarks" / "prep.json").read_text())[MEASURED_AT]["new"]
    return run[field] / (int(MEASURED_AT) / 1e6)


def row(step: str, what: str, gb: float, how: str) -> dict:
    return dict(step=step, what=what, gb=gb, how=how)


def shards(name: str) -> dict:
    dim = get_encoder_spec(name).dim
    size = (PASSAGES * dim * 2 + PASSAGES * ID_BYTES) / GB
    return dict(what=f"{name}'s float16 shards", gb=size, how=f"25M x {dim} x 2 bytes + 25M ids x {ID_BYTES} bytes")


def trained_state(backbone: str, full: bool, dim: int) -> int:
    """Parameters a run trains (and its best.pt keeps in float32): LoRA and the two projections,
    or the whole backbone and the projections."""
    described = describe(backbone)
    trained = described.parameters if full else described.lora_parameters
    return trained + 2 * dim * described.hidden_size


def weights(model_id: str, backbone: str | None = None) -> dict:
    if model_id in LISTED:
        size, how = LISTED[model_id]
    elif backbone is not None:
        config = backbone_config(backbone)
        n = describe(backbone).parameters
        head = 0 if config.get("tie_word_embeddings") else config["vocab_size"] * config["hidden_size"]
        size = 2 * (n + head) / GB
        how = f"{(n + head) / 1e9:.2f}B x 2 bytes (bfloat16; its published config, LM head tied)"
    else:
        n, width, how = ENCODER_WEIGHTS[model_id]
        size = n * width / GB
    return dict(what=f"`{model_id}`", gb=size, how=how)


def rows() -> list[dict]:
    prep, figure1 = params("03_real_data_prep/paper.yaml"), params("01_failure_analysis/paper.yaml")
    mapping = list(dict.fromkeys([prep["encoder"], *prep["mapping_encoders"]]))
    figure1_only = [r for r in figure1["retrievers"] if r != "bm25" and r not in mapping]
    backbones = PAPER_RUNS[2]
    store, index = (measured_gib(f) * 2**30 * PASSAGES / 1e6 / GB for f in ("store_gib", "index_gib"))
    low, high = (PASSAGES * b / GB for b in CHUNK_LINE_BYTES)
    found = [
        row("1. downloads", "data/raw/ question files", QUESTION_BYTES / GB, "measured and listed sizes"),
        row("1. downloads", "data/raw/chunked_wikipedia.tar.gz", TARBALL_GB, "as reported; deletable once read"),
        row(
            "1. downloads",
            "data/qampari_wikipedia_chunks.jsonl",
            high,
            f"25M lines x 760-1,450 bytes: {low:.0f}-{high:.0f} GB",
        ),
    ]
    encoders = [get_encoder_spec(name).model_id for name in [*mapping, *figure1_only]]
    found += [dict(step="1. downloads", **weights(model_id)) for model_id in encoders]
    found += [dict(step="1. downloads", **weights(get_backbone(b).model_id, b)) for b in backbones]
    found += [
        *[dict(step="2. encode (or notebook 03)", **shards(name)) for name in mapping],
        row(
            "notebook 03", "corpus_store/", store, f"25 x the measured {measured_gib('store_gib'):.3f} GiB per million"
        ),
        row("notebook 03", "bm25/", index, f"25 x the measured {measured_gib('index_gib'):.3f} GiB per million"),
        row("notebook 03", "bm25/.runs-* (temporary, during the build)", index * 12 / 8, "12 / 8 of the index"),
        *[dict(step="notebook 01 (Figure 1)", **shards(name)) for name in figure1_only],
    ]
    lora = {b: 4 * trained_state(b, False, 1536) for b in backbones}
    per_backbone = ", ".join(f"{b} {lora[b] / GB:.2f} GB" for b in backbones)
    kept = sum(len(PAPER_RUNS[1]) * RUNS_PER_FILE * size for size in lora.values()) / GB
    predicted = sum(len(PAPER_RUNS[1]) * 3 * size for size in lora.values()) / GB
    synthetic = 4 * trained_state("llama1b", True, 1024)
    found += [
        row(
            "notebook 04",
            "best.pt of the 8 files' 48 runs",
            kept,
            f"12 runs per backbone x 4 bytes x (LoRA + projections): {per_backbone}",
        ),
        row("notebook 05", "best.pt of the 24 always-predicted runs", predicted, "3 seeds per 04 file, as above"),
        row(
            "notebook 02",
            f"best.pt of its {SYNTHETIC_RUNS} runs (full fine-tuning)",
            SYNTHETIC_RUNS * synthetic / GB,
            f"{SYNTHETIC_RUNS} x 4 bytes x {synthetic / 4 / 1e9:.2f}B",
        ),
        row(
            "while a run trains",
            "its checkpoint.pt (weights and AdamW's two moments)",
            3 * synthetic / GB,
            f"3 x its best.pt (notebook 02's; Llama-8B LoRA: {3 * lora['llama8b'] / GB:.1f} GB)",
        ),
    ]
    return found


def totals(table: list[dict]) -> dict:
    """GB kept at the end, at the peak (with one run's resume checkpoint), Figure 1's share (its
    own encoders' shards and weights) and the rest."""
    kept = [r for r in table if "temporary" not in r["what"] and r["step"] != "while a run trains"]
    prep = params("03_real_data_prep/paper.yaml")
    figure1 = {n for n in params("01_failure_analysis/paper.yaml")["retrievers"] if n != "bm25"}
    figure1 -= {prep["encoder"], *prep["mapping_encoders"]}
    own = {f"{n}'s float16 shards" for n in figure1} | {f"`{get_encoder_spec(n).model_id}`" for n in figure1}
    training = next(r["gb"] for r in table if r["step"] == "while a run trains")
    everything = sum(r["gb"] for r in kept)
    share = sum(r["gb"] for r in kept if r["what"] in own)
    return {
        "all kept": everything,
        "peak": everything + training,
        "figure 1's encodings and weights": share,
        "without figure 1": everything - share,
    }


def markdown(table: list[dict]) -> str:
    lines = ["| step | file | GB | arithmetic |", "|---|---|---|---|"]
    lines += [f"| {r['step']} | {r['what']} | {r['gb']:.1f} | {r['how']} |" for r in table]
    return "\n".join(lines)


if __name__ == "__main__":
    table = rows()
    out = {"rows": table, "totals": totals(table)}
    write_text(ROOT / "benchmarks" / "disk_budget.json", json.dumps(out, indent=1) + "\n")
    print(markdown(table))
    print({k: round(v) for k, v in out["totals"].items()})
