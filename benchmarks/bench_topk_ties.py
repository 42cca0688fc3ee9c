"""bm25s's numpy selection (`topk(scores, 500, backend="numpy", sorted=True)`, what `Bm25Index.top_k`
must reproduce) under each of numpy's CPU dispatch levels: which rows it returns for equal scores,
and how long it takes, on score vectors shaped like a real question's (mostly exact zeros, the
positive ones drawn from few values, so many are equal).

numpy's `argpartition` and `argsort` run x86-simd-sort's AVX-512 or AVX2 code where the CPU has it
and numpy's own C code otherwise; `NPY_DISABLE_CPU_FEATURES` (read when numpy loads) turns the
levels off, each in a process of its own. The rows are compared by a hash of all of them.

    .venv/bin/python benchmarks/bench_topk_ties.py   # under a minute on 2 cores; writes benchmarks/topk_ties.json
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LEVELS = {  # what NPY_DISABLE_CPU_FEATURES turns off for each level
    "all the CPU has": "",
    "up to AVX2 (X86_V3)": "AVX512_SPR AVX512_ICL X86_V4",
    "numpy's own C (baseline X86_V2)": "AVX512_SPR AVX512_ICL X86_V4 X86_V3",
}
SIZES = (1_000_000, 5_000_000)
VECTORS = 5  # per size
K = 500


def scores(n: int, seed: int) -> np.ndarray:
    """`n` float32 scores, 70% exactly zero, the others one of 200 values."""
    rng = np.random.default_rng(seed)
    found = np.zeros(n, dtype=np.float32)
    found[rng.random(n) < 0.3] = 1
    found[found > 0] = rng.integers(1, 201, np.count_nonzero(found)) / np.float32(9)
    return found


def measure() -> dict:
    """In this process: per size, the hash of every vector's rows and the mean seconds a call."""
    from bm25s.selection import topk
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    found = {"dispatch_levels_on": [f for f in __cpu_dispatch__ if __cpu_features__.get(f)], "sizes": {}}
    for n in SIZES:
        digest, seconds = hashlib.sha256(), 0.0
        for seed in range(VECTORS):
            vector = scores(n, seed)
            started = time.perf_counter()
            rows = topk(vector, K, backend="numpy", sorted=True)[1]
            seconds += time.perf_counter() - started
            digest.update(rows.astype(np.int64).tobytes())
        found["sizes"][str(n)] = {"rows_sha256": digest.hexdigest()[:16], "ms_per_call": 1000 * seconds / VECTORS}
    return found


def main() -> None:
    if "--measure" in sys.argv:
        print(json.dumps(measure()))
        return
    results = {}
    for level, disabled in LEVELS.items():
        environment = {**os.environ, "NPY_DISABLE_CPU_FEATURES": disabled}
        command = [sys.executable, __file__, "--measure"]
        output = subprocess.run(command, env=environment, capture_output=True, text=True, check=True).stdout
        results[level] = json.loads(output.strip().splitlines()[-1])
        print(level, results[level], flush=True)
    recorded = {"cpu": machine(), "k": K, "vectors_per_size": VECTORS, "levels": results}
    (ROOT / "benchmarks" / "topk_ties.json").write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")


def machine() -> str:
    found = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
    return f"{found[0] if found else 'unknown CPU'}, {os.cpu_count()} cores, numpy {np.__version__}"


if __name__ == "__main__":
    main()
