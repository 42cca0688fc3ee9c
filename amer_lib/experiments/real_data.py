"""Notebook 04: single-query and AMER query encoders on a prepared text benchmark, the paper's
baselines built on the single-query model, and the compound benchmark's decomposition oracle.

Each (dataset, system, seed) run trains a query encoder against the frozen document
embeddings, keeps the best checkpoint by validation loss, retrieves the top 100 for every test
question (AMER: round-robin over its n vectors) and writes a TREC run file and a results JSON
with per-question scores, so that the tables, the bootstrap and the figures are recomputed
from files (`amer_lib.report.summaries`). A rerun with the same parameters reads the results back
(`amer_lib.runs.store.REAL_RUNS`). The module's sections: the runs, the paper's hyperparameter
search, the baselines (query expansion and MMR re-ranking), the compound benchmark.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from amer_lib.baselines.expansion import (
    EXPANSION_SOURCES,
    ChatEndpointGenerator,
    GenerationCache,
    HFGenerator,
    PseudoRelevanceFeedback,
    expanded_query,
    generate_keywords,
)
from amer_lib.baselines.mmr import mmr_rerank, tune_lambda
from amer_lib.core import distributed
from amer_lib.core.backbones import (
    BackboneUnavailableError,
    describe,
    get_backbone,
    load_tokenizer,
    require_weights,
)
from amer_lib.core.device import DeviceUnavailableError, resolve_device
from amer_lib.core.merge import PAPER_MERGE
from amer_lib.core.metrics import (
    K,
    evaluate,
    low_similarity_subset,
)
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.search import ResidentFlatIndex, ShardedFlatIndex, faiss_sees_gpus, multi_vector_search
from amer_lib.core.train import train
from amer_lib.data import compound
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.datasets import TextData
from amer_lib.data.encoders import DocumentEncoder, get_encoder_spec
from amer_lib.data.preparation import PrepConfig, offline_sizes, prepared_benchmark
from amer_lib.data.prompts import PromptTemplate
from amer_lib.data.questions import MultiAnswerQuestion, component_texts
from amer_lib.io import require_writable
from amer_lib.progress import AmerWarning
from amer_lib.report.summaries import summary
from amer_lib.runs import memory
from amer_lib.runs.activation_memory import PROMPT_TOKENS
from amer_lib.runs.benchmark_runs import NEGATIVE_POOL, RunContext, cached_result, run_facts
from amer_lib.runs.configs import BASELINES, SYSTEMS, RealConfig
from amer_lib.runs.dispatch import run_jobs
from amer_lib.runs.memory import MemoryPlan
from amer_lib.runs.query_encoders import build_query_encoder, generated_vectors, text_prompts, train_config
from amer_lib.runs.saved import save_pretrained
from amer_lib.runs.store import REAL_RUNS, real_run_name
from amer_lib.runs.tuning import grid_cost, grid_points, point_params, selected_checkpoint


def run_one(
    params: RealConfig,
    dataset: str,
    system: str,
    seed: int,
    progress: bool = True,
    on_step: Callable[[], None] | None = None,
    device: torch.device | None = None,
) -> dict | None:
    """Train, retrieve and score one run (an interrupted one resumes from its checkpoint); `run_all`
    reads the runs made before back instead of calling this.

    On every rank of a torch.distributed group (`amer_lib.core.distributed`, with this rank's
    `device`): the ranks train together, rank 0 retrieves and writes, the others return None."""
    params = params.for_system(system)  # single-query trains without AMER's loss levers
    benchmark = Benchmark(params.prepared_dir)  # opened once for the run
    context = RunContext.of(params, benchmark)
    device = device or resolve_device(params.device)
    n_queries = context.n_queries(dataset, system)
    train_questions, val_questions = context.training_split(params, dataset, seed)
    questions = train_questions + val_questions
    data = context.training_data(questions, params).to(device)
    train_idx, val_idx = torch.arange(len(train_questions)), torch.arange(len(train_questions), len(data))
    model = build_query_encoder(params, seed, context.shards.dim, device)
    config = train_config(params, n_queries, seed, group_by_targets=True)
    index, curve = None, None
    # the others wait for its validations at the next collective (a checkpoint's, or the next step's all-reduce)
    if distributed.is_main():
        index = run_index(params, benchmark, dataset, context, device)
        val_data = data.subset(val_idx.to(device))
        curve = validation_retrieval(context, val_questions, val_data, n_queries, index=index, merge=params.merge)
    trained = train(
        model,
        data.subset(train_idx.to(device)),
        data.subset(val_idx.to(device)),
        context.negatives.to(device),
        config,
        run_dir=REAL_RUNS.run_dir(params, real_run_name(dataset, system, seed), run_facts(benchmark, dataset, system)),
        progress=progress,
        on_step=on_step,
        evaluate=curve,
    )
    if not distributed.is_main():
        return None
    test_questions = context.benchmark.questions(dataset, "test")
    vectors = context.query_vectors(model, test_questions, n_queries, device)
    ranked = multi_vector_search(index, vectors, K, depth=max(params.search_depth, K), merge=params.merge)
    return context.write_result(
        params,
        dataset,
        system,
        seed,
        test_questions,
        ranked,
        n_queries=n_queries,
        train_seconds=trained.seconds,
        best_step=trained.best_step,
        best_val_loss=trained.best_val_loss,
        history=trained.history,
    )


def memory_preflight(params: RealConfig, benchmark: Benchmark, dataset: str, progress: bool = True) -> MemoryPlan:
    """Project one training process's peak memory for AMER on `dataset` (the larger of the two
    systems: it decodes up to a batch's largest target set) before any weight is loaded, from the
    backbone described once (`backbones.describe`), on the machine the run trains on (this one:
    `preflight_machine`); print it, and on a GPU stop with the settings that fit when it exceeds
    the GPU's memory (`amer_lib.runs.memory`). A GPU holds one training at a time
    (`runs.dispatch.training_workers`), so one process a GPU is projected."""
    spec, tokenizer = get_backbone(params.backbone), load_tokenizer(params.backbone)
    questions = benchmark.questions(dataset, "train")
    prompts = PromptTemplate.of(spec, tokenizer).tokenize(tokenizer, [q.question for q in questions])[0]
    corpus = benchmark.manifest.get("corpus_size", 0)
    return _projection(params, dataset, prompts.shape[1], questions, corpus, progress)


@dataclass(frozen=True)
class PreflightMachine:
    """The machine a memory preflight projects a run for: the run's config there (`finetune` and
    `mixed_precision` as they resolve there), whether it trains on a GPU, the GPU here to check the
    projection against (None: the run is not for a GPU of this machine), and its words."""

    config: RealConfig
    gpu: bool
    device: torch.device | None
    where: str  # "for a GPU", "for this machine's CPU (...)"
    resolved: str  # how "auto" was resolved: "as device auto resolves there"
    note: str = ""  # what the reader should know besides: "this machine has no GPU (...)"

    def words(self, params: RealConfig) -> str:
        """'projected for a GPU: finetune lora and mixed_precision true, as device auto resolves
        there; ...': what the projection is of, the values `params` asked for explicitly said so."""
        value = lambda name: f"{name} {str(getattr(self.config, name)).lower()}"  # noqa: E731
        auto = [value(name) for name, asked in params.asked.items() if asked == "auto"]
        given = [value(name) for name, asked in params.asked.items() if asked != "auto"]
        parts = [f"{' and '.join(auto)}, {self.resolved}"] if auto else []
        parts += [f"{' and '.join(given)}, as asked"] if given else []
        return f"projected {self.where}: {'; '.join(parts + ([self.note] if self.note else []))}"


def preflight_machine(params: RealConfig, weights_here: bool = True) -> PreflightMachine:
    """The machine the memory preflight projects the run for. With the backbone's weights here the
    run trains here, on the device `params.device` resolves to, with the config as resolved here.
    Without them it trains where they will be: on this machine's GPU if it has one; else, with
    device "auto" (the default) or "cuda", on a GPU elsewhere, `finetune` and `mixed_precision`
    resolved as "auto" resolves there (`RealConfig.on_machine`: LoRA and bfloat16 for a
    billion-parameter backbone, an explicit value kept); only device "cpu" projects a CPU run."""
    try:
        here = resolve_device(params.device)
    except DeviceUnavailableError:
        if weights_here:
            raise
        here = None  # device cuda asked for on a machine without one: the run is for a GPU elsewhere
    if here is not None and here.type == "cuda":
        name = torch.cuda.get_device_properties(here).name
        return PreflightMachine(params, True, here, f"for this machine's GPU ({name})", "as auto resolves on a GPU")
    if params.device == "cpu":
        return PreflightMachine(params, False, None, "for the CPU (device cpu)", "as auto resolves on a CPU")
    if weights_here:
        where = "for this machine's CPU (device auto: this machine has no GPU)"
        return PreflightMachine(params, False, None, where, "as auto resolves on a CPU")
    return PreflightMachine(
        params.on_machine(gpu=True),
        True,
        None,
        "for a GPU",
        f"as device {params.device} resolves there",
        "this machine has no GPU (-p device cpu projects the run on a CPU)",
    )


def _projection(
    params: RealConfig,
    dataset: str,
    prompt_tokens: int,
    questions: list[MultiAnswerQuestion],
    corpus: int,
    progress: bool,
    machine: PreflightMachine | None = None,
) -> MemoryPlan:
    """`memory_preflight`'s plan of AMER's training on `questions` (the training split) with
    prompts of `prompt_tokens` over a corpus of `corpus` documents, on `machine` (this one where
    None). The plan is `memory.plan_for`'s, the function the device script compares its
    measurements with (`benchmarks/device/paper_shapes.py`)."""
    machine = machine or preflight_machine(params)
    run, embedding_dim = machine.config, get_encoder_spec(params.encoder).dim
    work = memory.workload_of(
        run,
        prompt_tokens=prompt_tokens,
        training_questions=len(questions),
        max_targets=max(len(q.targets) for q in questions),
        embedding_dim=embedding_dim,
        negatives=min(NEGATIVE_POOL, corpus),
        corpus_size=corpus,
        processes_per_gpu=1,  # runs.dispatch.training_workers: one training per GPU
    )
    if machine.device is not None:  # this machine's GPU: stop with the settings that fit when it does not
        properties = torch.cuda.get_device_properties(machine.device)
        projected = memory.check(describe(run.backbone), work, properties.total_memory, properties.name)
    else:
        projected = memory.plan_for(run.backbone, work)
    if progress:
        print(f"memory preflight, {dataset}:", *projected.lines(machine.gpu), sep="\n  ")
    return projected


def preflight_without_weights(params: RealConfig, offline_recipe: PrepConfig) -> str:
    """The memory preflight of each dataset where the backbone's weights are not here yet (what
    they will need, before they are fetched): the backbone from its published config
    (`backbones.describe`), prompts taken at the paper's `PROMPT_TOKENS` (their tokenizer comes
    with the weights), the data of the prepared benchmark, or where none is prepared yet of the
    offline benchmark `ready_benchmark` would prepare (`preparation.offline_sizes`, nothing
    written); on a GPU it does not fit, the settings that fit. It projects the run on the machine
    it is for (`preflight_machine`): on a machine without a GPU, with device "auto", the GPU's run,
    and says so. Its text, for the error that asks for the weights (papermill shows a failed
    notebook's error, not what its cells printed)."""
    directory = Path(params.prepared_dir)
    try:
        if (directory / "manifest.json").exists():
            benchmark = Benchmark(directory)
            benchmark.check(params.datasets)
            train = {dataset: benchmark.questions(dataset, "train") for dataset in params.datasets}
            corpus = benchmark.manifest.get("corpus_size", 0)
        else:
            train, corpus = offline_sizes(directory, params.datasets, offline_recipe)
    except (FileNotFoundError, ValueError) as error:
        return f"The memory preflight needs the prepared datasets: {error}"
    machine = preflight_machine(params, weights_here=False)
    lines = [
        f"The memory preflight of {params.backbone} from its published config (prompts taken at the paper's "
        f"{PROMPT_TOKENS} tokens: the tokenizer comes with the weights), {machine.words(params)}:"
    ]
    for dataset in params.datasets:
        try:
            projected = _projection(params, dataset, PROMPT_TOKENS, train[dataset], corpus, False, machine)
            lines += [f"memory preflight, {dataset}:", *["  " + line for line in projected.lines(machine.gpu)]]
        except memory.MemoryPreflightError as error:
            lines.append(f"memory preflight, {dataset}: {error}")
    return "\n".join(lines)


def run_index(
    params: RealConfig, benchmark: Benchmark, dataset: str, context: RunContext, device: torch.device
) -> ResidentFlatIndex:
    """The exact index a run searches at each validation and at its test, built once per run: on a
    GPU, the shards' float16 blocks that fit beside the training's projected peak
    (`memory_preflight`: the memory the GPU has less that peak, whose search term is this index's
    float32 block) are kept on it, the rest read from the shards at every search; on the CPU, and
    on a GPU whose FAISS is the CPU build (as `ShardedFlatIndex` does: a small corpus needs no
    GPU build), every block is read from the memory-mapped shards (the page cache keeps them) and
    made float32 on every core. Both return `ShardedFlatIndex`'s rows."""
    if device.type != "cuda" or not faiss_sees_gpus():
        return ResidentFlatIndex(context.shards, "cpu", resident_bytes=0)
    total = torch.cuda.get_device_properties(device).total_memory
    peak = memory_preflight(params, benchmark, dataset, progress=False).gpu_peak
    return ResidentFlatIndex(context.shards, device, resident_bytes=max(0, total - peak))


def validation_retrieval(
    context: RunContext,
    questions: list[MultiAnswerQuestion],
    data: TextData,
    n_queries: int,
    index: ResidentFlatIndex | None = None,
    merge: str = PAPER_MERGE,
) -> Callable[[AMERQueryEncoder], dict]:
    """The learning curves' metric: MRecall@100 of the validation questions (`data`: their
    prompts, tokenised once; fully autoregressive, the run's merge), on all of them and on their
    low-similarity third. `index`: the run's (`run_index`); the shards streamed when None. `merge`:
    the run's (`amer_lib.core.merge.MERGES`)."""
    index = index or ShardedFlatIndex(context.shards)
    gold = context.gold(questions)
    low = low_similarity_subset(context.target_similarity(questions))

    def score(model: AMERQueryEncoder) -> dict:
        vectors = generated_vectors(model, text_prompts(model, data), n_queries)
        ranked = multi_vector_search(index, vectors, K, merge=merge)
        scores = evaluate(ranked, gold, (K,))[f"mrecall@{K}"]
        return {"val_mrecall": float(scores.mean()), "val_mrecall_low_sim": float(scores[low].mean())}

    return score


def ready_benchmark(params: RealConfig, offline_recipe: PrepConfig, progress: bool = True) -> Benchmark:
    """The prepared benchmark the runs need, checked before any training: the backbone's weights are
    on this machine (else the error says what to fetch, and the memory preflight of what they will
    need: `preflight_without_weights`), the datasets are in the benchmark, and the
    corpus is encoded with `encoder`. The offline WordNet benchmark is prepared here when it is
    missing, with `offline_recipe` (notebook 03's defaults: the call notebook 03 makes); any other
    benchmark must come from notebook 03. Notebook 04 must train single-query: its tables compare
    with it."""
    if "single" not in params.systems:
        raise ValueError(
            f"systems {params.systems}: notebook 04's tables measure every system against single-query "
            "(the relative gains, the bootstrap, the baselines built on its model); add 'single' "
            f"(valid systems: {', '.join(SYSTEMS)})"
        )
    try:
        require_weights(params.backbone)
    except BackboneUnavailableError as error:  # what the weights will need, said with what to fetch
        raise BackboneUnavailableError(f"{error}\n\n{preflight_without_weights(params, offline_recipe)}") from None
    benchmark = prepared_benchmark(params.prepared_dir, params.datasets, offline_recipe, params.device, progress)
    try:
        benchmark.embeddings(params.encoder)
    except (FileNotFoundError, RuntimeError):  # not encoded with this encoder yet, or interrupted: resume
        require_writable(params.prepared_dir, "prepared_dir")  # the embeddings are written there
        device = None if params.device == "auto" else params.device
        benchmark.encode(DocumentEncoder(params.encoder, device=device), progress=progress)
    return benchmark


def run_all(params: RealConfig, progress: bool = True) -> list[dict]:
    """Every (dataset, system, seed) run (`amer_lib.runs.dispatch.run_jobs`), after the memory
    preflight of the runs still to train; with component_weight > 0, a dataset whose training
    questions have no `answer_questions` at all stops them first (`questions.component_texts`)."""
    benchmark = Benchmark(params.prepared_dir)
    benchmark.check(params.datasets)
    if params.train_compounds:
        benchmark.check_compound(params.datasets)
    if params.train_components != "findable":
        benchmark.check_compound(params.datasets, "train_components", f'= "{params.train_components}"')
    if any(params.for_system(s).component_weight > 0 for s in params.systems):  # a split with no component question
        for dataset in params.datasets:
            component_texts(benchmark.questions(dataset, "train"), f" in {benchmark.directory}/{dataset}_train.jsonl")
    cached = lambda *job: cached_result(*job, benchmark)
    jobs = [
        (params, dataset, system, seed)
        for dataset in params.datasets
        for system in params.systems
        for seed in params.seeds
    ]
    for dataset in dict.fromkeys(job[1] for job in jobs if cached(*job) is None):
        memory_preflight(params, benchmark, dataset, progress)
    multi_vector = lambda job: job[2] != "single"  # noqa: E731
    return run_jobs(run_one, jobs, cached, params.workers, progress, first=multi_vector)


# ----- the hyperparameter search ---------------------------------------------------------------------
# Notebook 04 runs it when `tuning_grid` is set, e.g. with the paper's grid (appendix A.6) for one
# dataset: `papermill notebooks/04_real_data.ipynb out.ipynb -f params/04_real_data/qampari_llama1b.yaml
# -f params/04_real_data/tuning_qampari.yaml` (`amer_lib.runs.tuning`).


def tune(
    params: RealConfig, grid: dict[str, list], seed: int = 0, system: str = "amer", progress: bool = True
) -> list[dict]:
    """One row per dataset and grid point: the point, its steps, the selected checkpoint's step,
    validation loss and validation MRecall@100 (in %)."""
    benchmark = Benchmark(params.prepared_dir)
    cells = [
        (dataset, point, point_params(params, point, len(benchmark.questions(dataset, "train"))))
        for dataset in params.datasets
        for point in grid_points(grid)
    ]
    if progress:
        print(grid_cost([tuned for _, _, tuned in cells]))
    jobs = [(tuned, dataset, system, seed) for dataset, _, tuned in cells]
    cached = lambda *job: cached_result(*job, benchmark)
    results = run_jobs(run_one, jobs, cached, params.workers, progress)
    rows = []
    for (dataset, point, tuned), result in zip(cells, results):
        selected = selected_checkpoint(result)
        rows.append(
            {
                "dataset": dataset,
                **point,
                "steps": tuned.steps,
                "best_step": result["best_step"],
                "val_loss": round(selected["val_loss"], 4),
                "val_mrecall": round(100 * selected["val_mrecall"], 2),
            }
        )
    return rows


# ----- the baselines: query expansion and MMR re-ranking ------------------------------------------------
# The single-query model's diversity baselines of Tables 2-4 and 6-8: query expansion and MMR
# re-ranking, evaluated like a trained run (TREC run file and results JSON per dataset and seed).
#
# Both reuse the trained single-query checkpoint of the same seed; nothing is trained here.
# Re-ranking: MMR over the trained model's top 500, lambda tuned on the run's own validation split
# (the 10% of the training questions it held out). Its query relevance is the document encoder's
# own query embedding (`mmr_query = "encoder"`, the paper: "for both similarity, we use the
# Inf-Retriever") or the trained single-query vector (`"trained"`, the offline default). Query
# expansion: the question followed by keywords from the chosen source (`expansion`: `chat`
# endpoint, local `hf` model, or offline `prf`, which is pseudo-relevance feedback, not an LLM, and
# is labelled so).

RERANK_DEPTH = 500  # |R| in the paper


def keyword_source(params: RealConfig, context: RunContext):
    source, model = params.expansion, params.expansion_model
    if source == "prf":
        return PseudoRelevanceFeedback([doc.full_text for doc in context.benchmark.documents()])
    if source == "chat":
        return ChatEndpointGenerator.from_env(model)
    if source == "hf":
        if not model:
            raise ValueError("expansion='hf' needs expansion_model (a Hugging Face model id or directory)")
        return HFGenerator(model, device=str(resolve_device(params.device)))
    raise ValueError(f"unknown expansion source {source!r}; valid: {', '.join(EXPANSION_SOURCES)}")


def run_baseline(params: RealConfig, dataset: str, system: str, seed: int, progress: bool = True) -> dict:
    """One baseline on one dataset and seed; its results JSON is reused when the params match."""
    if system not in BASELINES:
        raise ValueError(f"unknown baseline {system!r}; valid: {', '.join(BASELINES)}")
    params = params.for_system(system)
    cached = cached_result(params, dataset, system, seed)
    if cached is not None and _same_baseline(cached, params, system):
        return cached
    context = RunContext.of(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(params, dataset, "single", seed, device)
    index = ShardedFlatIndex(context.shards)
    test = context.benchmark.questions(dataset, "test")
    if system == "rerank":
        _, val = context.benchmark.training_split(dataset, seed)

        def candidates(questions):
            vectors = context.query_vectors(model, questions, 1, device)[:, 0]
            return relevance_queries(params, questions, vectors), index.search(vectors, RERANK_DEPTH)[1]

        lam, scores = tune_lambda(*candidates(val), context.shards.rows, context.gold(val), K)
        ranked = mmr_rerank(*candidates(test), context.shards.rows, lam, K)
        facts = dict(mmr_lambda=lam, validation_mrecall=scores, mmr_query=params.mmr_query, expansion=None)
    else:
        source = keyword_source(params, context)
        if isinstance(source, PseudoRelevanceFeedback):
            keywords = source.keywords([q.question for q in test], progress=progress)
        else:
            cache = GenerationCache(Path(params.results_dir) / "expansion_cache.jsonl")
            keywords = generate_keywords([q.question for q in test], source, cache, progress=progress)
        texts = [expanded_query(q.question, words) for q, words in zip(test, keywords)]
        ranked = index.search(context.query_vectors(model, test, 1, device, texts=texts)[:, 0], K)[1]
        facts = dict(
            label=f"+{source.label}",
            expansion=_expansion_key(params, system),
            keyword_source=source.name,
            keywords=keywords,
        )
    return context.write_result(params, dataset, system, seed, test, ranked, **facts)


def relevance_queries(params: RealConfig, questions: list, trained: np.ndarray) -> np.ndarray:
    """MMR's query vectors for `Sim_q`: the document encoder's embedding of each question, or the
    `trained` single-query vectors that found the candidates."""
    if params.mmr_query == "trained":
        return trained
    device = None if params.device == "auto" else params.device
    return DocumentEncoder(params.encoder, device=device).encode_queries([q.question for q in questions])


def _same_baseline(cached: dict, params: RealConfig, system: str) -> bool:
    """A cached baseline was made the way `params` ask (a result without `mmr_query` re-ranked the
    trained single-query model's vectors: "trained")."""
    if system == "rerank":
        return cached.get("mmr_query", "trained") == params.mmr_query
    return cached.get("expansion") == _expansion_key(params, system)


def _expansion_key(params: RealConfig, system: str) -> str | None:
    return f"{params.expansion}:{params.expansion_model}" if system == "query_expansion" else None


def run_baselines(params: RealConfig, progress: bool = True) -> list[dict]:
    return [
        run_baseline(params, dataset, system, seed, progress)
        for dataset in params.datasets
        for system in params.baselines
        for seed in params.seeds
    ]


# ----- the compound benchmark: the decomposition oracle and what AMER's vectors do -----------------
# The compound benchmark's reference system and what AMER's vectors do on it (`amer_lib.data.compound`).
#
# The decomposition oracle knows what AMER must discover: a compound question's components. It runs
# the single-query model trained on the components alone (`compound_k1`) on each component of a
# test compound, one vector per component, and merges their lists round-robin as AMER's are. How
# close AMER comes to it is the measure of the method on these sets. The teacher's decomposition
# is the same search with the off-the-shelf encoder that embedded the corpus (`params.encoder`) on
# each component: nothing trained, so one seed-free run. That encoder chose the findable test
# components and is the teacher of the component term (beyond the paper), so it can beat the
# trained oracle: the tables measure AMER against the better of the two. `vector_roles` asks
# whether AMER's vectors each take a component, several, or repeat one another.

ORACLE = "decomposition_oracle"
TEACHER = "teacher_decomposition"
CEILINGS = (ORACLE, TEACHER)
METRICS = {"mrecall": "MRecall@100", "mrecall_10": "MRecall@10", "recall": "Recall@100"}


def decomposition_oracle(params: RealConfig, dataset: str, seed: int) -> dict:
    """The oracle's run on `dataset`'s test compounds with seed `seed`'s `compound_k1` single-query
    model (trained by notebook 04 first); its results JSON and TREC run, like any run's."""
    params = params.for_system(ORACLE)
    cached = cached_result(params, dataset, ORACLE, seed)
    if cached is not None:
        return cached
    context = RunContext.of(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(params, compound.dataset_name(1), "single", seed, device)
    test = context.benchmark.questions(dataset, "test")
    parts = _components(test)
    k = len(parts[0])
    vectors = context.query_vectors(model, [p for row in parts for p in row], 1, device)[:, 0]
    queries = vectors.reshape(len(test), k, vectors.shape[-1])
    return _decomposition_result(params, context, dataset, ORACLE, seed, test, queries, "Decomposition oracle")


def teacher_decomposition(params: RealConfig, dataset: str) -> dict:
    """The teacher's decomposition on `dataset`'s test compounds: the off-the-shelf encoder's
    vector of each component (`RunContext.part_vectors`), searched and merged round-robin like the
    oracle's; one seed-free run (nothing is trained), its results JSON and TREC run like any run's."""
    params = params.for_system(TEACHER)
    cached = cached_result(params, dataset, TEACHER, None)
    if cached is not None:
        return cached
    context = RunContext.of(params)
    test = context.benchmark.questions(dataset, "test")
    vectors, mask = context.part_vectors(test)
    if not mask.all():
        raise ValueError(f"{dataset}'s test questions have different numbers of components: not a compound dataset")
    label = "Decomposition, off-the-shelf encoder"
    return _decomposition_result(params, context, dataset, TEACHER, None, test, vectors.numpy(), label)


def _decomposition_result(
    params: RealConfig,
    context: RunContext,
    dataset: str,
    system: str,
    seed: int | None,
    test: list,
    queries: np.ndarray,
    label: str,
) -> dict:
    """Search each component's vector of `queries [Q, k, d]`, merge the lists as AMER's are
    (`merge`) and write the run's results."""
    index, depth = ShardedFlatIndex(context.shards), max(params.search_depth, K)
    ranked = multi_vector_search(index, queries, K, depth=depth, merge=params.merge)
    return context.write_result(params, dataset, system, seed, test, ranked, label=label, n_queries=queries.shape[1])


def _components(questions: list[MultiAnswerQuestion]) -> list[list[MultiAnswerQuestion]]:
    """Each compound question's components in its answers' order, as questions of their own: the
    answers that share an `answer_questions` entry, under that text (for the compound benchmark,
    exactly its WordNet component questions; for a dataset of your own, what its file gives)."""
    parts = []
    for question in questions:
        groups: dict[str, list[int]] = {}
        for i, text in enumerate(question.answer_questions):
            groups.setdefault(text, []).append(i)
        answers, targets = question.answers, question.targets
        parts.append([
            MultiAnswerQuestion(f"{question.qid}#{c}", text, [answers[i] for i in rows], [targets[i] for i in rows])
            for c, (text, rows) in enumerate(groups.items())
        ])  # fmt: skip
    return parts


def served_components(lists: np.ndarray, components: list[list[set[int]]]) -> list[tuple[int, int]]:
    """For each vector's ranked list `lists [n, depth]` (corpus rows): the component whose answers
    it finds most of and how many (an answer is found when one of its gold rows is in the list);
    (-1, 0) for a vector that finds none. `components`: per component, its answers' gold rows."""
    served = []
    for row in lists:
        seen = set(row.tolist())
        found = [sum(bool(gold & seen) for gold in answers) for answers in components]
        best = int(np.argmax(found))
        served.append((best, found[best]) if found[best] else (-1, 0))
    return served


def vector_roles(params: RealConfig, dataset: str, seed: int) -> dict:
    """What AMER's vectors do on `dataset`'s test compounds (seed `seed`'s trained run): the share
    of questions whose k components each get a vector of their own, the mean number of components
    served, and the share of vectors that serve none or repeat a component another vector serves."""
    context = RunContext.of(params)
    device = resolve_device(params.device)
    model = context.trained_encoder(params, dataset, "amer", seed, device)
    test = context.benchmark.questions(dataset, "test")
    vectors = context.query_vectors(model, test, context.n_queries(dataset, "amer"), device)
    _, lists = ShardedFlatIndex(context.shards).search(vectors, K)
    all_served, counts, idle, repeats = 0, [], 0, 0
    for parts, question_lists in zip(_components(test), lists):
        gold = [[set(context.rows(docs).tolist()) for docs in part.targets] for part in parts]
        served = [c for c, _ in served_components(question_lists, gold)]
        distinct = {c for c in served if c >= 0}
        all_served += len(distinct) == len(parts)
        counts.append(len(distinct))
        idle += served.count(-1)
        repeats += sum(c >= 0 for c in served) - len(distinct)
    n_vectors = lists.shape[0] * lists.shape[1]
    return {
        "dataset": dataset,
        "vectors": int(lists.shape[1]),
        "all_components_served": round(100 * all_served / len(test), 2),
        "components_served_mean": round(float(np.mean(counts)), 3),
        "vectors_serving_none": round(100 * idle / n_vectors, 2),
        "vectors_repeating_a_component": round(100 * repeats / n_vectors, 2),
    }


def compound_datasets(params: RealConfig) -> dict[str, int]:
    """The datasets whose test questions are compounds, with their k: the compound benchmark's
    (`compound_k<k>`), and a dataset of your own whose every test question carries
    `answer_questions` naming the same number of component questions, 2 or more (the FOLDOC
    replication, `amer_lib.data.foldoc`): for those the teacher's decomposition is run as for the
    compound benchmark (the trained oracle needs the compound benchmark's `compound_k1`)."""
    found, benchmark = {}, None
    for dataset in params.datasets:
        k = compound.components_in(dataset)
        if k is None:
            benchmark = benchmark or Benchmark(params.prepared_dir)
            k = components_per_question(benchmark.questions(dataset, "test"))
        if k is not None:
            found[dataset] = k
    return found


def components_per_question(questions: list[MultiAnswerQuestion]) -> int | None:
    """The number of component questions every one of `questions` has (distinct `answer_questions`),
    when it is the same for all and at least 2; None otherwise."""
    counts = {len(set(q.answer_questions)) if q.answer_questions else 1 for q in questions}
    return counts.pop() if len(counts) == 1 and min(counts) >= 2 else None


def oracle_comparison(params: RealConfig, results: list[dict], n_resamples: int) -> list[dict]:
    """Per compound dataset: single-query, AMER, the decomposition oracle (run here for every seed)
    and the teacher's decomposition (run here once, seed-free), each metric of `METRICS` as mean and
    std over seeds (in %) with the paired bootstrap p's against single-query (over seeds and
    questions: `_p` ahead, `_p_behind`, `_p_two_sided`), and AMER's share of each ceiling's lead
    over single-query (`ceiling_shares`). The oracle runs the `compound_k1` single-query model:
    without `compound_k1` among the datasets it is left out, with a warning. [] without compound
    datasets."""
    datasets = compound_datasets(params)
    runs = [r for r in results if r["dataset"] in datasets and r["system"] in ("single", "amer")]
    if compound.dataset_name(1) in params.datasets:
        runs += [decomposition_oracle(params, d, seed) for d in datasets for seed in params.seeds]
    elif datasets:
        warnings.warn(
            f"the decomposition oracle runs the {compound.dataset_name(1)} single-query model, which these "
            f"datasets ({', '.join(datasets)}) do not include: the oracle is left out",
            AmerWarning,
            stacklevel=2,
        )
    runs += [teacher_decomposition(params, d) for d in datasets]
    by_metric = {metric: summary(runs, n_resamples, metric=metric) for metric in METRICS}
    rows = []
    for i, base in enumerate(by_metric["mrecall"]):
        row = {"dataset": base["dataset"], "k": datasets[base["dataset"]], "system": base["system"]}
        row["seeds"] = base["seeds"]
        for metric, summaries in by_metric.items():
            found = summaries[i]
            row[f"{metric}_mean"], row[f"{metric}_std"] = found["whole_mean"], found["whole_std"]
            row[f"{metric}_p"] = found.get("whole_p", float("nan"))
            if "whole_p" in found:  # the systems compared with single-query: the rest of the comparison
                row[f"{metric}_p_behind"] = found["whole_p_behind"]
                row[f"{metric}_p_two_sided"] = found["whole_p_two_sided"]
        rows.append(row)
    return ceiling_shares(rows)


def ceiling_shares(rows: list[dict]) -> list[dict]:
    """`rows` (one per dataset and system, each metric of `METRICS` as `<metric>_mean`) with AMER's
    share of each ceiling's lead over single-query added to AMER's rows: `<metric>_oracle_share`
    (the trained oracle), `<metric>_teacher_share` (the teacher's decomposition) and
    `<metric>_ceiling_share` against the better ceiling, the one of higher MRecall@100 mean, named
    in `ceiling` (one of `CEILINGS`). A share is NaN where the ceiling does not lead."""
    for row in rows:
        if row["system"] != "amer":
            continue
        present = {r["system"]: r for r in rows if r["dataset"] == row["dataset"] and r["system"] in CEILINGS}
        if not present:
            continue
        single = _row(rows, row["dataset"], "single")
        for system, name in ((ORACLE, "oracle"), (TEACHER, "teacher")):
            if system in present:
                for metric in METRICS:
                    row[f"{metric}_{name}_share"] = _share(row, single, present[system], metric)
        row["ceiling"] = max(present, key=lambda system: present[system]["mrecall_mean"])
        for metric in METRICS:
            row[f"{metric}_ceiling_share"] = _share(row, single, present[row["ceiling"]], metric)
    return rows


def _share(amer: dict, single: dict, ceiling: dict, metric: str) -> float:
    """AMER's share of the ceiling's lead over single-query on `metric` (NaN without a lead)."""
    lead = ceiling[f"{metric}_mean"] - single[f"{metric}_mean"]
    return (amer[f"{metric}_mean"] - single[f"{metric}_mean"]) / lead if lead > 0 else float("nan")


def _row(rows: list[dict], dataset: str, system: str) -> dict:
    return next(r for r in rows if r["dataset"] == dataset and r["system"] == system)


def vector_role_table(params: RealConfig) -> list[dict]:
    """`vector_roles` of each compound dataset with k >= 2, averaged over the seeds."""
    rows = []
    for dataset, k in compound_datasets(params).items():
        if k < 2:
            continue
        per_seed = [vector_roles(params, dataset, seed) for seed in params.seeds]
        row = {"dataset": dataset, "k": k, "seeds": len(per_seed)}
        row |= {key: float(np.mean([r[key] for r in per_seed])) for key in per_seed[0] if key != "dataset"}
        rows.append(row)
    return rows


# ----- a finished run as a model folder ----------------------------------------------------------------
def export_run(params: RealConfig, dataset: str, system: str, seed: int, folder: str | Path) -> Path:
    """A finished notebook-04 run's encoder as a self-contained model folder
    (`amer_lib.runs.saved`), its card recording the training data, steps, seed and test scores."""
    context = RunContext.of(params)
    model, result = context.trained_run(params, dataset, system, seed, resolve_device(params.device))
    return save_run(model, result, params, context, (dataset, system, seed), folder)


def save_run(
    model: AMERQueryEncoder,
    result: dict,
    params: RealConfig,
    context: RunContext,
    run: tuple[str, str, int],
    folder: str | Path,
    stop: dict | None = None,
    facts: dict | None = None,
) -> Path:
    """`model`, the encoder of the finished run `(dataset, system, seed)` whose results are
    `result`, as a model folder: its prompt, document encoder, search depth and recipe, and a card
    with the run's training data, steps, seed and test scores (and `facts`); `stop`: its stop
    head's settings (`runs.saved.save_pretrained`)."""
    dataset, system, seed = run
    params = params.for_system(system)
    trained_on = context.training_split(params, dataset, seed)[0]
    card = {
        "trained on": f"{dataset} ({len(trained_on)} questions)",
        "system": system,
        "seed": seed,
        "steps": params.steps,
        "kept step": result["best_step"],
        "test MRecall@100 (%)": round(100 * float(np.mean(result["mrecall"])), 2),
        "test Recall@100 (%)": round(100 * float(np.mean(result["recall"])), 2),
        "git commit": result.get("git_commit"),
    }
    return save_pretrained(
        model,
        folder,
        backbone=params.backbone,
        n_queries=context.n_queries(dataset, system),
        document_encoder=params.encoder,
        prompt=context.prompt.to_json(),
        search_depth=params.search_depth,
        stop=stop,
        recipe=REAL_RUNS.recipe(params),
        facts={**card, **(facts or {})},
    )
