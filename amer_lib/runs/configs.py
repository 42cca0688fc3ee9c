"""Each notebook's parameters as one typed config: the notebook's schema and its runs' key.

A notebook's `parameters` cell holds the defaults; `amer_lib.params` builds the config from it (and
from papermill's overrides), so a wrong key or value fails before anything runs. Fields marked
`run=False` choose which runs to make, how many processes share one, or where figures go; every
other field shapes a run and is part of its cache key and checkpoint digest (`amer_lib.runs.store`).
Notebook 03's config is `amer_lib.data.preparation.PrepConfig`, beside the preparation it drives.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

import amer_lib.beyond  # noqa: F401  (registers the merges beyond the paper in core.merge.MERGES)
from amer_lib.beyond.component import COMPONENT_DISTANCES
from amer_lib.config import Config, internal, param
from amer_lib.core.backbones import BACKBONES, FINETUNE_MODES, is_large_backbone
from amer_lib.core.device import DEVICES
from amer_lib.core.loss import FIRST_VECTOR_MODES, MATCHED_REDUCTIONS
from amer_lib.core.merge import MERGES, PAPER_MERGE
from amer_lib.core.metrics import DISTANCES
from amer_lib.core.train import SAMPLING_MODES
from amer_lib.data.benchmark import check_draw_options, draw_options
from amer_lib.data.encoders import ENCODERS, RETRIEVERS
from amer_lib.data.synthetic_task import SETTINGS, TRANSFORMS
from amer_lib.io import FIGURES_HELP

SYSTEMS = ("single", "amer")  # one query vector, or the autoregressive sequence of n
EXPANSION_SOURCES = ("prf", "chat", "hf")  # pseudo-relevance feedback, a chat endpoint, a local HF model
BASELINES = ("query_expansion", "rerank")  # derived from notebook 04's single-query runs
MMR_QUERIES = ("trained", "encoder")  # MMR's Sim_q: the trained single-query vector, or the document encoder's


# the help of parameters several notebooks share (`help` of `param`)
DEVICE_HELP = "auto: the GPU when torch sees one"
PREPARED_HELP = "the benchmark notebook 03 prepares"
RESULTS_HELP = "where the notebook writes what it computes"
RUNS_HELP = "the trainings' checkpoints and runs (a rerun resumes or reuses them)"
SYSTEMS_HELP = "single-query (one query vector) and AMER (n, generated autoregressively)"
FINETUNE_HELP = "full: every weight trained; lora: LoRA adapters and the two projections"
STEPS_HELP = "training steps per run"
BATCH_HELP = "examples (questions) per training step"
LR_HELP = "learning rate (AdamW)"
SAMPLING_HELP = "what AMER is fed back in training: scheduled sampling, the targets (teacher) or its own vectors"
EVAL_EVERY_HELP = "validation every this many steps; the best validation loss's weights are kept"
SEARCH_DEPTH_HELP = "documents each query vector's search returns before the merge"
BOOTSTRAP_HELP = "paired bootstrap resamples of the significance tests"
MERGES_HELP = "ways to merge the query vectors' rankings into one (amer_lib.core.merge)"
MERGE_HELP = "how AMER's vectors' ranked lists are merged into one (amer_lib.core.merge; the paper: round_robin)"


def temperature_param():
    """Notebooks 02 and 04's InfoNCE temperature, declared once."""
    return param(0.05, help="InfoNCE temperature (the paper's tuning grid: 0.02-0.05)")


def micro_batch_param():
    """Notebooks 02 and 04's micro-batches, declared once: how a step fits in memory, not what it computes."""
    return param(
        0,
        minimum=0,
        run=False,
        help="> 0: each process back-propagates its share of a batch this many questions at a time (same loss)",
    )


def checkpointing_param():
    """Notebooks 02 and 04's gradient checkpointing, declared once."""
    return param(False, run=False, help="recompute each backbone layer in the backward pass: less memory, more time")


def workers_param(what: str):
    """Notebooks 02 and 04's worker processes: not in the run key (a run's numbers do not depend on them).
    On GPUs at most one per GPU (`amer_lib.runs.dispatch.training_workers`)."""
    return param(2, minimum=1, run=False, help=f"{what} trained in parallel processes; on GPUs at most one per GPU")


def threads_param():
    """Notebooks 02 and 04's CPU threads per training process, in the run key: float sums split over
    threads round otherwise, and the matching turns that into another trajectory."""
    return param(1, minimum=1, help="CPU threads of each training process (fixed: the numbers depend on it)")


def matched_loss_param():
    """Notebooks 02 and 04's reduction of the matched loss, declared once."""
    return param(
        "mean",
        choices=MATCHED_REDUCTIONS,
        help="an example's matched terms averaged (the authors' code); \"sum\": Equation 2, the paper files",
    )


@dataclass(frozen=True)
class FailureConfig(Config):
    """Notebook 01: off-the-shelf retrievers on the prepared benchmark."""

    # the first line of the notebook's parameters cell
    CELL_HEADER: ClassVar[str] = (
        "Offline CPU default: 10 s on 2 shared cores after notebook 03 (make figures; "
        "benchmarks/times.json); its first use, preparing and encoding the corpus: 4 min on 2 shared cores "
        "(benchmarks/times.json). Paper scale: params/01_failure_analysis/"
    )

    datasets: list[str] = param(
        ["wordnet_senses", "wordnet_kinds"], help="any dataset of the prepared benchmark (checked against it)"
    )
    retrievers: list[str] = param(["minilm", "bm25"], choices=RETRIEVERS, help="off-the-shelf retrievers measured")
    bm25_distance_encoder: str = param(
        "minilm", choices=tuple(ENCODERS), help="BM25 has no embeddings of its own to measure target distances in"
    )
    distance: str = param(
        "cosine", choices=DISTANCES, help='or "euclidean" (both are stored; the reading below compares their bins)'
    )
    min_questions: int = param(
        40, minimum=4, help="an answer-set-size column holds at least this many questions (smaller sizes merge)"
    )
    device: str = param("auto", choices=DEVICES, help=DEVICE_HELP)
    prepared_dir: str = param("../results/prepared/wordnet", help=PREPARED_HELP)
    results_dir: str = param("../results/01_failure_analysis", help=RESULTS_HELP)
    figures_dir: str = param("", help=FIGURES_HELP)


@dataclass(frozen=True)
class SyntheticConfig(Config):
    """Notebook 02: single-query and AMER on the synthetic settings, and the MLP sweep."""

    # the first line of the notebook's parameters cell
    CELL_HEADER: ClassVar[str] = (
        "Offline CPU default: 9 min on 2 idle cores (make figures; benchmarks/times.json). "
        "Paper scale: params/02_synthetic/*.yaml"
    )

    settings: list[str] = param(
        ["single", "multi", "ood"],
        choices=tuple(SETTINGS),
        run=False,
        help="input distributions: one Gaussian, several, or out-of-distribution test inputs",
    )
    transforms: list[str] = param(
        ["linear", "mlp"], choices=TRANSFORMS, run=False, help="maps from an input to its targets"
    )
    systems: list[str] = param(["single", "amer"], choices=SYSTEMS, run=False, help=SYSTEMS_HELP)
    dim: int = param(128, minimum=1, help="dimension of the inputs and targets")
    n_train: int = param(20000, minimum=1, help="training inputs per setting")
    n_test: int = param(1000, minimum=1, help="test inputs per setting")
    corpus_size: int = param(200000, minimum=1, help="vectors searched: the test targets and random negatives")
    mlp_layers: int = param(2, help="layers of the MLP transform")
    mlp_sweep_dims: list[int] = param(
        [],
        minimum=1,
        may_be_empty=True,
        run=False,
        help="the MLP sweep after Figure 3, [] skips it; params/02_synthetic/mlp_sweep.yaml: [128, 512, 1024]",
    )
    mlp_sweep_depths: list[int] = param(
        [2, 3], minimum=1, run=False, help="the paper's text: 2 layers; the authors' code: 3 weights"
    )
    mlp_sweep_authors_bug: bool = param(
        True, run=False, help="also train on the linear targets and test on the MLP's, as the authors' code did"
    )
    backbone: str = param(
        "tiny", choices=tuple(BACKBONES), or_folder=True, help="or a local model folder (the paper: Llama-3.2-1B)"
    )
    backbone_overrides: dict = param(
        {}, help="config values of a randomly initialised backbone, e.g. {hidden_size: 64}; {}: its own"
    )
    finetune: str = param("full", choices=FINETUNE_MODES, help=FINETUNE_HELP)
    n_queries: int = param(5, minimum=1, help="query vectors AMER generates per input")
    steps: int = param(1000, minimum=1, help=STEPS_HELP)
    batch_size: int = param(256, minimum=1, help=BATCH_HELP)
    lr: float = param(0.005, help=LR_HELP)
    temperature: float = temperature_param()
    matched_loss: str = matched_loss_param()
    tuning_grid: dict = param(
        {},
        run=False,
        help="{} or lists of lr, batch_size, temperature, epochs; "
        "e.g. params/02_synthetic/tuning.yaml: appendix A.5's grid, searched before the runs below",
    )
    sampling: str = param("scheduled", choices=SAMPLING_MODES, help=SAMPLING_HELP)
    sampling_rate: float = param(
        2, help="scheduled sampling's p is min(0.8, rate * step / steps); the paper: 1 (see the note above)"
    )
    eval_every: int = param(200, minimum=1, help=EVAL_EVERY_HELP)
    search_depth: int = param(100, minimum=1, help=SEARCH_DEPTH_HELP)
    merge: str = param(PAPER_MERGE, choices=MERGES, keyed_at_default=False, help=MERGE_HELP)
    seed: int = param(0, help="seed of the task and of the training")
    device: str = param("auto", choices=DEVICES, help=DEVICE_HELP)
    mixed_precision: bool = param(False, help="bfloat16 autocast (and bfloat16 frozen weights under LoRA), any device")
    micro_batch_size: int = micro_batch_param()
    gradient_checkpointing: bool = checkpointing_param()
    workers: int = workers_param("settings")
    threads: int = threads_param()
    nproc_per_node: int = param(
        1,
        minimum=1,
        run=False,
        help="processes (one GPU each) training every run together, torchrun; they share the batch",
    )
    results_dir: str = param("../results/02_synthetic", help=RESULTS_HELP)
    runs_dir: str = param("../runs/02_synthetic", help=RUNS_HELP)
    figures_dir: str = param("", run=False, help=FIGURES_HELP)
    # the MLP sweep's bug cells train on this transform's targets and test on the setting's
    train_transform: str | None = internal(None, choices=TRANSFORMS)
    # notebook 07: > 0 trains a stop head beside the matched loss (`amer_lib.core.loss.stop_loss`)
    stop_weight: float = internal(0.0)


# levers of AMER's loss beyond the paper (and the authors' extra step): a single-query run trains
# without them (`RealConfig.for_system`)
AMER_LOSS_LEVERS = (
    "single_target_step",
    "spread_weight",
    "first_vector",
    "component_weight",
    "component_distance",
    "component_single",
)


def run_recipe(backbone: str, finetune: str, mixed_precision: bool | str, gpu: bool) -> tuple[str, bool]:
    """The fine-tuning and mixed precision a notebook 04 run of `backbone` has on a machine with a GPU
    (`gpu`) or without one: an explicit value as asked; "auto", for a backbone of a billion
    parameters or more the paper's recipe (LoRA, and bfloat16 on a GPU, float32 on a CPU), else
    full fine-tuning in float32. The one place "auto" is decided: `RealConfig` resolves it on this
    machine, the memory preflight on the machine the run is for (`RealConfig.on_machine`)."""
    large = is_large_backbone(backbone) if "auto" in (finetune, mixed_precision) else False
    if finetune == "auto":
        finetune = "lora" if large else "full"
    if mixed_precision == "auto":
        mixed_precision = large and gpu
    return finetune, mixed_precision


@dataclass(frozen=True)
class RealConfig(Config):
    """Notebook 04: one backbone trained on the prepared datasets, with the baselines."""

    # the first line of the notebook's parameters cell
    CELL_HEADER: ClassVar[str] = (
        "Offline CPU default: 44 min on 2 shared cores after notebook 03 (make figures; "
        "benchmarks/times.json); its first use prepares the corpus first, as notebook 01's does. "
        "Paper scale: params/04_real_data/*.yaml"
    )
    # the parameters cell's comment on `study_levers`, the fields marked `study=True` (`amer_lib.params`)
    STUDY_LEVERS_HELP: ClassVar[str] = (
        "not in the paper's recipe: levers measured to lose (studies/compound_levers/compound_levers.md), kept for "
        "the studies that set them"
    )

    datasets: list[str] = param(
        ["wordnet_senses", "wordnet_kinds"],
        run=False,
        help="any dataset of the prepared benchmark (checked against it)",
    )
    systems: list[str] = param(["single", "amer"], choices=SYSTEMS, run=False, help=SYSTEMS_HELP)
    baselines: list[str] = param(
        ["query_expansion", "rerank"],
        choices=BASELINES,
        may_be_empty=True,
        run=False,
        help="on the trained single-query model; [] skips them",
    )
    expansion: str = param(
        "prf",
        choices=EXPANSION_SOURCES,
        run=False,
        help='offline: pseudo-relevance feedback (no LLM); paper: "chat" (AMER_QE_* env) or "hf"',
    )
    expansion_model: str = param("", run=False, help='"hf": a model id; "chat": overrides AMER_QE_MODEL')
    mmr_query: str = param(
        "trained",
        choices=MMR_QUERIES,
        run=False,
        help='re-ranking\'s query relevance (baselines only): the trained single-query vector; "encoder": the '
        "document encoder's (the paper)",
    )
    backbone: str = param("minilm", choices=tuple(BACKBONES), or_folder=True, help="or a local model folder")
    encoder: str = param("minilm", choices=tuple(ENCODERS), help="the document encoder (the prepared corpus's vectors)")
    finetune: str = param(
        "auto",
        choices=("auto", *FINETUNE_MODES),
        help="auto: LoRA for a backbone of a billion parameters or more (the paper's recipe), else full",
    )
    seeds: list[int] = param([0, 1, 2], run=False, help="one training per seed and system")
    steps: int = param(300, minimum=1, help=STEPS_HELP)
    batch_size: int = param(32, minimum=1, help=BATCH_HELP)
    lr: float = param(0.0003, help=LR_HELP)
    temperature: float = temperature_param()
    matched_loss: str = matched_loss_param()
    tuning_grid: dict = param(
        {},
        run=False,
        help="{} or lists of lr, batch_size, temperature, epochs; "
        "e.g. params/04_real_data/tuning_qampari.yaml: the paper's grid, searched before the runs below",
    )
    sampling: str = param("scheduled", choices=SAMPLING_MODES, help=SAMPLING_HELP)
    exclude_fed_targets: bool = param(True, help="not in the paper: see above; the paper files set False")
    single_target_step: bool = param(
        False, study=True, help="the authors' code's extra single-query step per iteration (not in the paper)"
    )
    hard_negative_share: float = param(
        0.0,
        default_if_absent=True,
        study=True,
        minimum=0,
        maximum=1,
        help="beyond the paper: share of the training negatives drawn from each question's mined hard negatives "
        "(amer_lib.data.hard_negatives); 0: the paper's random negatives",
    )
    spread_weight: float = param(
        0.0,
        default_if_absent=True,
        study=True,
        minimum=0,
        help="beyond the paper: weight of a penalty on query vectors closer to each other than their matched "
        "targets (amer_lib.beyond.spread); 0: the paper's loss",
    )
    first_vector: str = param(
        "matched",
        default_if_absent=True,
        study=True,
        choices=FIRST_VECTOR_MODES,
        help='beyond the paper: "single" trains the first query vector as the single-query model is and matches '
        'the others to the remaining targets (amer_lib.core.loss.matched_info_nce); "matched": the paper\'s loss',
    )
    component_weight: float = param(
        0.0,
        default_if_absent=True,
        minimum=0,
        help="beyond the paper: weight of a term pulling AMER's query vectors onto the off-the-shelf encoder's "
        "vectors of the questions a training question is made of, its compound components or itself "
        "(amer_lib.beyond.component); 0: the paper's loss",
    )
    component_distance: str = param(
        "cosine",
        default_if_absent=True,
        choices=COMPONENT_DISTANCES,
        help='beyond the paper, with component_weight > 0: "cosine" (1 - cosine of a component\'s vector and its '
        "query) or \"ranking\" (the query's softmax over the batch's candidates held to the component vector's: "
        "the distance kept, params/04_real_data/compound_distilled.yaml)",
    )
    component_single: bool = param(
        False,
        default_if_absent=True,
        help="beyond the paper, with component_weight > 0: single-query's one vector takes the term too (cosine: "
        "toward its nearest component; ranking: held to the mean of its components' rankings), and so do the models "
        "the oracle and baselines use; false: they train as the paper's",
    )
    train_compounds: int = param(
        0,
        default_if_absent=True,
        minimum=0,
        help="beyond the paper, compound benchmark only: train on this many compounds drawn afresh from the "
        "training components (steps x batch_size: none seen twice); 0: the prepared training compounds",
    )
    train_components: str = param(
        "findable",
        default_if_absent=True,
        study=True,
        help="beyond the paper, compound benchmark only: the components training compounds are made of; "
        '"findable": the prepared training compounds (components the off-the-shelf encoder finds, in the shipped '
        'recipe); "corpus": every training component whose documents the corpus holds, five times as many there; '
        '"disjoint": the findable ones less those sharing a gold document with a test or validation compound',
    )
    train_component_count: int = param(
        0,
        minimum=0,
        default_if_absent=True,
        help="beyond the paper, compound benchmark only, with compounds drawn afresh (train_compounds > 0, or "
        'train_components "corpus" or "disjoint"): make them of this many of those components, drawn by the seed, to '
        "see what their number does (studies/component_count); 0: all of them",
    )
    eval_every: int = param(100, minimum=1, help=EVAL_EVERY_HELP)
    search_depth: int = param(100, minimum=100, help=SEARCH_DEPTH_HELP)
    merge: str = param(PAPER_MERGE, choices=MERGES, keyed_at_default=False, help=MERGE_HELP)
    bootstrap_resamples: int = param(10000, minimum=1, run=False, help=BOOTSTRAP_HELP)
    workers: int = workers_param("runs")
    threads: int = threads_param()
    nproc_per_node: int = param(
        1,
        minimum=1,
        run=False,
        help="processes (one GPU each) training every run together, torchrun; they share the batch",
    )
    device: str = param("auto", choices=DEVICES, help=DEVICE_HELP)
    mixed_precision: bool | str = param(
        "auto",
        choices=(True, False, "auto"),
        help="bfloat16 autocast and frozen weights, any device; auto: on a GPU for a billion-parameter backbone",
    )
    micro_batch_size: int = micro_batch_param()
    gradient_checkpointing: bool = checkpointing_param()
    prepared_dir: str = param("../results/prepared/wordnet", help=PREPARED_HELP)
    results_dir: str = param("../results/04_real_data", help=RESULTS_HELP)
    runs_dir: str = param("../runs/04_real_data", help=RUNS_HELP)
    figures_dir: str = param("", run=False, help=FIGURES_HELP)
    stop_weight: float = internal(0.0)  # as SyntheticConfig's

    def __post_init__(self):
        """Checked, then "auto" resolved on this machine (`run_recipe`): the config holds (and its runs
        are keyed by) what runs here. What was asked is kept beside the fields (`asked`), so that
        `on_machine` can resolve it for another machine; a config made by `replace` asks what it was
        made with (the values already resolved)."""
        super().__post_init__()
        check_draw_options(draw_options(self))  # the registered training draws' own checks
        object.__setattr__(self, "_asked", {"finetune": self.finetune, "mixed_precision": self.mixed_precision})
        on_gpu = self.device == "cuda" or (self.device == "auto" and torch.cuda.is_available())
        finetune, mixed_precision = run_recipe(self.backbone, self.finetune, self.mixed_precision, on_gpu)
        object.__setattr__(self, "finetune", finetune)
        object.__setattr__(self, "mixed_precision", mixed_precision)

    @property
    def asked(self) -> dict[str, bool | str]:
        """`finetune` and `mixed_precision` as they were given, "auto" unresolved."""
        return dict(getattr(self, "_asked", {"finetune": self.finetune, "mixed_precision": self.mixed_precision}))

    def on_machine(self, gpu: bool) -> RealConfig:
        """This config as its run would be on a machine with a GPU (`gpu`) or without one: what was
        asked with "auto" resolved there (`run_recipe`); an explicit value is kept."""
        asked = self.asked
        finetune, mixed_precision = run_recipe(self.backbone, asked["finetune"], asked["mixed_precision"], gpu)
        if (finetune, mixed_precision) == (self.finetune, self.mixed_precision):
            return self
        return self.replace(finetune=finetune, mixed_precision=mixed_precision)

    def for_system(self, system: str) -> RealConfig:
        """The config a run of `system` is trained and keyed by: AMER's, this one; any other system's
        (single-query, the baselines and the oracle built on it), the levers of AMER's loss at their
        defaults (`AMER_LOSS_LEVERS`: no-ops for one vector, but for `component_weight` unless
        `component_single`), so a lever's runs share single-query's with the recipe without it."""
        if system == "amer":
            return self
        kept = {"component_weight", "component_distance", "component_single"} if self.component_single else set()
        defaults = type(self).defaults()
        reset = {name: defaults[name] for name in AMER_LOSS_LEVERS if name not in kept}
        return self.replace(**reset) if any(getattr(self, k) != v for k, v in reset.items()) else self

    @property
    def backbone_name(self) -> str:
        """The backbone as tables name it: a registry name, or a local folder's last part."""
        return Path(self.backbone).name

    @property
    def tag(self) -> str:
        """The name of this backbone's figures and summary on these datasets."""
        return f"{self.backbone_name}_{'+'.join(self.datasets)}"


@dataclass(frozen=True)
class AblationConfig(Config):
    """Notebook 05: sampling modes, vector counts and merges, reusing notebooks 02 and 04's runs."""

    # the first line of the notebook's parameters cell
    CELL_HEADER: ClassVar[str] = (
        "Offline CPU default: 27 min on 2 shared cores after notebooks 02 and 04 (make figures; benchmarks/times.json)"
    )

    synthetic_params: str = param(
        "../results/02_synthetic/params.yaml",
        help="the params.yaml notebook 02 writes beside its runs (they are reused)",
    )
    real_params: list[str] = param(
        ["../results/04_real_data/params_minilm_wordnet_senses+wordnet_kinds.yaml"],
        help="the params_<tag>.yaml notebook 04 writes beside its runs, one per backbone (they are reused)",
    )
    synthetic_transforms: list[str] = param(["linear", "mlp"], choices=TRANSFORMS, help="notebook 02's transforms")
    synthetic_setting: str = param("multi", choices=tuple(SETTINGS), help="notebook 02's setting")
    sampling_modes: list[str] = param(
        ["scheduled", "predicted", "teacher"], choices=SAMPLING_MODES, help="training sampling modes compared"
    )
    real_seeds: list[int] = param([0], help="notebook 04 trained three; the other modes cost a training each")
    vector_counts: list[int] = param([1, 2, 3, 4, 5, 6, 7, 8], minimum=1, help="numbers of query vectors compared")
    merges: list[str] = param(["round_robin", "rrf", "max_score"], choices=MERGES, help=MERGES_HELP)
    bootstrap_resamples: int = param(10000, minimum=1, help=BOOTSTRAP_HELP)
    results_dir: str = param("../results/05_ablations", help=RESULTS_HELP)
    runs_dir: str = param("../runs/05_ablations", help=RUNS_HELP)
    figures_dir: str = param("", help=FIGURES_HELP)


@dataclass(frozen=True)
class BeyondConfig(Config):
    """Notebook 07: an adaptive number of query vectors and merges beyond round-robin, on
    notebook 02's model and budget (the varying task) and notebook 04's AMER runs."""

    # the first line of the notebook's parameters cell
    CELL_HEADER: ClassVar[str] = (
        "Offline CPU default: 16 min on 2 shared cores after notebooks 02 and 04 (make figures; benchmarks/times.json)"
    )

    synthetic_params: str = param(
        "../results/02_synthetic/params.yaml",
        help="the params.yaml notebook 02 writes beside its runs: the varying task's model and budget",
    )
    synthetic_steps: int = param(1000, minimum=1, help="the varying task's training steps (notebook 02's budget)")
    synthetic_seeds: list[int] = param([0], help="the varying task's seeds, one training each")
    stop_weight: float = param(1.0, help="the stop loss's weight beside the matched loss (varying task)")
    real_params: list[str] = param(
        ["../results/04_real_data/params_minilm_wordnet_senses+wordnet_kinds.yaml"],
        help="the params_<tag>.yaml notebook 04 writes beside its runs, one per backbone (their AMER runs are reused)",
    )
    real_seeds: list[int] = param([0, 1, 2], help="AMER runs of notebook 04 to search with")
    max_n: int = param(
        8,
        minimum=1,
        help="the most vectors an adaptive n searches (real benchmark); the offline questions have 2 to 8 answers",
    )
    stop_threshold: float = param(0.5, help="the stop head stops past this probability")
    max_cosine: float = param(0.97, help="the similarity rule stops before a vector this close to one kept")
    merges: list[str] = param(
        ["round_robin", "coverage", "rrf", "max_score", "ranx_rrf", "combsum", "combmnz", "max_zmuv"],
        choices=MERGES,
        help=MERGES_HELP,
    )
    bootstrap_resamples: int = param(10000, minimum=1, help=BOOTSTRAP_HELP)
    results_dir: str = param("../results/07_beyond", help=RESULTS_HELP)
    runs_dir: str = param("../runs/07_beyond", help=RUNS_HELP)
    figures_dir: str = param("", help=FIGURES_HELP)


@dataclass(frozen=True)
class DiversityConfig(Config):
    """Notebook 06: how diverse AMER's vectors and the targets are, from notebooks 02 and 04's runs."""

    # the first line of the notebook's parameters cell
    CELL_HEADER: ClassVar[str] = (
        "Offline CPU default: 2 min on 2 shared cores after notebooks 02 and 04 (make figures; benchmarks/times.json)"
    )

    real_params: list[str] = param(
        ["../results/04_real_data/params_minilm_wordnet_senses+wordnet_kinds.yaml"],
        help="the params_<tag>.yaml notebook 04 writes beside its runs, one per backbone",
    )
    synthetic_params: str = param(
        "../results/02_synthetic/params.yaml",
        help="the params.yaml notebook 02 writes beside its runs (only its task is rebuilt)",
    )
    synthetic_setting: str = param("multi", choices=tuple(SETTINGS), help="notebook 02's setting")
    seeds: list[int] = param([0, 1, 2], help="AMER runs of notebook 04 to generate with")
    target_split: str = param(
        "train", choices=("train", "test"), help="the paper's Figure 5 compares with the training targets"
    )
    random_pairs: int = param(
        10000, minimum=1, help="pairs of targets of two random questions, the baseline cosine (the paper's appendix)"
    )
    seen_questions: int = param(600, minimum=1, help="training questions per run in the seen-vs-unseen comparison")
    figures_dir: str = param("", help=FIGURES_HELP)
