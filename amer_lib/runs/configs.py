"""Each notebook's parameters as one typed config: the notebook's schema and its runs' key.

A notebook's `parameters` cell holds the defaults; `amer_lib.params` builds the config from it (and
from papermill's overrides), so a wrong key or value fails before anything runs. Fields marked
`run=False` choose which runs to make, how many processes share one, or where figures go; every
other field shapes a run and is part of its cache key and checkpoint digest (`amer_lib.runs.store`).
Notebook 03's config is `amer_lib.data.prepared.PrepConfig`, beside the preparation it drives.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from amer_lib.core.backbones import BACKBONES, FINETUNE_MODES
from amer_lib.core.config import Config, internal, param
from amer_lib.core.device import DEVICES
from amer_lib.core.expansion import EXPANSION_SOURCES
from amer_lib.core.loss import MATCHED_REDUCTIONS
from amer_lib.core.merge import MERGES
from amer_lib.core.metrics import DISTANCES
from amer_lib.core.train import SAMPLING_MODES
from amer_lib.data.encoders import ENCODERS, RETRIEVERS
from amer_lib.data.synthetic import SETTINGS, TRANSFORMS

SYSTEMS = ("single", "amer")  # one query vector, or the autoregressive sequence of n
BASELINES = ("query_expansion", "rerank")  # derived from notebook 04's single-query runs
MMR_QUERIES = ("trained", "encoder")  # MMR's Sim_q: the trained single-query vector, or the document encoder's


@dataclass(frozen=True)
class FailureConfig(Config):
    """Notebook 01: off-the-shelf retrievers on the prepared benchmark."""

    datasets: list[str] = param()  # any dataset of the prepared benchmark (checked against it)
    retrievers: list[str] = param(choices=RETRIEVERS)
    bm25_distance_encoder: str = param(choices=tuple(ENCODERS))
    distance: str = param(choices=DISTANCES)
    min_questions: int = param(minimum=4)
    device: str = param(choices=DEVICES)
    prepared_dir: str = param()
    results_dir: str = param()
    figures_dir: str = param()


@dataclass(frozen=True)
class SyntheticConfig(Config):
    """Notebook 02: single-query and AMER on the synthetic settings, and the MLP sweep."""

    settings: list[str] = param(choices=tuple(SETTINGS), run=False)
    transforms: list[str] = param(choices=TRANSFORMS, run=False)
    systems: list[str] = param(choices=SYSTEMS, run=False)
    dim: int = param(minimum=1)
    n_train: int = param(minimum=1)
    n_test: int = param(minimum=1)
    corpus_size: int = param(minimum=1)
    mlp_layers: int = param()
    mlp_sweep_dims: list[int] = param(minimum=1, may_be_empty=True, run=False)  # [] skips the sweep
    mlp_sweep_depths: list[int] = param(minimum=1, run=False)
    mlp_sweep_authors_bug: bool = param(run=False)
    backbone: str = param(choices=tuple(BACKBONES), or_folder=True)  # or a local model folder (the paper: Llama-3.2-1B)
    backbone_overrides: dict = param()
    finetune: str = param(choices=FINETUNE_MODES)
    n_queries: int = param(minimum=1)
    steps: int = param(minimum=1)
    batch_size: int = param(minimum=1)
    lr: float = param()
    temperature: float = param()
    matched_loss: str = param(choices=MATCHED_REDUCTIONS)
    tuning_grid: dict = param(run=False)  # {} or lists of lr, batch_size, temperature, epochs
    sampling: str = param(choices=SAMPLING_MODES)
    sampling_rate: float = param()
    eval_every: int = param(minimum=1)
    search_depth: int = param(minimum=1)
    seed: int = param()
    device: str = param(choices=DEVICES)
    mixed_precision: bool = param()
    workers: int = param(minimum=1)
    nproc_per_node: int = param(minimum=1, run=False)  # the same run shared by processes
    results_dir: str = param()
    runs_dir: str = param()
    figures_dir: str = param(run=False)
    # the MLP sweep's bug cells train on this transform's targets and test on the setting's
    train_transform: str | None = internal(None, choices=TRANSFORMS)
    # notebook 07: > 0 trains a stop head beside the matched loss (`amer_lib.core.loss.stop_loss`)
    stop_weight: float = internal(0.0)


@dataclass(frozen=True)
class RealConfig(Config):
    """Notebook 04: one backbone trained on the prepared datasets, with the baselines."""

    datasets: list[str] = param(run=False)  # any dataset of the prepared benchmark (checked against it)
    systems: list[str] = param(choices=SYSTEMS, run=False)
    baselines: list[str] = param(choices=BASELINES, may_be_empty=True, run=False)  # [] skips them
    expansion: str = param(choices=EXPANSION_SOURCES, run=False)
    expansion_model: str = param(run=False)
    mmr_query: str = param(choices=MMR_QUERIES, run=False)  # re-ranking's query relevance (baselines only)
    backbone: str = param(choices=tuple(BACKBONES), or_folder=True)  # or a local model folder
    encoder: str = param(choices=tuple(ENCODERS))
    finetune: str = param(choices=FINETUNE_MODES)
    seeds: list[int] = param(run=False)
    steps: int = param(minimum=1)
    batch_size: int = param(minimum=1)
    lr: float = param()
    temperature: float = param()
    matched_loss: str = param(choices=MATCHED_REDUCTIONS)
    tuning_grid: dict = param(run=False)  # {} or lists of lr, batch_size, temperature, epochs
    sampling: str = param(choices=SAMPLING_MODES)
    exclude_fed_targets: bool = param()
    single_target_step: bool = param()
    eval_every: int = param(minimum=1)
    search_depth: int = param(minimum=100)
    bootstrap_resamples: int = param(minimum=1, run=False)
    workers: int = param(minimum=1)
    nproc_per_node: int = param(minimum=1, run=False)
    device: str = param(choices=DEVICES)
    mixed_precision: bool = param()
    prepared_dir: str = param()
    results_dir: str = param()
    runs_dir: str = param()
    figures_dir: str = param(run=False)
    stop_weight: float = internal(0.0)  # as SyntheticConfig's

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

    synthetic_params: str = param()  # notebook 02's params.yaml (its runs are reused)
    real_params: list[str] = param()  # notebook 04's params_<tag>.yaml, one per backbone (runs reused)
    synthetic_transforms: list[str] = param(choices=TRANSFORMS)
    synthetic_setting: str = param(choices=tuple(SETTINGS))
    sampling_modes: list[str] = param(choices=SAMPLING_MODES)
    real_seeds: list[int] = param()
    vector_counts: list[int] = param(minimum=1)
    merges: list[str] = param(choices=tuple(MERGES))
    bootstrap_resamples: int = param(minimum=1)
    results_dir: str = param()
    runs_dir: str = param()
    figures_dir: str = param()


@dataclass(frozen=True)
class BeyondConfig(Config):
    """Notebook 07: an adaptive number of query vectors and merges beyond round-robin, on
    notebook 02's model and budget (the varying task) and notebook 04's AMER runs."""

    synthetic_params: str = param()  # notebook 02's params.yaml: the varying task's model and budget
    synthetic_steps: int = param(minimum=1)  # the varying task's training steps
    synthetic_seeds: list[int] = param()
    stop_weight: float = param()  # the stop loss's weight beside the matched loss (varying task)
    real_params: list[str] = param()  # notebook 04's params_<tag>.yaml files (their AMER runs are reused)
    real_seeds: list[int] = param()
    max_n: int = param(minimum=1)  # the most vectors an adaptive n searches (real benchmark)
    stop_threshold: float = param()  # the stop head stops past this probability
    max_cosine: float = param()  # the similarity rule stops before a vector this close to one kept
    merges: list[str] = param(choices=tuple(MERGES))
    bootstrap_resamples: int = param(minimum=1)
    results_dir: str = param()
    runs_dir: str = param()
    figures_dir: str = param()


@dataclass(frozen=True)
class DiversityConfig(Config):
    """Notebook 06: how diverse AMER's vectors and the targets are, from notebooks 02 and 04's runs."""

    real_params: list[str] = param()  # notebook 04's params_<tag>.yaml, one per backbone
    synthetic_params: str = param()  # notebook 02's params.yaml (only its task is rebuilt)
    synthetic_setting: str = param(choices=tuple(SETTINGS))
    seeds: list[int] = param()
    target_split: str = param(choices=("train", "test"))
    random_pairs: int = param(minimum=1)
    seen_questions: int = param(minimum=1)
    figures_dir: str = param()
