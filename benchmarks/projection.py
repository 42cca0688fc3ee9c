"""From `bench_scale.py`'s measurements to the paper's corpus (25M x 1536) and to 100M, on one GPU
and on four, with the arithmetic written out. Every GPU figure rests on the spec-sheet numbers in
`GPU` and the efficiencies beside them: assumptions, named as such in the report; the CPU rows
scale this machine's measurements."""

from __future__ import annotations

import math

from amer_lib.core.index import training_sample_size

CORPORA = (25_000_000, 100_000_000)
DIM = 1536  # inf-retriever-v1-1.5b
ENCODER_PARAMS = 1.54e9  # inf-retriever-v1-1.5b (a Qwen2-1.5B)
TEST_VECTORS = 827 * 2 + 531 * 5  # Table 1's test sets: AmbigQA with n = 2, QAMPARI with n = 5
PAPER_NLIST, PAPER_PQ_BYTES, PAPER_NPROBE = 65536, 96, 64  # params/03_real_data_prep/paper.yaml's IVF65536,PQ96
SHARD_ROWS = 250_000  # params/03_real_data_prep/paper.yaml's shard_size
KMEANS_ITERATIONS = 10  # faiss's IVF training
# assumed, not measured here: NVIDIA H100 SXM spec sheet, and the share of it a workload reaches
GPU = dict(memory_gb=80, bf16_tflops=989, fp32_tflops=67, pcie_gb_s=25)
ENCODE_MFU = 0.4  # share of bf16 peak a 1.5B encoder's forward pass reaches at batch 256
GEMM_EFFICIENCY = 0.75  # share of fp32 peak faiss's brute-force GEMM reaches


def gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:,.1f} GB"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


def fits(n_bytes: float) -> bool:
    """Fits in one GPU's memory with a tenth left for faiss's scratch space and the CUDA context."""
    return n_bytes < 0.9 * GPU["memory_gb"] * 1e9


def largest(results: dict, operation: str, ending: str = "") -> dict:
    """The measurement of `operation` at the largest measured corpus of the widest dimension."""
    rows = [r for r in results["index"] if r["operation"].startswith(operation) and r["operation"].endswith(ending)]
    return max(rows, key=lambda r: (r["dim"], r["n"]))


def projection(results: dict) -> list[str]:
    tokens = next(r["tokens"] for r in results["encoding"] if r["texts"].startswith("100-word"))
    minilm_rate = next(r["count"] / r["seconds"] for r in results["encoding"] if r["texts"].startswith("100-word"))
    exact = largest(results, "exact search, float16 shards")
    cpu_gemm = 2 * exact["queries"] * exact["n"] * exact["dim"] / exact["seconds"]  # FLOP/s, conversion included
    build = largest(results, "IVF", "(train + add)")
    nlist = results["settings"]["nlist"]
    cpu_assign = 2 * build["n"] * nlist * build["dim"] / build["add"]  # adding, read as coarse assignment
    train_size = training_sample_size(nlist)
    cpu_kmeans = 2 * min(train_size, build["n"]) * nlist * build["dim"] * KMEANS_ITERATIONS / build["train"]
    search = max(
        (r for r in results["index"] if r.get("nprobe") and r["dim"] == build["dim"] and r["n"] == build["n"]),
        key=lambda r: r["nprobe"],
    )
    scanned = search["nprobe"] * search["n"] / nlist
    ns_per_code = search["seconds"] / search["queries"] / scanned * 1e9
    gpu_gemm = GPU["fp32_tflops"] * 1e12 * GEMM_EFFICIENCY
    half_rate = results["half_to_float"]["torch_gb_s"] * 1e9
    lines = [
        "### Projection to the paper's corpus (25M x 1536) and to 100M",
        "",
        f"Measured here (largest corpus of (b)): exact shard search ran at "
        f"2 x {exact['queries']} x {exact['n']:,} x {exact['dim']} / {exact['seconds']:.3g} s = "
        f"{cpu_gemm / 1e9:.0f} GFLOP/s (float16 conversion included); the IVF{nlist} training (k-means, "
        f"{KMEANS_ITERATIONS} iterations) at 2 x {min(train_size, build['n']):,} x {nlist} x {build['dim']} x "
        f"{KMEANS_ITERATIONS} / {build['train']:.3g} s = {cpu_kmeans / 1e9:.0f} GFLOP/s, adding at "
        f"2 x {build['n']:,} x {nlist} x {build['dim']} / {build['add']:.3g} s = {cpu_assign / 1e9:.0f} GFLOP/s "
        "read as coarse assignment alone (PQ training and encoding fold in: the rates are floors, the projected "
        "times ceilings); "
        f"IVF-PQ search scanned {scanned:,.0f} codes per query vector at nprobe {search['nprobe']} in "
        f"{search['seconds'] / search['queries'] * 1e3:.3g} ms, {ns_per_code:.2f} ns per code (coarse step included); "
        f"MiniLM encoded {minilm_rate:,.0f} 100-word passages per second ({tokens:.0f} tokens each). "
        f"Assumed (H100 SXM spec sheet, not measured): {GPU['bf16_tflops']} TFLOPS bf16 at {ENCODE_MFU:.0%} "
        f"utilisation for encoding, {GPU['fp32_tflops']} TFLOPS fp32 at {GEMM_EFFICIENCY:.0%} for faiss's "
        f"brute-force GEMM, {GPU['memory_gb']} GB of memory, {GPU['pcie_gb_s']} GB/s host-to-GPU. "
        f"The test sets are Table 1's: 827 AmbigQA questions x 2 vectors + 531 QAMPARI x 5 = {TEST_VECTORS:,} "
        "query vectors per system and seed.",
        "",
        "| quantity | arithmetic | 25M | 100M |",
        "|---|---|---|---|",
    ]

    def row(quantity: str, arithmetic: str, value) -> None:
        lines.append(f"| {quantity} | {arithmetic} | {value(CORPORA[0])} | {value(CORPORA[1])} |")

    row("float16 shards on disk", f"N x {DIM} x 2 B", lambda n: gb(n * DIM * 2))
    row("float32 in memory (exact, one index)", f"N x {DIM} x 4 B", lambda n: gb(n * DIM * 4))
    row(
        f"IVF{PAPER_NLIST},PQ{PAPER_PQ_BYTES} index",
        f"N x ({PAPER_PQ_BYTES} B code + 8 B id) + {PAPER_NLIST} x {DIM} x 4 B centroids",
        lambda n: gb(n * (PAPER_PQ_BYTES + 8) + PAPER_NLIST * DIM * 4),
    )
    row(
        "exact float16 fits on one GPU? on four?",
        f"N x {DIM} x 2 B vs {GPU['memory_gb']} GB (x4)",
        lambda n: f"{'yes' if fits(n * DIM * 2) else 'no'} / {'yes' if fits(n * DIM * 2 / 4) else 'no'}",
    )
    encode_flops = 2 * ENCODER_PARAMS * tokens
    encode_one = lambda n: n * encode_flops / (GPU["bf16_tflops"] * 1e12 * ENCODE_MFU)  # noqa: E731
    row(
        "encode with inf-retriever-1.5B, one GPU",
        f"N x 2 x 1.54e9 x {tokens:.0f} tokens / ({GPU['bf16_tflops']} T x {ENCODE_MFU})",
        lambda n: duration(encode_one(n)),
    )
    row(
        f"encode, four GPUs (torchrun, alternate {SHARD_ROWS:,}-row shards)",
        "one GPU's time x ceil(shards / 4) / shards",
        lambda n: duration(encode_one(n) * math.ceil(n / SHARD_ROWS / 4) / (n / SHARD_ROWS)),
    )
    row("encode with MiniLM on this CPU", f"N / {minilm_rate:,.0f} per s", lambda n: duration(n / minilm_rate))
    exact_flops = lambda n: 2 * TEST_VECTORS * n * DIM  # noqa: E731
    row(
        "exact search of the test sets, this CPU",
        f"2 x {TEST_VECTORS} x N x {DIM} / {cpu_gemm / 1e9:.0f} GFLOP/s",
        lambda n: duration(exact_flops(n) / cpu_gemm),
    )
    row(
        "exact search, one GPU streaming the shards (ShardedFlatIndex)",
        f"convert N x {DIM} x 2 B at {half_rate / 1e9:.2g} GB/s + copy x 4 B at {GPU['pcie_gb_s']} GB/s "
        f"+ GEMM at {gpu_gemm / 1e12:.0f} TFLOPS",
        lambda n: duration(
            n * DIM * 2 / half_rate + n * DIM * 4 / (GPU["pcie_gb_s"] * 1e9) + exact_flops(n) / gpu_gemm
        ),
    )
    row(
        "exact search, four GPUs holding float16 shares",
        f"GEMM / 4 at {gpu_gemm / 1e12:.0f} TFLOPS each",
        lambda n: duration(exact_flops(n) / gpu_gemm / 4)
        if n * DIM * 2 / 4 < 0.9 * GPU["memory_gb"] * 1e9
        else "does not fit",
    )
    paper_train = training_sample_size(PAPER_NLIST)
    kmeans = 2 * paper_train * PAPER_NLIST * DIM * KMEANS_ITERATIONS
    row(
        f"IVF{PAPER_NLIST} training (k-means over {paper_train:,} vectors), this CPU",
        f"2 x {paper_train:,} x {PAPER_NLIST} x {DIM} x {KMEANS_ITERATIONS} / {cpu_kmeans / 1e9:.0f} GFLOP/s",
        lambda n: duration(kmeans / cpu_kmeans),
    )
    row(
        f"IVF{PAPER_NLIST} training, one GPU",
        f"the same FLOPs / {gpu_gemm / 1e12:.0f} TFLOPS",
        lambda n: duration(kmeans / gpu_gemm),
    )
    assign = lambda n: 2 * n * PAPER_NLIST * DIM  # noqa: E731
    row(
        f"IVF{PAPER_NLIST} adding (coarse assignment), this CPU",
        f"2 x N x {PAPER_NLIST} x {DIM} / {cpu_assign / 1e9:.0f} GFLOP/s",
        lambda n: duration(assign(n) / cpu_assign),
    )
    row(
        f"IVF{PAPER_NLIST} adding, one GPU",
        f"2 x N x {PAPER_NLIST} x {DIM} / {gpu_gemm / 1e12:.0f} TFLOPS",
        lambda n: duration(assign(n) / gpu_gemm),
    )
    row(
        f"IVF-PQ search of the test sets at nprobe {PAPER_NPROBE}, this CPU",
        f"{TEST_VECTORS} x ({PAPER_NPROBE} x N / {PAPER_NLIST} codes x {ns_per_code:.2f} ns "
        f"+ 2 x {PAPER_NLIST} x {DIM} / {cpu_gemm / 1e9:.0f} GFLOP/s)",
        lambda n: duration(
            TEST_VECTORS * (PAPER_NPROBE * n / PAPER_NLIST * ns_per_code * 1e-9 + 2 * PAPER_NLIST * DIM / cpu_gemm)
        ),
    )
    return lines
