"""Hard negatives, beyond the paper (which trains with random corpus negatives only).

For each training question, the documents the off-the-shelf encoder ranks highest for it that are
not gold: the passages a retriever confuses with the answers. A question whose answers answer
questions of their own (`answer_questions`: a compound's components, say) is searched whole and by
each of them, and the lists are interleaved round-robin, so every one contributes its own near
misses. The training loop
(`core.train.draw_batch`) swaps a share of each batch's random negatives for these.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from amer_lib.core.index import ShardedFlatIndex
from amer_lib.data.questions import MultiAnswerQuestion, question_parts
from amer_lib.io import recorded_damage, write_recorded

PER_QUESTION = 16  # mined negatives kept per question
DEPTH = 100  # searched per query text: the gold documents (at most 8 answers here) leave more than enough


def query_texts(question: MultiAnswerQuestion) -> list[str]:
    """What is searched for a question: its text, then each other question it is made of
    (`questions.question_parts`), once each."""
    return list(dict.fromkeys([question.question, *question_parts(question)]))


def interleave(rankings: list[np.ndarray], gold: set[int], count: int) -> list[int]:
    """The first `count` distinct rows of the rankings read round-robin (rank 1 of each list, then
    rank 2, ...), gold rows and the padding row -1 left out."""
    kept: list[int] = []
    for rank in range(max(len(r) for r in rankings)):
        for ranking in rankings:
            row = int(ranking[rank]) if rank < len(ranking) else -1
            if row >= 0 and row not in gold and row not in kept:
                kept.append(row)
                if len(kept) == count:
                    return kept
    return kept


def mine(
    questions: list[MultiAnswerQuestion],
    encoder,
    shards,
    count: int = PER_QUESTION,
    depth: int = DEPTH,
    batch_size: int = 64,
) -> np.ndarray:
    """`[N, count]` corpus rows: each question's hardest non-gold documents for `encoder`
    (`data.encoders.DocumentEncoder`) over `shards`, searched exactly."""
    texts = [query_texts(q) for q in questions]
    flat = [t for ts in texts for t in ts]
    _, ranked = ShardedFlatIndex(shards).search(encoder.encode_queries(flat, batch_size), depth)
    rows, cursor = np.empty((len(questions), count), dtype=np.int64), 0
    for i, (question, ts) in enumerate(zip(questions, texts)):
        gold = {shards.row_of[d] for docs in question.targets for d in docs if d in shards.row_of}
        kept = interleave(list(ranked[cursor : cursor + len(ts)]), gold, count)
        cursor += len(ts)
        if len(kept) < count:
            raise ValueError(
                f"question {question.qid!r}: only {len(kept)} non-gold documents in the top {depth} "
                f"of its {len(ts)} search(es), {count} wanted; search deeper"
            )
        rows[i] = kept
    return rows


def cached_mine(
    folder: str | Path, questions: list[MultiAnswerQuestion], encoder, shards, count: int = PER_QUESTION
) -> np.ndarray:
    """`mine`, kept in `folder` under a name that hashes the questions, the encoder and `count`
    (a benchmark's runs of several seeds mine once), written atomically with its record
    (`io.write_recorded`); a kept file that is not as its record says is said and mined again."""
    key = json.dumps([encoder.spec.name, count, DEPTH, [q.qid for q in questions]])
    path = Path(folder) / f"{encoder.spec.name}_{hashlib.sha256(key.encode()).hexdigest()[:12]}.npy"
    if path.exists():
        if (damage := recorded_damage(path)) is None:
            return np.load(path, allow_pickle=False)
        print(f"{path} is damaged ({damage}): mining again", flush=True)
    rows = mine(questions, encoder, shards, count)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as out:
            np.save(out, rows)

    write_recorded(path, write, size=rows.nbytes)
    return rows
