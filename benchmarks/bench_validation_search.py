"""Validation retrieval's exact search on this machine, before and after issue 59's change (finding 5).

    python benchmarks/bench_validation_search.py --sizes 1000000 4000000 --out benchmarks/validation_search

On synthetic float16 shards of `--dim` (1536: the paper's inf-retriever) unit vectors, 1M rows a
shard as an encoding writes them, kept under `--work` for a rerun, each size searched with `--queries`
random query vectors for the top 100, inside a one-thread training process (`cpu_threads(1)`):

- before: `ShardedFlatIndex` with each block's float16 -> float32 copy on the training's one thread;
- after, streamed: `ResidentFlatIndex` with nothing resident (a CPU run's `run_index`), the copy on
  every core;
- after, resident (sizes up to `--resident-max`): `ResidentFlatIndex` with every row read once into
  memory, the GPU path rehearsed with device "cpu": its build (the one read of a run) and its search.

Each search is timed after one warm-up pass (the shards then in the page cache), the fastest of
`--repeat`; the conversion alone (every block copied, no search) is timed on one thread and on every
core. Every variant's rows and scores are checked equal to `ShardedFlatIndex`'s. Writes OUT.json and
OUT.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from results_file import machine

from amer_lib.core import index
from amer_lib.core.device import cpu_threads
from amer_lib.core.index import ResidentFlatIndex, ShardedFlatIndex, half_to_float, unit_norm
from amer_lib.data.encoders import EmbeddingShards

SHARD_ROWS = 1_000_000
K = 100


def write_shards(folder: Path, n: int, dim: int, seed: int = 0) -> EmbeddingShards:
    """`n` random unit vectors as float16 shards of `SHARD_ROWS` rows (kept: a rerun reads them)."""
    manifest = folder / "manifest.json"
    if not manifest.exists():
        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(seed)
        sizes = [min(SHARD_ROWS, n - start) for start in range(0, n, SHARD_ROWS)]
        for number, size in enumerate(sizes):
            rows = np.lib.format.open_memmap(folder / f"shard_{number:05d}.npy", "w+", np.float16, (size, dim))
            for start in range(0, size, 100_000):
                chunk = rng.standard_normal((min(100_000, size - start), dim), dtype=np.float32)
                rows[start : start + len(chunk)] = unit_norm(chunk)
            rows.flush()
            first = number * SHARD_ROWS
            (folder / f"shard_{number:05d}.ids").write_text("".join(f"d{first + i}\n" for i in range(size)))
        manifest.write_text(json.dumps({"dim": dim, "complete": True, "n_documents": n, "n_shards": len(sizes)}))
    return EmbeddingShards(folder)


def fastest(fn, repeat: int) -> tuple[object, float]:
    """The last result and the fastest of `repeat` timed calls, after one untimed warm-up call."""
    result, times = fn(), []
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - began)
    return result, min(times)


def conversion_pass(shards: EmbeddingShards, threads: int) -> float:
    """Seconds to copy every 500,000-row block to float32, the copy on `threads` threads."""
    buffer = np.empty((500_000, shards.dim), dtype=np.float32)
    before, index.CONVERSION_THREADS = index.CONVERSION_THREADS, threads
    try:
        began = time.perf_counter()
        for shard in shards.shards:
            for start in range(0, len(shard), 500_000):
                half_to_float(shard[start : start + 500_000], buffer)
        return time.perf_counter() - began
    finally:
        index.CONVERSION_THREADS = before


def block_copy(dim: int, repeat: int = 5) -> dict:
    """One 500,000-row block already in memory copied to float32 into a buffer already touched: the
    conversion alone (no page cache, no page faults), on one thread and on every core."""
    rows = unit_norm(np.random.default_rng(2).standard_normal((500_000, dim), dtype=np.float32)).astype(np.float16)
    buffer = np.ones((500_000, dim), dtype=np.float32)
    found = dict(rows=500_000, dim=dim)
    for threads in (1, os.cpu_count()):
        before, index.CONVERSION_THREADS = index.CONVERSION_THREADS, threads
        try:
            _, found[f"seconds_{threads}_threads"] = fastest(lambda: half_to_float(rows, buffer), repeat)
        finally:
            index.CONVERSION_THREADS = before
    assert np.array_equal(buffer, rows.astype(np.float32))
    found["load_average_1min"] = os.getloadavg()[0]
    return found


def measure(shards: EmbeddingShards, queries: np.ndarray, repeat: int, resident: bool) -> dict:
    row = dict(n=len(shards), dim=shards.dim, queries=len(queries), k=K)
    cores = os.cpu_count()
    with cpu_threads(1):  # inside a training process of one thread
        row["conversion_s_one_thread"] = min(conversion_pass(shards, 1) for _ in range(repeat + 1))
        row[f"conversion_s_{cores}_threads"] = min(conversion_pass(shards, cores) for _ in range(repeat + 1))
        saved, index.CONVERSION_THREADS = index.CONVERSION_THREADS, 1
        try:
            (scores, rows), row["before_s"] = fastest(lambda: ShardedFlatIndex(shards).search(queries, K), repeat)
        finally:
            index.CONVERSION_THREADS = saved
        streamed = ResidentFlatIndex(shards, "cpu", resident_bytes=0)
        (s, r), row["after_streamed_s"] = fastest(lambda: streamed.search(queries, K), repeat)
        assert np.array_equal(r, rows) and np.array_equal(s, scores)
        if resident:
            began = time.perf_counter()
            kept = ResidentFlatIndex(shards, "cpu")
            row["resident_build_s"] = time.perf_counter() - began
            (s, r), row["after_resident_s"] = fastest(lambda: kept.search(queries, K), repeat)
            assert np.array_equal(r, rows) and np.array_equal(s, scores)
            del kept
    row["rows_equal"] = True
    row["load_average_1min"] = os.getloadavg()[0]  # the machine is shared: other jobs' load at the end
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--resident-max", type=int, default=1_000_000, help="largest size also held resident")
    parser.add_argument("--work", type=Path, default=Path("/tmp/amer_validation_search"))
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    parser.add_argument("--block-copy-only", action="store_true", help="add the in-memory block copy to OUT.json")
    args = parser.parse_args()
    if args.block_copy_only:
        report = json.loads(args.out.with_suffix(".json").read_text())
        report["block_copy"] = block_copy(args.dim)
        report["block_copy_command"] = "python benchmarks/bench_validation_search.py " + " ".join(sys.argv[1:])
        write(report, args)
        return
    queries = unit_norm(np.random.default_rng(1).standard_normal((args.queries, args.dim), dtype=np.float32))
    rows = []
    for n in args.sizes:
        shards = write_shards(args.work / f"n{n}_d{args.dim}", n, args.dim)
        rows.append(measure(shards, queries, args.repeat, n <= args.resident_max))
        print(json.dumps(rows[-1]), flush=True)
    command = "python benchmarks/bench_validation_search.py " + " ".join(sys.argv[1:])
    report = dict(machine=machine(), command=command, rows=rows)
    write(report, args)


def write(report: dict, args) -> None:
    """OUT.json and OUT.md of `report`."""
    rows = report["rows"]
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    cores = os.cpu_count()
    lines = [
        "# Validation retrieval's exact search, before and after (issue 59, finding 5)",
        "",
        f"`{report['command']}` on {report['machine']}. In a one-thread training process, the fastest of "
        f"{args.repeat} after a warm-up (the shards in the page cache); {args.queries} query vectors, top {K}; "
        "every variant returned `ShardedFlatIndex`'s rows and scores, bit for bit. The 1-minute load "
        "average at the end of each size's measurements (other jobs shared the cores) is in the JSON.",
        "",
        f"| rows x dim | a pass of float16 -> float32 copies, one thread (s) | the same, {cores} threads (s) | "
        "before: search (s) | after, streamed: search (s) | after, resident: read once (s) | "
        "after, resident: search (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        resident = (
            (f"{row['resident_build_s']:.1f}", f"{row['after_resident_s']:.1f}")
            if "after_resident_s" in row
            else ("-", "-")
        )
        lines.append(
            f"| {row['n']:,} x {row['dim']} | {row['conversion_s_one_thread']:.2f} | "
            f"{row[f'conversion_s_{cores}_threads']:.2f} | {row['before_s']:.1f} | {row['after_streamed_s']:.1f} | "
            f"{resident[0]} | {resident[1]} |"
        )
    if "block_copy" in report:
        copy = report["block_copy"]
        lines += [
            "",
            f"The conversion alone (`{report['block_copy_command']}`): one 500,000 x {copy['dim']} block in memory "
            f"to float32 into a buffer already touched, fastest of 5, {copy['seconds_1_threads']:.3f} s on one "
            f"thread, {copy[f'seconds_{cores}_threads']:.3f} s on {cores} (load average "
            f"{copy['load_average_1min']:.1f}). The passes above read the shards through the page cache into a "
            "fresh buffer per pass, as a search does, and weigh more.",
        ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
