"""Gold-document mapping of the paper's appendix, and the train/test splits of its Table 1.

Neither AmbigQA nor QAMPARI names gold passages. For each question, candidate passages are the
union of the top 500 of BM25 and of the dense retrievers (appendix A.3: BM25, Contriever and
inf-retriever-v1-1.5b, queried with the AmbigQA question; QAMPARI: BM25 queried with each
answer's evidence snippet). A candidate is a gold document of an
answer when its text contains the answer, or one of its aliases, as an exact substring. A
question is kept only if every answer found a gold document.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from amer_lib.data.corpus import Corpus
from amer_lib.data.questions import MultiAnswerQuestion, normalize_text

DEPTH = 500
QAMPARI_TARGETS = (5, 8)


def bm25_top_k(corpus: Corpus, queries: list[str], k: int = DEPTH, progress: bool = True) -> np.ndarray:
    """Rows `[len(queries), k]` of the best BM25 (bm25s, English stopwords) documents."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus.texts(), stopwords="en", show_progress=progress), show_progress=progress)
    rows, _ = retriever.retrieve(
        bm25s.tokenize(queries, stopwords="en", show_progress=False), k=min(k, len(corpus)), show_progress=progress
    )
    return np.asarray(rows)


def dense_top_k(encoder, index, queries: list[str], k: int = DEPTH) -> np.ndarray:
    """Rows `[len(queries), k]` from a dense encoder's query vectors and an index of its documents."""
    _, rows = index.search(encoder.encode_queries(queries), min(k, len(index)))
    return rows


@dataclass
class MappingReport:
    questions: int
    kept: int
    answers_without_gold: int

    def __str__(self) -> str:
        return (
            f"{self.kept} of {self.questions} questions kept; {self.answers_without_gold} answers "
            "found no gold document"
        )


def map_gold_documents(
    questions: list[MultiAnswerQuestion], corpus: Corpus, candidates: list[np.ndarray]
) -> tuple[list[MultiAnswerQuestion], MappingReport]:
    """Targets for each question from its candidate rows (`candidates[i]`, any union of result
    lists, -1 ignored); questions with an answer left without a gold document are dropped."""
    if len(candidates) != len(questions):
        raise ValueError(f"{len(candidates)} candidate lists for {len(questions)} questions")
    kept, missing = [], 0
    for question, rows in zip(questions, candidates):
        rows = [int(r) for r in dict.fromkeys(np.asarray(rows).reshape(-1).tolist()) if r >= 0]
        texts = [(corpus.documents[r].id, corpus.documents[r].full_text) for r in rows]
        targets = [
            [doc_id for doc_id, text in texts if any(alias in text for alias in aliases)]
            for aliases in question.answers
        ]
        unmatched = sum(not t for t in targets)
        missing += unmatched
        if not unmatched:
            kept.append(replace(question, targets=targets))
    return kept, MappingReport(len(questions), len(kept), missing)


def question_candidates(*ranked: np.ndarray) -> list[np.ndarray]:
    """Per question, the union of several retrievers' result rows `[Q, k]`."""
    return [np.concatenate([r[i] for r in ranked]) for i in range(len(ranked[0]))]


def proof_candidates(
    questions: list[MultiAnswerQuestion], corpus: Corpus, k: int = DEPTH, progress: bool = True
) -> list[np.ndarray]:
    """QAMPARI: per question, the union of the BM25 top-k of each answer's evidence snippet."""
    snippets = [(i, proof) for i, q in enumerate(questions) for proof in q.proofs if proof]
    rows = bm25_top_k(corpus, [s for _, s in snippets], k, progress) if snippets else np.zeros((0, k), int)
    per_question = [[] for _ in questions]
    for (i, _), result in zip(snippets, rows):
        per_question[i].append(result)
    return [np.concatenate(r) if r else np.zeros(0, int) for r in per_question]


def filter_target_count(questions: list[MultiAnswerQuestion], low: int, high: int) -> list[MultiAnswerQuestion]:
    return [q for q in questions if low <= len(q.targets) <= high]


def without_test_questions(
    train: list[MultiAnswerQuestion], test: list[MultiAnswerQuestion]
) -> tuple[list[MultiAnswerQuestion], int]:
    """`train` without the questions whose text (in `normalize_text` form) is a test question's,
    and how many were removed. AmbigQA's questions are NQ-open questions, so the multi-answer
    NQ-open questions added to training hold AmbigQA test questions unless they are removed."""
    test_texts = {normalize_text(q.question) for q in test}
    kept = [q for q in train if normalize_text(q.question) not in test_texts]
    return kept, len(train) - len(kept)


def ambigqa_splits(
    train: list[MultiAnswerQuestion], dev: list[MultiAnswerQuestion], nq_open: list[MultiAnswerQuestion], seed: int = 0
) -> tuple[dict[str, list[MultiAnswerQuestion]], int]:
    """Table 1: test = a seeded half of the mapped AmbigQA dev set; train = mapped AmbigQA train +
    the other half of dev + the mapped multi-answer NQ-open questions, less every question that
    is also a test question. Returns the splits and the number of training questions removed."""
    order = np.random.default_rng(seed).permutation(len(dev))
    half = len(dev) // 2
    test = [dev[i] for i in sorted(order[:half])]
    train, removed = without_test_questions(train + [dev[i] for i in sorted(order[half:])] + nq_open, test)
    return {"train": train, "test": test}, removed


def qampari_splits(
    train: list[MultiAnswerQuestion], dev: list[MultiAnswerQuestion]
) -> dict[str, list[MultiAnswerQuestion]]:
    """Table 1: the mapped train and dev sets, each kept to questions with 5-8 targets."""
    return {"train": filter_target_count(train, *QAMPARI_TARGETS), "test": filter_target_count(dev, *QAMPARI_TARGETS)}
