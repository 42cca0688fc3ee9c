"""Search new questions with a trained AMER and write a TREC run; no gold answers are needed.

    python -m amer_lib.search --model models/kinds_mine_amer --index results/prepared/kinds_mine \\
        --questions my_questions.txt --out run.trec

`--questions`: a `.txt` file of one question per line (its qid: its line number in the file, blank
lines skipped but counted), a `.jsonl` file of objects with `qid` and `question` (the library's
question files; their answers and targets are not read) or BEIR's `queries.jsonl` (`_id`, `text`),
or a `.tsv` topic file (`qid<TAB>question`, as TREC's and MS MARCO's). `--index`: a prepared
benchmark's folder or an embeddings folder encoded by the model's document encoder
(`amer_lib.retriever.open_index`). The run's scores are k - rank + 1 (100, 99, ...) by default:
trec_eval and ir_measures order a question's documents by score (ties by document id, in reverse
order), and a merged list's order is not its cosines' order. `--scores cosine` writes each
document's cosine to the vector that found it instead (evaluated, the documents are then reordered
by cosine).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from amer_lib.core.device import DEVICES, DeviceUnavailableError, resolve_device
from amer_lib.core.merge import MERGES
from amer_lib.data.questions import read_question_texts
from amer_lib.io import require_writable
from amer_lib.retriever import TREC_SCORES, AMERRetriever
from amer_lib.runs.saved import read_config


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m amer_lib.search", description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder (amer_lib.runs.saved.save_pretrained)")
    parser.add_argument("--index", required=True, help="a prepared benchmark's folder or an embeddings folder")
    parser.add_argument(
        "--questions", required=True, help="questions: .txt (one per line), .jsonl (qid, question; or BEIR's) or .tsv"
    )
    parser.add_argument("--out", required=True, help="the TREC run file to write")
    parser.add_argument("--k", type=int, default=100, help="documents per question (default 100)")
    parser.add_argument("--n", default=None, help="query vectors per question: an int, or auto (the stop head's)")
    parser.add_argument("--merge", default="round_robin", choices=list(MERGES), help="how the lists are merged")
    parser.add_argument(
        "--scores",
        default="rank",
        choices=TREC_SCORES,
        help="the TREC score column: k - rank + 1 (default) or the cosine",
    )
    parser.add_argument("--tag", default=None, help="the run's tag in the TREC file (default: the model folder's name)")
    parser.add_argument("--device", default="auto", choices=DEVICES, help="the query encoder's (auto: the GPU if any)")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"--k must be at least 1 (the documents written per question), got {args.k}")
    if args.n not in (None, "auto"):
        if not args.n.isdigit() or int(args.n) < 1:
            parser.error(f"--n must be a positive integer or auto, got {args.n!r}")
        args.n = int(args.n)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        search(args)
    except (FileNotFoundError, ValueError, PermissionError, DeviceUnavailableError) as error:  # bad input
        sys.exit(f"error: {error}")


def search(args: argparse.Namespace) -> None:
    resolve_device(args.device)  # before any work: the device is here, the run file can be written
    require_writable(Path(args.out).parent, "--out")
    trained = read_config(args.model)["n_queries"]
    if isinstance(args.n, int) and args.n > trained:
        print(
            f"note: --n {args.n} asks for more vectors than the {trained} this model was trained to generate; "
            f"vectors {trained + 1} to {args.n} were never trained (continued by the model as it generates)",
            file=sys.stderr,
        )
    qids, questions = read_question_texts(args.questions)
    began = time.perf_counter()
    retriever = AMERRetriever.from_pretrained(args.model, index=args.index, device=args.device, progress=True)
    loaded = time.perf_counter()
    results = retriever.search(questions, k=args.k, n=args.n, merge=args.merge, progress=True)
    tag = args.tag or retriever.folder.name
    results.write_trec(args.out, qids, tag, args.scores)
    print(
        f"{args.out}: {len(qids)} questions, top {args.k} each, {results.counts.mean():.2f} vectors per question; "
        f"model loaded in {loaded - began:.1f} s, searched in {time.perf_counter() - loaded:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
