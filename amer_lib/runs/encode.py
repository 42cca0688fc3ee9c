"""Encode a corpus into float16 shards, alone or spread over the ranks torchrun starts.

    python -m amer_lib.runs.encode --corpus corpus.tsv --out embeddings/minilm --encoder minilm
    python -m torch.distributed.run --standalone --nproc_per_node 4 -m amer_lib.runs.encode \\
        --prepared results/prepared/wordnet --encoder contriever-msmarco --shard-size 250000 --batch-size 256

Under torchrun rank r encodes shards r, r + N, ... on its own GPU (`amer_lib.data.encoders`);
a rerun after an interruption (Ctrl-C or SIGTERM stop it after the part in progress, saying so)
resumes each shard after its last complete part, and encodes again any shard found damaged, on any
number of ranks. `--prepared` encodes a prepared benchmark's corpus (notebook 03) into the folder
notebooks 03-07 read, so that notebook 03 finds the encoding done.
"""

from __future__ import annotations

import argparse
import os
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist

from amer_lib.core.distributed import is_main, setup
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.corpus import iter_documents
from amer_lib.data.encoders import ENCODERS, DocumentEncoder, encode_corpus
from amer_lib.io import require_writable

# how long a rank that finished its shards waits for the slowest (a resumed encoding can leave
# one rank with far more shards to go than another)
RANK_TIMEOUT = timedelta(days=2)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", type=Path, help="a TSV (id, text, title) or BEIR corpus.jsonl, plain or gzipped")
    source.add_argument("--prepared", type=Path, help="a prepared benchmark's folder (notebook 03)")
    parser.add_argument("--out", type=Path, help="the shards' folder (with --corpus)")
    parser.add_argument("--encoder", required=True, choices=sorted(ENCODERS))
    parser.add_argument("--shard-size", type=int, default=100_000, help="documents per shard")
    parser.add_argument("--batch-size", type=int, default=64, help="documents per encoder batch")
    parser.add_argument("--total", type=int, help="number of documents, for the progress bar")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.corpus is not None and args.out is None:
        parser.error("--corpus needs --out, the folder the shards go to")
    if args.prepared is not None and args.out is not None:
        parser.error("--prepared writes to <prepared>/embeddings/<encoder>; drop --out")
    if args.shard_size < 1 or args.batch_size < 1:
        parser.error("--shard-size and --batch-size must be positive")
    try:  # before the encoder loads, not at the first shard written
        if args.corpus is not None:
            require_writable(args.out, "--out")
        else:
            require_writable(args.prepared / "embeddings" / args.encoder, "--prepared")
    except PermissionError as error:
        parser.error(str(error))
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    distributed = "LOCAL_RANK" in os.environ
    device = str(setup(RANK_TIMEOUT)) if distributed else None
    try:
        encoder = DocumentEncoder(args.encoder, device=device)
        if args.prepared is not None:
            benchmark = Benchmark(args.prepared)
            documents, out = benchmark.documents(), args.prepared / "embeddings" / args.encoder
            total = args.total or benchmark.manifest.get("corpus_size")
        else:
            documents, out, total = iter_documents(args.corpus), args.out, args.total
        shards = encode_corpus(
            encoder,
            documents,
            out,
            args.shard_size,
            args.batch_size,
            total,
            progress=not args.quiet and is_main(),
            source=args.corpus,
        )
        if is_main():
            print(f"{len(shards)} documents in {shards.manifest['n_shards']} shards under {out}")
    finally:
        if distributed:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
