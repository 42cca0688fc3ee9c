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

from amer_lib.core import memory  # noqa: E402
from amer_lib.core.backbones import backbone_config, get_backbone  # noqa: E402
from amer_lib.data.encoders import get_encoder_spec  # noqa: E402

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
# encoders' parameters and the bytes of their published weights (their model cards)
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


def per_million(field: str) -> float:
    """GiB per million passages of prep.json's largest run, in GB."""
    run = json.loads((ROOT / "benchmarks" / "prep.json").read_text())[MEASURED_AT]["new"]
    return run[field] * 2**30 / (int(MEASURED_AT) / 1e6) / GB


def shards(name: str) -> dict:
    dim = get_encoder_spec(name).dim
    size = (PASSAGES * dim * 2 + PASSAGES * ID_BYTES) / GB
    return dict(what=f"{name} float16 shards", gb=size, how=f"25M x {dim} x 2 bytes + 25M ids x {ID_BYTES} bytes")


def trained_state(backbone: str, full: bool, dim: int) -> int:
    """Parameters a run trains (and its best.pt keeps in float32): LoRA and the two projections,
    or the whole backbone and the projections."""
    spec = get_backbone(backbone)
    arch = memory.architecture(backbone, backbone_config(backbone), spec.lora.targets)
    trained = arch.parameters if full else spec.lora.r * arch.lora_parameters_per_rank
    return trained + 2 * dim * arch.hidden_size


def weights(model_id: str, backbone: str | None = None) -> dict:
    if model_id in LISTED:
        size, how = LISTED[model_id]
    elif backbone is not None:
        config = backbone_config(backbone)
        n = memory.architecture(backbone, config, get_backbone(backbone).lora.targets).parameters
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
    store, index = per_million("store_gib") * 25, per_million("index_gib") * 25
    low, high = (PASSAGES * b / GB for b in CHUNK_LINE_BYTES)
    found = [
        dict(
            step="1 downloads", what="data/raw/ question files", gb=QUESTION_BYTES / GB, how="measured and listed sizes"
        ),
        dict(
            step="1 downloads", what="chunked_wikipedia.tar.gz", gb=TARBALL_GB, how="as reported; deletable once read"
        ),
        dict(
            step="1 downloads",
            what="data/qampari_wikipedia_chunks.jsonl",
            gb=high,
            how=f"25M lines x 760-1,450 bytes: {low:.0f}-{high:.0f} GB",
        ),
        dict(step="3 notebook 03", what="corpus_store/", gb=store, how="25 x the measured 0.586 GiB per million"),
        dict(step="3 notebook 03", what="bm25/", gb=index, how="25 x the measured 0.455 GiB per million"),
        dict(
            step="3 notebook 03",
            what="bm25/.runs-* (temporary, during the build)",
            gb=index * 12 / 8,
            how="12 / 8 of the index",
        ),
        *[dict(step="2-3 encode, notebook 03", **shards(name)) for name in mapping],
        *[dict(step="notebook 01 (Figure 1)", **shards(name)) for name in figure1_only],
    ]
    encoders = [get_encoder_spec(name).model_id for name in [*mapping, *figure1_only]]
    found += [dict(step="1 weights", **weights(model_id)) for model_id in encoders]
    backbones = PAPER_RUNS[2]
    found += [dict(step="1 weights", **weights(get_backbone(b).model_id, b)) for b in backbones]
    lora = {b: 4 * trained_state(b, False, 1536) for b in backbones}
    kept = sum(len(PAPER_RUNS[1]) * RUNS_PER_FILE * size for size in lora.values()) / GB
    found.append(
        dict(
            step="notebook 04",
            what="best.pt of the 8 files' 48 runs",
            gb=kept,
            how="12 runs per backbone x 4 bytes x (LoRA + projections): "
            + ", ".join(f"{b} {lora[b] / GB:.2f} GB" for b in backbones),
        )
    )
    predicted = sum(len(PAPER_RUNS[1]) * 3 * size for size in lora.values()) / GB
    found.append(
        dict(
            step="notebook 05",
            what="best.pt of the 24 always-predicted runs",
            gb=predicted,
            how="3 seeds per 04 file, as above",
        )
    )
    synthetic = 4 * trained_state("llama1b", True, 1024)
    found.append(
        dict(
            step="notebook 02",
            what=f"best.pt of its {SYNTHETIC_RUNS} runs (full fine-tuning)",
            gb=SYNTHETIC_RUNS * synthetic / GB,
            how=f"{SYNTHETIC_RUNS} x 4 bytes x {synthetic / 4 / 1e9:.2f}B",
        )
    )
    found.append(
        dict(
            step="while a run trains",
            what="its checkpoint.pt (weights and AdamW's two moments)",
            gb=3 * synthetic / GB,
            how="3 x its best.pt (notebook 02's; Llama-8B LoRA: " + f"{3 * lora['llama8b'] / GB:.1f} GB)",
        )
    )
    return found


def totals(table: list[dict]) -> dict:
    kept = [r for r in table if "temporary" not in r["what"] and r["step"] != "while a run trains"]
    figure1 = [r for r in table if r["step"] == "notebook 01 (Figure 1)"]
    figure1_weights = {f"`{get_encoder_spec(r['what'].split()[0]).model_id}`" for r in figure1}
    without = [r for r in kept if r not in figure1 and r["what"] not in figure1_weights]
    training = next(r["gb"] for r in table if r["step"] == "while a run trains")
    return {
        "all kept": sum(r["gb"] for r in kept),
        "peak": sum(r["gb"] for r in kept) + training,
        "figure 1's encodings and weights": sum(r["gb"] for r in kept) - sum(r["gb"] for r in without),
        "without figure 1": sum(r["gb"] for r in without),
    }


def markdown(table: list[dict]) -> str:
    lines = ["| step | file | GB | arithmetic |", "|---|---|---|---|"]
    lines += [f"| {r['step']} | {r['what']} | {r['gb']:.1f} | {r['how']} |" for r in table]
    return "\n".join(lines)


if __name__ == "__main__":
    table = rows()
    out = {"rows": table, "totals": totals(table)}
    (ROOT / "benchmarks" / "disk_budget.json").write_text(json.dumps(out, indent=1) + "\n")
    print(markdown(table))
    print({k: round(v) for k, v in out["totals"].items()})
