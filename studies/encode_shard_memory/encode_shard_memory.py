"""Peak resident memory of encoding one 1M x 1536 shard: the float16 parts (now) or float32 parts (before)."""

import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import numpy as np
from bench_scale import TreeVectors, rss_anon

from amer_lib.data import encoders
from amer_lib.data.corpus import Document
from amer_lib.io import atomic_path, write_text


def float32_parts(encoder, shard, vectors_path, ids_path, batch_size, bar):  # the code before the fix
    parts = []
    for part in encoders.document_batches(shard, batch_size * 16):
        parts.append(encoder.encode_documents([d.full_text for d in part], batch_size))
        bar.update(len(part))
    with atomic_path(vectors_path) as tmp, open(tmp, "wb") as out:
        np.save(out, np.concatenate(parts).astype(np.float16))
    write_text(ids_path, "".join(f"{i}\n" for i in [d.id for d in shard]))


if sys.argv[1:] not in (["before"], ["after"]):
    sys.exit(f"usage: python {sys.argv[0]} before|after (the former float32 parts, or the float16 parts of today)")
if sys.argv[1] == "before":
    encoders.write_shard = float32_parts
n = 1_000_000
documents = [Document(f"d{i}", "", str(i)) for i in range(n)]
encoder = TreeVectors(1536)
start = rss_anon()
scratch = Path(__file__).resolve().parents[2] / "build"
scratch.mkdir(exist_ok=True)
with tempfile.TemporaryDirectory(dir=scratch) as d:
    encoders.encode_corpus(encoder, documents, Path(d), n, batch_size=4096, progress=False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(sys.argv[1], f"anonymous memory before encoding {start / 2**30:.2f} GiB, process peak RSS {peak / 2**30:.2f} GiB")
