"""How encoding, indexing and search grow with the corpus, measured side by side in one run, and
what the measurements project to at the paper's 25M x 1536 corpus and at 100M.

    python benchmarks/bench_scale.py --out benchmarks/RESULTS.md     # 100k, 1M, 4M at d = 384, 1536
    python benchmarks/bench_scale.py --sizes 100000 --dims 384       # a quick look, printed only
    python benchmarks/bench_scale.py --from-json benchmarks/scale.json --out benchmarks/RESULTS.md

Encoding is MiniLM on this machine's device, on the offline WordNet glosses and on 100-word
passages (the paper corpus's length). The corpora the indexes are measured on are synthetic:
nothing here can encode 4M passages, so each document's vector is a leaf of a tree of centres
plus noise (`TreeVectors`), written as the float16 shards an encoding writes (`encode_corpus`),
and the queries are documents of the same distribution that the corpus does not hold. IVF-PQ
recall depends on the data: (d) compares it on the tree vectors and on real MiniLM embeddings of
notebook 03's corpus (when notebook 03 has run). Peak memory is the growth of the process's anonymous
resident memory (heap, not the page cache behind memory-mapped shards), sampled every 2 ms.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from results_file import machine, write_section
from tqdm.auto import tqdm

from amer_lib.core.index import (
    IVFPQIndex,
    ShardedFlatIndex,
    VectorIndex,
    half_to_float,
    recall_against_exact,
    training_sample_size,
    unit_norm,
)
from amer_lib.data.corpus import Document
from amer_lib.data.encoders import DocumentEncoder, EmbeddingShards, encode_corpus
from amer_lib.io import write_json

ROOT = Path(__file__).resolve().parents[1]
GLOSSES = ROOT / "amer_lib" / "data" / "wordnet" / "corpus.tsv.gz"
REAL_EMBEDDINGS = ROOT / "results" / "prepared" / "wordnet" / "embeddings" / "minilm"  # notebook 03's
SHARD_ROWS = 1_000_000  # rows per synthetic shard file (shard search reads 500,000-row blocks of them)
NLIST = 1024  # inverted lists at every measured size (a CPU builds more in hours, not minutes)
NPROBES = (16, 64, 256)
K = 100
IN_MEMORY_SHARE = 0.35  # the in-memory float32 index is measured where it takes at most this share of RAM


# ----- measuring -------------------------------------------------------------------------------
def rss_anon() -> int:
    """This process's anonymous resident memory in bytes (Linux's /proc/self/status)."""
    try:
        status = Path("/proc/self/status").read_text()
    except FileNotFoundError:
        raise SystemExit("bench_scale reads peak memory from /proc/self/status: run it on Linux") from None
    return 1024 * int(next(line.split()[1] for line in status.splitlines() if line.startswith("RssAnon:")))


class PeakMemory:
    """Growth of anonymous resident memory while the `with` block runs (peak minus start)."""

    def __enter__(self):
        self.start = self.peak = rss_anon()
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(0.002):
            self.peak = max(self.peak, rss_anon())

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._sampler.join()
        self.peak = max(self.peak, rss_anon())

    @property
    def gib(self) -> float:
        return (self.peak - self.start) / 2**30


def measured(fn, repeat: int = 1):
    """(result of the last call, fastest seconds, peak memory growth in GiB over the calls)."""
    times, peak = [], 0.0
    for _ in range(repeat):
        with PeakMemory() as memory:
            began = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - began)
        peak = max(peak, memory.gib)
    return result, min(times), peak


# ----- synthetic corpora -----------------------------------------------------------------------
class TreeVectors:
    """Stands in for a document encoder over documents whose text is their number. Document i
    sits at a leaf of a tree of centres (64 x 64 x 8 = 32,768 leaves): its vector sums the centres
    on its path (amplitudes 1, 0.8, 0.6) and its own noise (0.4), all with a spectrum decaying as
    j^-1/4, so that neighbourhoods exist at every scale. Chosen against real MiniLM embeddings:
    `calibration` compares IVF-PQ recall on both."""

    branching, amplitudes, noise, power = (64, 64, 8), (1.0, 0.8, 0.6), 0.4, 0.25

    def __init__(self, dim: int, seed: int = 0):
        self.dim, self.seed = dim, seed
        self.spec = SimpleNamespace(name=f"tree{'x'.join(map(str, self.branching))}-seed{seed}")
        self.scale = (np.arange(1, dim + 1) ** -self.power).astype(np.float32)
        rng = np.random.default_rng(seed)
        self.tables = [rng.standard_normal((s, dim), dtype=np.float32) * self.scale for s in np.cumprod(self.branching)]

    def encode_documents(self, texts: list[str], batch_size: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, int(texts[0])])
        leaves = len(self.tables[-1])
        leaf = rng.integers(leaves, size=len(texts))
        vectors = self.noise * rng.standard_normal((len(texts), self.dim), dtype=np.float32) * self.scale
        for table, amplitude in zip(self.tables, self.amplitudes):
            vectors += amplitude * table[leaf // (leaves // len(table))]
        return unit_norm(vectors)


def synthetic_shards(work: Path, n: int, dim: int):
    """The float16 shards of n tree vectors (reused when a complete copy is in `work`)."""
    documents = (Document(f"d{i}", "", str(i)) for i in range(n))
    return encode_corpus(TreeVectors(dim), documents, work / f"{n}x{dim}", SHARD_ROWS, batch_size=4096, total=n)


def held_out_queries(n: int, dim: int, count: int) -> np.ndarray:
    """Queries from the corpus's own distribution: documents n, n + 1, ... that it does not hold."""
    return TreeVectors(dim).encode_documents([str(n + j) for j in range(count)], count)


def calibration(embeddings: Path, work: Path, factory: str = "IVF256,PQ24", nprobe: int = 32) -> dict | None:
    """IVF-PQ recall of the exact top-k on real MiniLM embeddings (notebook 03's corpus) and on as
    many tree vectors of the same dimension, 300 corpus vectors as queries: how hard the synthetic
    corpora are for IVF-PQ next to real ones. None when notebook 03 has not run."""
    if not (embeddings / "manifest.json").exists():
        return None
    real = EmbeddingShards(embeddings)
    corpora = {"real MiniLM": real, "tree vectors": synthetic_shards(work, len(real), real.dim)}
    rows = np.sort(np.random.default_rng(1).choice(len(real), 300, replace=False))
    recalls = {}
    for name, shards in corpora.items():
        queries = shards.rows(rows)
        _, exact = ShardedFlatIndex(shards).search(queries, K)
        _, approximate = IVFPQIndex(shards, factory, nprobe=nprobe, use_gpu=False).search(queries, K)
        recalls[name] = recall_against_exact(approximate, exact)
    return dict(n=len(real), dim=real.dim, factory=factory, nprobe=nprobe, recall=recalls)


# ----- the measurements --------------------------------------------------------------------------
def passages(words: int, count: int) -> list[str]:
    """`count` texts: single glosses (words = 0) or consecutive glosses joined to `words` words."""
    with gzip.open(GLOSSES, "rt") as lines:  # after the header; 12 per passage are enough for 100 words
        glosses = [line.split("\t")[1] for line in itertools.islice(lines, 1, 1 + count * 12)]
    if not words:
        return glosses[:count]
    texts, current = [], []
    for gloss in glosses:
        current += gloss.split()
        if len(current) >= words:
            texts.append(" ".join(current[:words]))
            current = []
    return texts[:count]


def bench_encoding(count: int, device: str | None) -> list[dict]:
    encoder = DocumentEncoder("minilm", device=device)
    rows = []
    for label, words in (("WordNet glosses", 0), ("100-word passages", 100)):
        texts = passages(words, count)
        tokens = np.mean([len(t) for t in encoder.model.tokenizer(texts, truncation=True)["input_ids"]])
        encoder.encode_documents(texts[:64], 64)  # warm-up
        _, seconds, peak = measured(lambda: encoder.encode_documents(texts, 64))
        rows.append(dict(texts=label, count=len(texts), tokens=float(tokens), seconds=seconds, peak_gib=peak))
    return rows


def bench_size(work: Path, n: int, dim: int, n_queries: int, nlist: int) -> list[dict]:
    """Every index operation on one corpus; the exact top-k is the reference for IVF-PQ recall."""
    fresh = not (work / f"{n}x{dim}" / "manifest.json").exists()
    shards, write_s, _ = measured(lambda: synthetic_shards(work, n, dim))
    queries = held_out_queries(n, dim, n_queries)
    rows = []

    def row(operation, seconds, peak, **extra):
        rows.append(dict(n=n, dim=dim, operation=operation, seconds=seconds, peak_gib=peak, **extra))

    sharded = ShardedFlatIndex(shards)
    repeat = 2 if n * dim < 1e9 else 1  # exact searches: the fastest of two below 10^9 corpus values
    (_, exact), seconds, peak = measured(lambda: sharded.search(queries, K), repeat=repeat)
    row("exact search, float16 shards", seconds, peak, queries=n_queries)
    float32_gib = n * dim * 4 / 2**30
    if float32_gib <= IN_MEMORY_SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30:
        index, seconds, peak = measured(lambda: VectorIndex(shards.rows(np.arange(n))))
        row("exact index build, in memory (float32)", seconds, peak)
        _, seconds, peak = measured(lambda: index.search(queries, K), repeat=repeat)
        row("exact search, in memory (float32)", seconds, peak, queries=n_queries)
        del index
    factory = f"IVF{nlist},PQ{dim // 16}"
    ivfpq, seconds, peak = measured(lambda: IVFPQIndex(shards, factory, use_gpu=False))
    row(f"{factory} build (train + add)", seconds, peak, code_bytes=ivfpq.code_size, **ivfpq.build_seconds)
    for nprobe in NPROBES:
        ivfpq.set_nprobe(nprobe)
        (_, approximate), seconds, peak = measured(lambda: ivfpq.search(queries, K), repeat=2)
        recall = recall_against_exact(approximate, exact)
        row(f"{factory} search, nprobe {nprobe}", seconds, peak, queries=n_queries, nprobe=nprobe, recall=recall)
    if fresh:  # shards kept from an earlier run were read, not written
        rows.append(dict(n=n, dim=dim, operation="write float16 shards (synthetic)", seconds=write_s, peak_gib=None))
    return rows


def bench_half_to_float(shards) -> dict:
    """float16 shard rows to the float32 blocks exact search scans: numpy's astype against the
    torch copy into a reused buffer that `ShardedFlatIndex` uses, on one shard's rows."""
    rows = np.asarray(shards.shards[0][:SHARD_ROWS])
    buffer = np.empty(rows.shape, dtype=np.float32)
    _, numpy_s, _ = measured(lambda: rows.astype(np.float32), repeat=3)
    _, torch_s, _ = measured(lambda: half_to_float(rows, buffer), repeat=3)
    assert np.array_equal(buffer, rows.astype(np.float32))
    return dict(
        rows=len(rows), dim=shards.dim, numpy_gb_s=rows.nbytes / numpy_s / 1e9, torch_gb_s=rows.nbytes / torch_s / 1e9
    )


def run(
    sizes: list[int], dims: list[int], n_queries: int, work: Path, encode_count: int, nlist: int, real: Path
) -> dict:
    device = "cuda" if torch.cuda.is_available() else None
    encoding = bench_encoding(encode_count, device)
    jobs = [(n, d) for d in dims for n in sizes]
    rows = []
    for n, dim in tqdm(jobs, desc="corpora"):
        rows += bench_size(work, n, dim, n_queries, nlist)
    largest = synthetic_shards(work, max(sizes), max(dims))
    return dict(
        calibration=calibration(real, work),
        machine=machine(),
        encoding=encoding,
        index=rows,
        half_to_float=bench_half_to_float(largest),
        settings=dict(
            nlist=nlist, k=K, tree=TreeVectors(max(dims)).spec.name, shard_rows=SHARD_ROWS, queries=n_queries
        ),
    )


# ----- the report --------------------------------------------------------------------------------
def fmt(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def memory(gib: float | None) -> str:
    return "-" if gib is None else f"{gib:.2f}"


def scaling_table(results: dict) -> list[str]:
    lines = [
        "| corpus | operation | time (s) | throughput | peak memory (GiB) | recall@100 of exact |",
        "|---|---|---|---|---|---|",
    ]
    for r in results["index"]:
        if "queries" in r:
            throughput = f"{r['queries'] / r['seconds']:,.0f} query vectors/s"
        else:  # writes and builds
            throughput = f"{r['n'] / r['seconds']:,.0f} docs/s"
        recall = fmt(r.get("recall"))
        corpus = f"{r['n']:,} x {r['dim']}"
        lines.append(
            f"| {corpus} | {r['operation']} | {fmt(r['seconds'])} | {throughput} | {memory(r['peak_gib'])} | {recall} |"
        )
    return lines


def encoding_table(results: dict) -> list[str]:
    lines = ["| texts | count | tokens per text | time (s) | docs/s | hours per 1M docs |", "|---|---|---|---|---|---|"]
    for r in results["encoding"]:
        rate = r["count"] / r["seconds"]
        lines.append(
            f"| {r['texts']} | {r['count']} | {r['tokens']:.0f} | {fmt(r['seconds'])} | {rate:,.0f} | "
            f"{1e6 / rate / 3600:.1f} |"
        )
    return lines


def conversion_line(c: dict) -> list[str]:
    return [
        f"(c) float16 to float32, what exact shard search adds per pass ({c['rows']:,} x {c['dim']} rows): "
        f"numpy's astype {c['numpy_gb_s']:.2f} GB of float16 per second, torch's copy into a reused buffer "
        f"(`half_to_float`, what `ShardedFlatIndex` uses) {c['torch_gb_s']:.2f} GB/s: "
        f"{c['torch_gb_s'] / c['numpy_gb_s']:.1f}x, same bits."
    ]


def calibration_line(c: dict | None) -> list[str]:
    if c is None:
        return ["(d) IVF-PQ on real embeddings against the tree vectors: not run (run notebook 03 first)."]
    real, tree = c["recall"]["real MiniLM"], c["recall"]["tree vectors"]
    return [
        f"(d) How hard the tree vectors are for IVF-PQ: {c['factory']} at nprobe {c['nprobe']} over "
        f"{c['n']:,} x {c['dim']} vectors (300 corpus vectors as queries) finds {real:.3f} of the exact "
        f"top-{K} on real MiniLM embeddings of notebook 03's corpus and {tree:.3f} on as many tree vectors."
    ]


def report(results: dict, command: str) -> str:
    from projection import projection

    s = results["settings"]
    lines = [
        "## Scale: encoding, indexing and search as the corpus grows (`bench_scale.py`)",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {results['machine']}. All rows from one run; exact searches take the fastest of two runs "
        "below 10^9 corpus values and one above, IVF-PQ searches the fastest of two, builds one run.",
        "",
        "(a) Encoding with all-MiniLM-L6-v2 (batch 64)",
        "",
        *encoding_table(results),
        "",
        f"(b) Indexes over synthetic corpora (`TreeVectors`, {s['tree']}; float16 shards of "
        f"{s['shard_rows']:,} rows; {s['queries']} query vectors, top-{s['k']}; IVF-PQ with "
        f"{s['nlist']} lists at every size, trained on {training_sample_size(s['nlist']):,} vectors, 16 dimensions per "
        "PQ byte). Exact shard search converts 500,000 rows at a time to float32, so its peak memory "
        "is one block's, whatever the corpus; the in-memory index holds the whole corpus in float32.",
        "",
        *scaling_table(results),
        "",
        *conversion_line(results["half_to_float"]),
        "",
        *calibration_line(results["calibration"]),
        "",
        *projection(results),
    ]
    return "\n".join(lines) + "\n"


TIME_LINES = {
    "exact search, float16 shards": "exact search, float16 shards",
    "exact search, in memory (float32)": "exact search, in memory",
    "search, nprobe 64": "IVF-PQ search, nprobe 64",
    "build (train + add)": "IVF-PQ build",
}
MEMORY_LINES = {
    "exact search, float16 shards": "exact search, float16 shards",
    "exact index build, in memory (float32)": "exact, in memory (the corpus in float32)",
    "build (train + add)": "IVF-PQ build",
}


def scale_figure(results: dict, path: Path) -> None:
    """Time and peak memory against corpus size, one line per operation and dimension."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    labels = list(dict.fromkeys([*TIME_LINES.values(), *MEMORY_LINES.values()]))
    colours = dict(zip(labels, plt.get_cmap("tab10").colors))
    for dim, style in zip(sorted({r["dim"] for r in results["index"]}), ("-", "--", ":")):
        for ax, lines, key in ((axes[0], TIME_LINES, "seconds"), (axes[1], MEMORY_LINES, "peak_gib")):
            for ending, label in lines.items():
                rows = [r for r in results["index"] if r["dim"] == dim and r["operation"].endswith(ending)]
                if rows:
                    values = [max(r[key], 1e-3) for r in rows]
                    ax.plot(
                        [r["n"] for r in rows],
                        values,
                        style,
                        color=colours[label],
                        marker="o",
                        label=f"{label}, d = {dim}",
                    )
    axes[0].set(ylabel=f"seconds ({results['settings']['queries']} query vectors a search)")
    axes[1].set(ylabel="peak memory growth (GiB)")
    for ax, title in zip(axes, ("time", "peak memory")):
        ax.set(xscale="log", yscale="log", xlabel="corpus size (documents)")
        ax.set_title(title, loc="left")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 4_000_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 1536])
    parser.add_argument("--queries", type=int, default=512, help="query vectors per search")
    parser.add_argument("--encode-count", type=int, default=512, help="texts per encoding measurement")
    parser.add_argument("--nlist", type=int, default=NLIST, help="IVF-PQ's inverted lists, at every size")
    parser.add_argument(
        "--real-embeddings", type=Path, default=REAL_EMBEDDINGS, help="real MiniLM shards for (d), notebook 03's"
    )
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench_scale", help="the synthetic shards")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "scale.json", help="raw measurements")
    parser.add_argument("--from-json", type=Path, help="rewrite the report from earlier measurements")
    parser.add_argument("--out", help="write the report's section into this Markdown file")
    parser.add_argument("--figure", type=Path, help="draw time and memory against corpus size here (png)")
    args = parser.parse_args()
    if any(d % 16 for d in args.dims):
        parser.error(f"--dims must be multiples of 16 (16 dimensions per PQ byte), got {args.dims}")
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        results = run(
            args.sizes, args.dims, args.queries, args.work, args.encode_count, args.nlist, args.real_embeddings
        )
        results["command"] = "python benchmarks/bench_scale.py " + " ".join(
            f"--{k} {' '.join(map(str, np.atleast_1d(v)))}"
            for k, v in (("sizes", args.sizes), ("dims", args.dims), ("nlist", args.nlist))
            if v != parser.get_default(k)
        )
        write_json(args.json, results)
    text = report(results, results["command"].strip() + (f" --out {args.out}" if args.out else ""))
    print(text)
    if args.out:
        write_section(args.out, "bench_scale", text)
    if args.figure:
        scale_figure(results, args.figure)


if __name__ == "__main__":
    main()
