"""Notebook 03's preparation pipelines: the offline WordNet benchmark, the paper's data from its
published files (with the gold-document mapping) and a dataset of your own, each written as a
prepared benchmark (`amer_lib.data.benchmark`) and encoded; `PrepConfig` is notebook 03's config.
The pipelines are registered by name (`PREPARATIONS`, the config's `source`); the work beyond the
paper registers its own (`amer_lib.beyond`)."""

from __future__ import annotations

import heapq
import json
import os
import re
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from amer_lib.config import Config, param
from amer_lib.core.device import DEVICES
from amer_lib.core.index import ShardedFlatIndex, check_ivfpq_factory
from amer_lib.core.train import VALIDATION_FRACTION, validation_size
from amer_lib.data import wordnet
from amer_lib.data.benchmark import (
    N_QUERIES,
    Benchmark,
    existing,
    write_benchmark,
)
from amer_lib.data.bm25 import Bm25Index
from amer_lib.data.corpus import Corpus, DocumentStore, iter_documents, write_tsv
from amer_lib.data.encoders import ENCODERS, DocumentEncoder, encode_corpus, get_encoder_spec
from amer_lib.data.gold import (
    DEPTH,
    QAMPARI_TARGETS,
    MappingReport,
    ambigqa_splits,
    dense_top_k,
    filter_answer_count,
    map_gold_documents,
    proof_candidates,
    qampari_splits,
    question_candidates,
)
from amer_lib.data.questions import (
    DataFormatError,
    MultiAnswerQuestion,
    question_parts,
    read_ambigqa,
    read_nq_open_multi,
    read_qampari,
    read_questions,
    write_questions,
)
from amer_lib.io import FIGURES_HELP, file_record, open_text, require_writable, write_json
from amer_lib.progress import AmerWarning, tqdm

# The paper's "development set and test set" of NQ-open (Lee et al., 2019), whose multi-answer
# questions join training: AmbigQA's nqopen-dev.json (8,757 questions held out of NQ's training
# set, like AmbigQA's own dev set) and nqopen-test.json (3,610: Google's NQ-open.dev.jsonl), the
# files the AMER authors read. Google's EfficientQA test set is not part of it.
NQ_OPEN_FILES = ("nqopen-dev.json", "nqopen-test.json")
# The prepared questions keep each answer's own question (`answer_questions`: the compound
# benchmark's components, AmbigQA's disambiguated questions, your file's), which the component
# term reads: in the recipes of the benchmarks that can hold them, so that one prepared before is
# refused by `existing` and prepared again rather than read without them
ANSWER_QUESTIONS = "kept"
# A dataset of your own whose questions carry answer_questions gets a validation split of its own
# (`component_validation`): in its recipe, so that one prepared before (validation drawn at training
# time from questions whose components training also sees) is refused and prepared again
HELD_OUT_COMPONENTS = "components held out"
MAX_AUTO_QUERIES = 8  # a dataset of your own: n defaults to its median answer count, at most this
DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")  # it names files and runs


def prepare_wordnet(directory: str | Path, max_train: int, max_test: int, corpus_size: int, seed: int = 0) -> Benchmark:
    """The offline benchmark, cut to CPU size: at most `max_train` / `max_test` questions per
    dataset (a seeded sample), and a corpus of every gold gloss of those questions plus random
    other glosses up to `corpus_size` documents."""
    directory = Path(directory)
    recipe = {
        "source": "wordnet",
        "max_train": max_train,
        "max_test": max_test,
        "corpus_size": corpus_size,
        "seed": seed,
    }
    if (found := existing(directory, recipe)) is not None:
        return found
    rng = np.random.default_rng(seed)
    splits = _wordnet_splits(max_train, max_test, rng)
    path, size = wordnet_corpus(directory, splits, corpus_size, rng)
    return write_benchmark(directory, splits, path, size, {"recipe": recipe})


def _wordnet_splits(max_train: int, max_test: int, rng: np.random.Generator) -> dict[str, dict[str, list]]:
    """The offline benchmark's questions: a seeded sample of each WordNet kind's splits."""
    return {
        f"wordnet_{kind}": {
            split: _sample(wordnet.load_questions(kind, split), limit, rng)
            for split, limit in (("train", max_train), ("test", max_test))
        }
        for kind in wordnet.KINDS
    }


def _gold_ids(splits: dict[str, dict[str, list[MultiAnswerQuestion]]]) -> set[str]:
    """Every gold document of the questions of `splits`."""
    questions = [q for by_split in splits.values() for qs in by_split.values() for q in qs]
    return {d for q in questions for docs in q.targets for d in docs}


def offline_sizes(
    directory: str | Path, datasets: list[str], offline_recipe: PrepConfig
) -> tuple[dict[str, list[MultiAnswerQuestion]], int]:
    """What `prepared_benchmark` will prepare in `directory` where it holds no benchmark yet, without
    preparing it (nothing is written): each of `datasets`' training questions and the corpus's size,
    `prepare_wordnet`'s draws made again. For the memory preflight before a backbone's weights are
    fetched; a benchmark that is not the offline one fails as `prepared_benchmark` does."""
    _check_offline(directory, datasets, offline_recipe)
    recipe = offline_recipe
    splits = _wordnet_splits(recipe.max_train, recipe.max_test, np.random.default_rng(recipe.seed))
    gold = _gold_ids(splits)
    others = len(wordnet.load_corpus().documents) - len(gold)
    return {d: splits[d]["train"] for d in datasets}, len(gold) + max(0, min(others, recipe.corpus_size - len(gold)))


def wordnet_corpus(
    directory: Path, splits: dict[str, dict[str, list[MultiAnswerQuestion]]], corpus_size: int, rng
) -> tuple[Path, int]:
    """`directory/corpus.tsv`: every gold gloss of the questions plus random other glosses up to
    `corpus_size` documents, in WordNet's order; its path and size."""
    corpus = wordnet.load_corpus()
    gold = _gold_ids(splits)
    others = [d.id for d in corpus.documents if d.id not in gold]
    extra = rng.choice(len(others), max(0, min(len(others), corpus_size - len(gold))), replace=False)
    keep = gold | {others[i] for i in extra}
    chosen = [d for d in corpus.documents if d.id in keep]
    path = directory / "corpus.tsv"
    write_tsv(path, chosen)
    return path, len(chosen)


def _sample(questions: list, limit: int, rng: np.random.Generator) -> list:
    if len(questions) <= limit:
        return questions
    return [questions[i] for i in sorted(rng.choice(len(questions), limit, replace=False))]


# The paper data's BM25 candidates order equal scores by row (`data.bm25.select_top_k`): the same
# gold documents on every CPU (bm25s's numpy selection orders ties by the CPU's SIMD code) and
# selected among the positive scores alone, where bm25s's scans every one of the 25M
BM25_TIES = "row"


def prepare_paper_data(
    raw_dir: str | Path,
    corpus_path: str | Path,
    directory: str | Path,
    dense_retrievers: list[tuple],
    seed: int = 0,
    progress: bool = True,
    depth: int = DEPTH,
) -> tuple[Benchmark, dict]:
    """AmbigQA (+ NQ-open multi-answer) and QAMPARI mapped to gold passages, in Table 1's splits.

    `raw_dir` holds the published files (AmbigQA train_light.json / dev_light.json, NQ-open
    NQ-open.dev.jsonl / NQ-open.efficientqa.test.1.1.jsonl, QAMPARI train_data.jsonl /
    dev_data.jsonl); `dense_retrievers` are (encoder, index of its corpus embeddings) pairs whose
    top `depth` (the paper: 500) join BM25's for the AmbigQA and NQ-open questions (the paper: Contriever and
    inf-retriever). Returns the benchmark and the mapping reports, with the number of training
    questions removed because they are AmbigQA test questions.
    """
    recipe = {
        "source": "paper",
        "raw_dir": str(raw_dir),
        "corpus": str(corpus_path),
        "seed": seed,
        "depth": depth,
        "dense_retrievers": [encoder.spec.name for encoder, _ in dense_retrievers],
        "bm25_ties": BM25_TIES,
        "answer_questions": ANSWER_QUESTIONS,
    }
    raw = Path(raw_dir)
    read = ["train_light.json", "dev_light.json", *NQ_OPEN_FILES, "train_data.jsonl", "dev_data.jsonl"]
    inputs = {**{name: raw / name for name in read}, "corpus": Path(corpus_path)}
    if (found := existing(directory, recipe, inputs)) is not None:
        return found, found.manifest["mapping"]
    # the corpus on disk for the mapping's random reads, and BM25 over it once for all five
    # searches, both kept beside the benchmark for a rerun (neither holds the corpus in memory)
    key = file_key(corpus_path)
    corpus = DocumentStore.of_corpus(corpus_path, Path(directory) / "corpus_store", key, progress)
    bm25 = Bm25Index.of_corpus(corpus.texts(), len(corpus), Path(directory) / "bm25", key, progress)
    parts = MappingParts(Path(directory) / "mapping", recipe)
    reports = {}

    def mapped(name: str, questions: list[MultiAnswerQuestion], proofs: bool = False) -> list[MultiAnswerQuestion]:
        def map_part(part: list[MultiAnswerQuestion]):
            if proofs:
                search = lambda texts, k: bm25.top_k(
                    texts, k, progress=False, processes=SEARCH_PROCESSES, ties=BM25_TIES
                )
                candidates = proof_candidates(part, search, depth)
            else:
                texts = [q.question for q in part]
                candidates = question_candidates(
                    bm25.top_k(texts, depth, progress=False, processes=SEARCH_PROCESSES, ties=BM25_TIES),
                    *(dense_top_k(encoder, index, texts, depth) for encoder, index in dense_retrievers),
                )
            return map_gold_documents(part, corpus, candidates)

        kept, reports[name] = parts.map(name, questions, map_part, progress)
        return kept

    ambigqa, removed = ambigqa_splits(
        mapped("ambigqa_train", read_ambigqa(raw / "train_light.json")),
        mapped("ambigqa_dev", read_ambigqa(raw / "dev_light.json")),
        mapped("nq_open", [q for name in NQ_OPEN_FILES for q in read_nq_open_multi(raw / name)]),
        seed,
    )
    # QAMPARI keeps questions of 5-8 answers: filtered before their proofs are searched
    qampari_read = {split: read_qampari(raw / f"{split}_data.jsonl") for split in ("train", "dev")}
    qampari = qampari_splits(
        *(
            mapped(f"qampari_{split}", filter_answer_count(questions, *QAMPARI_TARGETS), proofs=True)
            for split, questions in qampari_read.items()
        )
    )
    mapping = {name: vars(report) for name, report in reports.items()}
    mapping["ambigqa_train_removed_as_test_questions"] = removed
    mapping.update({f"qampari_{split}_read": len(questions) for split, questions in qampari_read.items()})
    benchmark = write_benchmark(
        Path(directory),
        {"ambigqa": ambigqa, "qampari": qampari},
        Path(corpus_path).resolve(),
        len(corpus),
        {
            "recipe": recipe,
            "inputs": {name: file_record(path) for name, path in inputs.items() if path.exists()},
            "mapping": mapping,
        },
    )
    return benchmark, mapping


def file_key(path: str | Path) -> dict:
    """What identifies a corpus file's contents for a kept index: its path, size and modification time."""
    stat = Path(path).stat()
    return {"path": str(Path(path).resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


MAPPING_PART = 2000  # questions mapped and written at a time: a kill loses at most one part's work
SEARCH_PROCESSES = os.cpu_count() or 1  # BM25 queries over every core: the rows do not depend on it


class MappingParts:
    """The gold mapping of each split written as it goes, `MAPPING_PART` questions a part
    (`<folder>/<split>/part-NNNNN.jsonl` and its report, both atomic, the report last), so that a
    rerun with the same recipe reads the finished parts back and maps only the rest."""

    def __init__(self, folder: Path, recipe: dict):
        self.folder = folder
        marker = folder / "recipe.json"
        if marker.exists() and json.loads(marker.read_text()) != recipe:
            shutil.rmtree(folder)  # parts of another recipe: not this benchmark's
        if not marker.exists():
            write_json(marker, recipe)

    def map(self, name: str, questions: list[MultiAnswerQuestion], map_part, progress: bool = True):
        """`map_part(questions) -> (kept, MappingReport)` over the split's parts; the kept
        questions in order and the summed report."""
        kept, report = [], MappingReport(0, 0, 0)
        starts = range(0, len(questions), MAPPING_PART)
        for number, start in enumerate(tqdm(starts, desc=f"gold mapping {name}", unit="part", disable=not progress)):
            path = self.folder / name / f"part-{number:05d}.jsonl"
            done = path.with_suffix(".json")
            if done.exists():
                part_kept, part_report = read_questions(path), MappingReport(**json.loads(done.read_text()))
            else:
                part_kept, part_report = map_part(questions[start : start + MAPPING_PART])
                write_questions(path, part_kept)
                write_json(done, vars(part_report))
            kept += part_kept
            report = report + part_report
        return kept, report


def split_questions(
    questions: list[MultiAnswerQuestion], test_fraction: float, seed: int = 0
) -> dict[str, list[MultiAnswerQuestion]]:
    """A seeded train / test split: `test_fraction` of the questions (at least one) to test, each
    split in the input's order."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    if len(questions) < 2:
        raise ValueError(f"{len(questions)} question(s) cannot be split into a train and a test set")
    n_test = min(len(questions) - 1, max(1, round(test_fraction * len(questions))))
    test = set(np.random.default_rng(seed).permutation(len(questions))[:n_test].tolist())
    return {
        "train": [q for i, q in enumerate(questions) if i not in test],
        "test": [q for i, q in enumerate(questions) if i in test],
    }


def question_components(question: MultiAnswerQuestion) -> frozenset[str]:
    """The component questions of a question (`questions.question_parts`, as the component term reads
    them), as a set."""
    return frozenset(question_parts(question))


def component_validation(
    questions: list[MultiAnswerQuestion], seed: int = 0, fraction: float = VALIDATION_FRACTION
) -> tuple[dict[str, list[MultiAnswerQuestion]], dict]:
    """Training questions split into a training and a validation split that share no component
    question (`question_components`), as the compound benchmark holds its validation components
    out (`compound.hold_out`): validation then measures what test measures, components never
    trained on, where a random 10% of compounds would reuse components training sees.

    The rule, checkable from the files: a validation question's every component is held out, and
    no training question has a held-out component. The questions that mix held-out and kept
    components are in neither split. Drawn greedily, seeded: the first draw is a random question
    (`seed`), each next one the question with the fewest components not yet held out (ties in the
    seeded order), so that validation grows where components are already held and costs training
    few questions; every question whose components are then all held out joins validation. Once
    validation holds `validation_size` of the questions (the 10% of today's split) only draws that
    take no further question from training are made (they complete questions already out of it); a
    draw that would leave training fewer than the questions without that 10% and as many again
    (80%) is skipped. With components shared widely (a few hundred components in thousands of
    compounds) it draws fewer, and the report says how many; none at all is an error. Returns the
    splits (each in the input's order) and the report: `wanted`, `drawn`, `left_out` (questions in
    neither split), `train`."""
    parts = [question_components(q) for q in questions]
    n, wanted = len(questions), validation_size(len(questions), fraction)
    if n < 2:
        raise ValueError(f"{n} training question(s) cannot be split into a training and a validation set")
    floor = max(1, n - 2 * wanted)
    rank = np.random.default_rng(seed).permutation(n).tolist()
    asked_by: dict[str, list[int]] = {}
    for i, part in enumerate(parts):
        for component in part:
            asked_by.setdefault(component, []).append(i)
    remaining = [len(part) for part in parts]  # components of each question not yet held out
    held: set[str] = set()
    out: set[int] = set()  # questions with a held-out component: not in training
    validation: set[int] = set()  # questions whose every component is held out
    queue = [(remaining[i], rank[i], i) for i in range(n)]
    heapq.heapify(queue)
    while queue:
        count, _, i = heapq.heappop(queue)
        if count != remaining[i] or i in validation:
            continue  # an entry made stale by a later hold-out
        new = [c for c in parts[i] if c not in held]
        leaving = {j for c in new for j in asked_by[c]} - out
        if (len(validation) >= wanted and leaving) or n - len(out) - len(leaving) < floor:
            continue
        for component in new:
            held.add(component)
            for j in asked_by[component]:
                remaining[j] -= 1
                out.add(j)
                if remaining[j] == 0:
                    validation.add(j)
                else:
                    heapq.heappush(queue, (remaining[j], rank[j], j))
    if not validation:
        raise ValueError(
            f"no validation question can be drawn from the {n} training questions without taking more than "
            f"{n - floor} of them from training: every question shares a component question (answer_questions) "
            "with too many others. Give more questions whose components are not all shared, or questions "
            "without answer_questions (validation is then 10% of them, drawn at training time)"
        )
    splits = {
        "train": [q for i, q in enumerate(questions) if i not in out],
        "validation": [q for i, q in enumerate(questions) if i in validation],
    }
    report = {
        "wanted": wanted,
        "drawn": len(validation),
        "left_out": len(out) - len(validation),
        "train": len(splits["train"]),
    }
    return splits, report


def default_n_queries(questions: list[MultiAnswerQuestion]) -> int:
    """The median number of answers per question (rounded up), at most `MAX_AUTO_QUERIES`."""
    return int(min(MAX_AUTO_QUERIES, np.ceil(np.median([len(q.answers) for q in questions]))))


def prepare_files(
    directory: str | Path,
    dataset: str,
    questions_path: str | Path,
    corpus_path: str | Path,
    test_questions_path: str | Path | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    n_queries: int = 0,
    use_titles: bool = True,
    validation_questions_path: str | Path | None = None,
) -> Benchmark:
    """A benchmark of your own: questions in the library's jsonl (`qid`, `question`, `answers`,
    `targets`: one list of gold document ids per answer; optionally `answer_questions`, one
    question per answer, which the prepared files keep) over a TSV or BEIR corpus.

    Test questions come from `test_questions_path` when given, else a seeded `test_fraction` of
    the questions (`split_questions`). Where the questions carry `answer_questions`, the training
    questions are split again into training and validation questions that share no component
    question (`component_validation`, seeded, its count printed and kept in the manifest), which
    every run then validates on; without them a run draws 10% of the training questions at
    training time. `validation_questions_path`, your own validation questions, replaces both draws:
    every run selects its checkpoint on them (a qid shared with the training or test questions is an
    error; a component question shared with training is counted and warned of). `n_queries` is the
    number of query vectors AMER generates
    for the dataset (0: `default_n_queries` of the training questions). `use_titles = False`
    leaves the corpus titles out of what the document encoder and BM25 see (a title that names
    the answer makes retrieval lexical). Every problem is reported with its file and line."""
    if dataset in N_QUERIES or not DATASET_NAME.match(dataset):
        problem = "a built-in dataset's" if dataset in N_QUERIES else "not a valid name"
        raise ValueError(
            f"dataset name {dataset!r} is {problem}; choose a name of letters, digits, '_' and '-' "
            f"other than {', '.join(N_QUERIES)}"
        )
    recipe = {
        "source": "files",
        "dataset": dataset,
        "questions": str(Path(questions_path).resolve()),
        "test_questions": str(Path(test_questions_path).resolve()) if test_questions_path else None,
        "corpus": str(Path(corpus_path).resolve()),
        "test_fraction": None if test_questions_path else test_fraction,
        "seed": seed,
        "n_queries": n_queries,
        "use_titles": use_titles,
        "answer_questions": ANSWER_QUESTIONS,
    }
    if validation_questions_path:
        recipe["validation"] = "file"
        recipe["validation_questions"] = str(Path(validation_questions_path).resolve())
    elif _has_answer_questions(questions_path):
        recipe["validation"] = HELD_OUT_COMPONENTS
    if not Path(corpus_path).is_file():
        raise FileNotFoundError(
            f"corpus file {corpus_path} does not exist (source 'files': corpus_path, a TSV of "
            "id<TAB>text<TAB>title or a BEIR corpus.jsonl)"
        )
    inputs = {
        "questions": questions_path,
        "test_questions": test_questions_path,
        "validation_questions": validation_questions_path,
        "corpus": corpus_path,
    }
    inputs = {name: path for name, path in inputs.items() if path}
    if (found := existing(directory, recipe, inputs)) is not None:
        return found
    corpus = Corpus.read(corpus_path)
    if len(corpus) == 0:
        raise DataFormatError(f"{corpus_path} holds no documents")
    questions = _checked_questions(questions_path, corpus, corpus_path)
    if test_questions_path:
        splits = {"train": questions, "test": _checked_questions(test_questions_path, corpus, corpus_path)}
        both = {q.qid for q in splits["train"]} & {q.qid for q in splits["test"]}
        if both:
            raise DataFormatError(
                f"{questions_path} and {test_questions_path} share the qid(s) {sorted(both)[:5]}: a test "
                "question must not be trained on"
            )
    else:
        splits = split_questions(questions, test_fraction, seed)
    n = n_queries or default_n_queries(splits["train"])
    extra = {
        "recipe": recipe,
        "inputs": {name: file_record(path) for name, path in inputs.items()},
        "n_queries": {dataset: n},
        "use_titles": use_titles,
    }
    if validation_questions_path:
        validation = _checked_questions(validation_questions_path, corpus, corpus_path)
        for name, other in splits.items():
            both = {q.qid for q in validation} & {q.qid for q in other}
            if both:
                raise DataFormatError(
                    f"{validation_questions_path} and the {name} questions share the qid(s) {sorted(both)[:5]}: a "
                    "validation question must be neither trained nor tested on"
                )
        trained = {c for q in splits["train"] for c in question_components(q)}
        shared = sum(bool(question_components(q) & trained) for q in validation)
        report = {"file": str(Path(validation_questions_path).resolve()), "drawn": len(validation)}
        report |= {"sharing_a_component": shared, "train": len(splits["train"])}
        splits = {"train": splits["train"], "validation": validation, "test": splits["test"]}
        extra["validation"] = {dataset: report}
        _say_validation_file(dataset, report)
    elif "validation" in recipe:
        held, report = component_validation(splits["train"], seed)
        splits = {"train": held["train"], "validation": held["validation"], "test": splits["test"]}
        extra["validation"] = {dataset: report}
        _say_validation(dataset, report)
    return write_benchmark(Path(directory), {dataset: splits}, Path(corpus_path).resolve(), len(corpus), extra)


def _has_answer_questions(path: str | Path) -> bool:
    """Whether any question of the file at `path` has `answer_questions` (False when there is no file:
    `_checked_questions` names that problem)."""
    return Path(path).is_file() and any(q.answer_questions for q in read_questions(path))


def _say_validation_file(dataset: str, report: dict) -> None:
    """Notebook 03's line on your validation file, its resolution, and a warning where its questions
    share a component question with training or are too few to choose on."""
    print(
        f"{dataset}: {report['drawn']} validation question(s) from {report['file']} "
        f"({report['sharing_a_component']} sharing a component question with training); "
        f"{validation_resolution(report['drawn'])}",
        flush=True,
    )
    if report["sharing_a_component"]:
        warnings.warn(
            f"{dataset}: {report['sharing_a_component']} of the {report['drawn']} validation questions share a "
            "component question with training, so checkpoint selection reads questions partly trained on",
            AmerWarning,
            stacklevel=2,
        )
    warn_if_too_few_to_choose(dataset, report["drawn"])


def _say_validation(dataset: str, report: dict) -> None:
    """Notebook 03's line on the validation split `component_validation` drew, its resolution, and a
    warning where it is short of the 10% wanted or of what choosing needs."""
    print(
        f"{dataset}: {report['drawn']} validation question(s) drawn whose component questions no training "
        f"question has ({report['wanted']} wanted, 10% of the training questions); {report['left_out']} "
        f"question(s) that share a component with both splits left out; {report['train']} to train on; "
        f"{validation_resolution(report['drawn'])}",
        flush=True,
    )
    warn_if_too_few_to_choose(dataset, report["drawn"])
    if report["drawn"] < report["wanted"]:
        warnings.warn(
            f"{dataset}: only {report['drawn']} of the {report['wanted']} validation questions wanted could be "
            "drawn without a component question training sees (more would take over 20% of the questions from "
            "training); checkpoint selection reads these few",
            AmerWarning,
            stacklevel=2,
        )


VALIDATION_TO_CHOOSE = 100  # validation questions below which a checkpoint or a setting cannot be chosen on them


def validation_half_width(n: int) -> float:
    """The half-width, in points, of a 95% interval of an MRecall near 50% over `n` questions: 1.96 sqrt(0.25 / n)."""
    return 196 * (0.25 / n) ** 0.5


def validation_resolution(n: int) -> str:
    """What `n` validation questions resolve: the points of MRecall@100 one question is worth, and
    `validation_half_width`."""
    return (
        f"one validation question is {100 / n:.2f} points of MRecall@100, and a validation MRecall near 50% is "
        f"known to ±{validation_half_width(n):.1f} points"
    )


def warn_if_too_few_to_choose(dataset: str, n: int) -> None:
    """An AmerWarning, before any training, where `n` validation questions are too few to choose on."""
    if n < VALIDATION_TO_CHOOSE:
        enough = f"{VALIDATION_TO_CHOOSE} or more are needed for ±{validation_half_width(VALIDATION_TO_CHOOSE):.1f}"
        warnings.warn(
            f"{dataset}: {n} validation question(s) are too few to choose a checkpoint or a setting on "
            f"({validation_resolution(n)}; {enough}): bring a larger "
            "validation file of your own (notebook 03's validation_questions_path; docs/usage.md, 'Validation "
            "questions of your own')",
            AmerWarning,
            stacklevel=2,
        )


def _checked_questions(path: str | Path, corpus: Corpus, corpus_path: str | Path) -> list[MultiAnswerQuestion]:
    """The questions of `path`; a gold document id that is not in the corpus is an error naming its line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"questions file {path} does not exist (source 'files': questions_path)")
    questions = read_questions(path)
    if not questions:
        raise DataFormatError(f"{path} holds no questions")
    for number, question in zip(_question_lines(path), questions):
        unknown = [d for docs in question.targets for d in docs if d not in corpus.row_of]
        if unknown:
            raise DataFormatError(
                f"{path}:{number}: question {question.qid!r} names gold document id(s) {unknown[:5]} "
                f"that are not in the corpus {corpus_path}"
            )
    return questions


def _question_lines(path: Path) -> list[int]:
    """The line number of each question of a jsonl (blank lines skipped, as read_questions does)."""
    with open_text(path) as lines:
        return [number for number, line in enumerate(lines, 1) if line.strip()]


# Notebook 03's pipelines by `source`: `prepare(params, encoder, progress)` writes the benchmark
# `params` describe into `params.prepared_dir` (before its corpus is encoded with `encoder`) and
# gives it with its gold mapping's reports ({} for a benchmark without a mapping)
Preparation = Callable[["PrepConfig", DocumentEncoder, bool], tuple[Benchmark, dict]]
PREPARATIONS: dict[str, Preparation] = {}


@dataclass(frozen=True)
class PrepConfig(Config):
    """Notebook 03's parameters: which benchmark to prepare, and how to encode and index it."""

    # the first line of the notebook's parameters cell
    CELL_HEADER: ClassVar[str] = (
        "Offline CPU default: 10 min on 2 shared cores, preparing and encoding the corpus, then the IVF-PQ "
        "sweep (make figures; benchmarks/times.json). Paper scale: params/03_real_data_prep/"
    )

    source: str = param(
        "wordnet",
        choices=PREPARATIONS,
        help="offline WordNet questions, the paper's data, your own files, or compounds (amer_lib.beyond)",
    )
    max_train: int = param(3000, minimum=1, help="training questions per dataset, at most")
    max_test: int = param(600, minimum=1, help="test questions per dataset, at most")
    corpus_size: int = param(30000, minimum=1, help="WordNet corpus documents: the gold ones and random others")
    raw_dir: str = param("../data/raw", help="paper data: the downloaded question files (the README's downloads)")
    corpus_path: str = param(
        "../data/qampari_wikipedia_chunks.jsonl",
        help="paper data (QAMPARI's chunks jsonl, the README's downloads; or a TSV), or yours (TSV id/text/title, "
        "BEIR corpus.jsonl)",
    )
    questions_path: str = param(
        "", help='with source "files": your own questions (jsonl: qid, question, answers, targets) over corpus_path'
    )
    test_questions_path: str = param("", help='your own test split; "" draws test_fraction of questions_path (seeded)')
    validation_questions_path: str = param(
        "",
        default_if_absent=True,
        help='your own validation split, which every run selects its checkpoint on; "" draws one (10% of the '
        "training questions, none sharing a component question with training where they have answer_questions)",
    )
    test_fraction: float = param(0.2, help="share of questions_path drawn for testing")
    dataset_name: str = param("my_dataset", help="names its files and runs (not a built-in name)")
    n_queries: int = param(
        0, minimum=0, help="query vectors AMER generates per question; 0: the median answer count, at most 8"
    )
    compound_ks: list[int] = param(
        [1, 2, 3],
        minimum=1,
        help='with source "compound": k WordNet questions joined into one (datasets compound_k1, compound_k2, ...)',
    )
    compound_components: list[str] = param(
        ["senses", "kinds"], choices=wordnet.KINDS, help="the WordNet questions compounds join"
    )
    compound_max_answers: int = param(
        8,
        minimum=1,
        help="answers per compound question, at most (the paper's QAMPARI has 5-8); components that do not fit "
        "are not drawn",
    )
    compound_findable_depth: int = param(
        100, minimum=0, help="only components whose every answer the encoder finds alone in its top N; 0: all"
    )
    use_titles: bool = param(True, help="False: the encoder and BM25 see each document's text without its title")
    encoder: str = param("minilm", choices=tuple(ENCODERS), help="the document encoder of the corpus")
    mapping_encoders: list[str] = param(
        ["contriever-msmarco", "inf-retriever-v1-1.5b"],
        choices=tuple(ENCODERS),
        help="paper data only: the gold mapping's dense retrievers",
    )
    encode_batch_size: int = param(128, minimum=1, help="documents encoded at a time")
    shard_size: int = param(100000, minimum=1, help="document vectors per file of the corpus's embeddings")
    ivfpq_factories: list[str] = param(
        ["IVF256,PQ16", "IVF256,PQ48", "IVF256,PQ96"], help="FAISS index factories of the IVF-PQ sweep"
    )
    ivfpq_nprobes: list[int] = param([8, 32, 128], minimum=1, help="inverted lists each query visits")
    seed: int = param(0, help="seed of the questions' draws and splits")
    device: str = param("auto", choices=DEVICES, help="auto: the GPU when torch sees one")
    prepared_dir: str = param("../results/prepared/wordnet", help="where the prepared benchmark goes")
    figures_dir: str = param("", help=FIGURES_HELP)

    def __post_init__(self):
        super().__post_init__()
        for factory in self.ivfpq_factories:  # before hours of encoding, not after
            check_ivfpq_factory(factory, get_encoder_spec(self.encoder).dim)


def register_preparation(source: str, prepare: Preparation) -> Preparation:
    """Add a benchmark notebook 03 prepares as `source` (a choice of `PrepConfig.source`)."""
    if source in PREPARATIONS:
        raise ValueError(f"preparation source {source!r} is registered already")
    PREPARATIONS[source] = prepare
    return prepare


def prepare(params: PrepConfig, progress: bool = True) -> tuple[Benchmark, dict]:
    """Notebook 03: the benchmark its parameters describe (`PREPARATIONS[params.source]`), with its
    corpus encoded."""
    require_writable(params.prepared_dir, "prepared_dir")  # before any work, not at the first file written
    if not params.use_titles and params.source != "files":
        raise ValueError(f"use_titles = False applies to source 'files' (your own corpus), not {params.source!r}")
    if params.validation_questions_path and params.source != "files":
        raise ValueError(
            f"validation_questions_path applies to source 'files' (your own questions), not {params.source!r}"
        )
    encoder = DocumentEncoder(params.encoder, device=None if params.device == "auto" else params.device)
    benchmark, mapping = PREPARATIONS[params.source](params, encoder, progress)
    benchmark.encode(encoder, params.shard_size, params.encode_batch_size, progress)
    return benchmark, mapping


def _wordnet(params: PrepConfig, encoder: DocumentEncoder, progress: bool) -> tuple[Benchmark, dict]:
    directory = Path(params.prepared_dir)
    return prepare_wordnet(directory, params.max_train, params.max_test, params.corpus_size, params.seed), {}


def _files(params: PrepConfig, encoder: DocumentEncoder, progress: bool) -> tuple[Benchmark, dict]:
    benchmark = prepare_files(
        Path(params.prepared_dir),
        params.dataset_name,
        params.questions_path,
        params.corpus_path,
        params.test_questions_path or None,
        params.test_fraction,
        params.seed,
        params.n_queries,
        params.use_titles,
        params.validation_questions_path or None,
    )
    return benchmark, {}


def _paper(params: PrepConfig, encoder: DocumentEncoder, progress: bool) -> tuple[Benchmark, dict]:
    """The corpus is encoded first with every `mapping_encoders` model (the paper: Contriever and
    inf-retriever), since the gold mapping searches it with them besides BM25; the document
    encoder's embeddings are reused when it is one of them."""
    directory, device = Path(params.prepared_dir), None if params.device == "auto" else params.device
    retrievers = []
    for name in params.mapping_encoders:
        mapper = encoder if name == encoder.spec.name else DocumentEncoder(name, device=device)
        shards = encode_corpus(
            mapper,
            iter_documents(params.corpus_path),
            directory / "embeddings" / name,
            params.shard_size,
            params.encode_batch_size,
            progress=progress,
        )
        retrievers.append((mapper, ShardedFlatIndex(shards)))
    return prepare_paper_data(params.raw_dir, params.corpus_path, directory, retrievers, params.seed, progress)


register_preparation("wordnet", _wordnet)  # the offline benchmark
register_preparation("paper", _paper)  # the paper's data from its published files
register_preparation("files", _files)  # a dataset of your own (questions + corpus)


def _check_offline(directory: str | Path, datasets: list[str], offline_recipe: PrepConfig) -> None:
    """Fail unless `datasets` are the offline benchmark's, which `offline_recipe` prepares."""
    offline = [d for d in datasets if d.startswith("wordnet_")]
    if offline != list(datasets) or offline_recipe.source != "wordnet":
        raise FileNotFoundError(
            f"{directory} holds no prepared benchmark; prepare {list(datasets)} with "
            "notebooks/03_real_data_prep.ipynb first (its parameter file for your data)"
        )


def prepared_benchmark(
    directory: str | Path, datasets: list[str], offline_recipe: PrepConfig, device: str = "auto", progress: bool = True
) -> Benchmark:
    """The benchmark prepared in `directory`, holding `datasets`; the offline WordNet benchmark is
    prepared there first when it is missing, with `offline_recipe` (notebook 03's defaults: the call
    notebook 03 makes), so that notebooks 01 and 04 stand alone. Any other benchmark must come from
    notebook 03."""
    directory = Path(directory)
    if not (directory / "manifest.json").exists():
        _check_offline(directory, datasets, offline_recipe)
        prepare(offline_recipe.replace(prepared_dir=str(directory), device=device), progress)
    benchmark = Benchmark(directory)
    benchmark.check(datasets)
    return benchmark
