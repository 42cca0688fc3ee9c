"""Small stand-ins several test modules share: a deterministic document encoder, a corpus, a tiny
synthetic-task config and a tiny training problem."""

import atexit
import shutil
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from amer_lib.core.backbones import load_backbone
from amer_lib.core.index import unit_norm
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.data.corpus import Document
from amer_lib.data.datasets import VectorData
from amer_lib.runs.configs import SyntheticConfig


class HashEncoder:
    """A deterministic stand-in document encoder: each text's vector is seeded by its crc32.
    `fail_after`: batches encoded before a simulated interruption."""

    def __init__(self, name: str = "hash", dim: int = 16, fail_after: int | None = None):
        self.spec, self.dim = SimpleNamespace(name=name), dim
        self.fail_after, self.calls = fail_after, 0

    def encode_documents(self, texts, batch_size):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        return unit_norm(np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dim) for t in texts]))


def documents(n):
    return [Document(f"d{i}", f"title {i}", f"text number {i}") for i in range(n)]


def tiny_synthetic_params(tmp_path, workers) -> SyntheticConfig:
    """Notebook 02's config at a size that trains in seconds, with folders of its own per `workers`."""
    return SyntheticConfig(
        settings=["single", "ood"],
        transforms=["linear"],
        systems=["single", "amer"],
        dim=8,
        n_train=60,
        n_test=10,
        corpus_size=500,
        mlp_layers=2,
        mlp_sweep_dims=[],
        mlp_sweep_depths=[2],
        mlp_sweep_authors_bug=False,
        backbone="tiny",
        backbone_overrides={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
        },
        finetune="full",
        n_queries=5,
        steps=3,
        batch_size=8,
        lr=1e-3,
        temperature=0.05,
        matched_loss="mean",
        tuning_grid={},
        sampling="scheduled",
        sampling_rate=1,
        eval_every=3,
        search_depth=20,
        seed=0,
        device="cpu",
        mixed_precision=False,
        workers=workers,
        nproc_per_node=1,
        results_dir=str(tmp_path / f"results{workers}"),
        runs_dir=str(tmp_path / f"runs{workers}"),
        figures_dir=str(tmp_path / "figures"),
    )


# ----- a tiny training problem: inputs whose targets are themselves, their negation and a roll ------
DIM = 8
TRAIN_CONFIG = dict(n_outputs=3, steps=12, batch_size=16, lr=1e-3, eval_every=4, checkpoint_every=4, seed=0)
# the notebook fields that set loss terms, at their defaults (no term)
TERM_FIELDS = dict(stop_weight=0.0, spread_weight=0.0, component_weight=0.0, component_distance="cosine")


def with_terms(settings: dict) -> dict:
    """TrainConfig's keyword arguments from `settings` that may name the groups' settings (the
    optimizer's, scheduled sampling's, the memory layout's, the matched loss's) and the loss terms
    by their notebook fields (`FIELDS`, `TERM_FIELDS`), those turned into the groups and `terms` as
    `train_config` turns a notebook config's."""
    from amer_lib.core.train import SETTING_GROUPS
    from amer_lib.runs.query_encoders import loss_terms, setting_group

    named = {name for group in SETTING_GROUPS.values() for name in group.FIELDS.values()}
    levers = {**TERM_FIELDS, **{k: v for k, v in settings.items() if k in TERM_FIELDS}}
    given = SimpleNamespace(**{k: v for k, v in settings.items() if k in named})
    rest = {k: v for k, v in settings.items() if k not in TERM_FIELDS and k not in named}
    groups = {name: setting_group(group, given) for name, group in SETTING_GROUPS.items()}
    return {**groups, "terms": loss_terms(SimpleNamespace(**levers)), **rest}  # a group or terms given whole wins


def make_problem(n=64, m=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    inputs = torch.randn(n, DIM, generator=g)
    targets = torch.stack([inputs, -inputs, inputs.roll(1, dims=1)], dim=1)[:, :m]
    mask = torch.ones(n, m, dtype=torch.bool)
    mask[::4, -1] = False  # some examples have fewer targets
    return VectorData(inputs, targets, mask), torch.randn(200, DIM, generator=g)


def make_model(seed=0):
    torch.manual_seed(seed)
    return AMERQueryEncoder(
        load_backbone("tiny", seed=seed, config_overrides=dict(hidden_size=16, intermediate_size=32)), DIM
    )


def state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


_PREPARED: list[Path] = []  # the tiny WordNet benchmark this process prepared


def tiny_wordnet_benchmark() -> Path:
    """A tiny WordNet benchmark (24 training and 12 test questions, 400 documents encoded by MiniLM),
    prepared once per process (MiniLM's encoding is most of a test's set-up) in a folder removed at
    exit; a test copies it, so that what one test writes there no other test sees."""
    if not _PREPARED:
        from conftest import notebook_config

        from amer_lib.data.preparation import prepare

        folder = Path(tempfile.mkdtemp(prefix="amer-tiny-wordnet-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        recipe = notebook_config(
            "03_real_data_prep", max_train=24, max_test=12, corpus_size=400, device="cpu", prepared_dir=str(folder)
        )
        prepare(recipe, progress=False)
        _PREPARED.append(folder)
    return _PREPARED[0]


def tiny_wordnet_runs(tmp_path, **changes):
    """A tiny WordNet benchmark prepared under `tmp_path` and notebook 04's config of two-step runs
    on its `wordnet_kinds` (single-query and AMER, seed 0, one process), with `changes`."""
    from conftest import notebook_config

    shutil.copytree(tiny_wordnet_benchmark(), tmp_path / "p")
    return notebook_config(
        "04_real_data",
        **{
            "datasets": ["wordnet_kinds"],
            "systems": ["single", "amer"],
            "seeds": [0],
            "steps": 2,
            "batch_size": 4,
            "eval_every": 1,
            "workers": 1,
            "device": "cpu",
            "baselines": [],
            "prepared_dir": str(tmp_path / "p"),
            "results_dir": str(tmp_path / "results"),
            "runs_dir": str(tmp_path / "runs"),
            **changes,
        },
    )


def knob_registry() -> tuple[dict[str, list[str]], Callable]:
    """A registry of knob tests and its decorator: `@bites("Class.field", ...)` records the decorated
    test as one that fails when any of those fields is ignored (read by the modules' meta-tests)."""
    registry: dict[str, list[str]] = {}

    def bites(*fields: str):
        def register(test):
            for name in fields:
                registry.setdefault(name, []).append(test.__name__)
            return test

        return register

    return registry, bites
