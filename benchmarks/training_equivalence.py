"""Tiny training runs with every loss setting, for comparing two trees of the library bit for bit.

Each case trains the stand-in problem of `tests/stand_ins.py` for six steps with one setting of the
matched loss or its terms (spread, component by cosine and as a ranking, the stop head, the first
vector as single-query's, the reduction, fed targets excluded, another temperature) or of the
optimizer, scheduled sampling and micro-batches, and prints a hash of its losses and final
weights. The settings are given by their notebook field names and built as the tree builds them,
so a tree with flat `TrainConfig` fields, one where the loss owns its parameters and one with every
group of settings (`core.train.SETTING_GROUPS`) give the same cases. Run it from each tree and compare:

    git worktree add /tmp/before ccfecbe
    PYTHONPATH=/tmp/before .venv/bin/python benchmarks/training_equivalence.py /tmp/before > before.txt
    .venv/bin/python benchmarks/training_equivalence.py . > after.txt
    diff before.txt after.txt
"""

import hashlib
import sys
from pathlib import Path

import torch

TREE = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
sys.path.insert(0, str(TREE / "tests"))

import stand_ins  # noqa: E402
from stand_ins import DIM, TRAIN_CONFIG, make_model, make_problem  # noqa: E402

from amer_lib.core.backbones import load_backbone  # noqa: E402
from amer_lib.core.model import AMERQueryEncoder  # noqa: E402
from amer_lib.core.train import TrainConfig, train  # noqa: E402

CASES = {
    "plain": {},
    "spread": {"spread_weight": 0.5},
    "component_rank": {"component_weight": 0.7, "component_distance": "ranking"},
    "spread+component": {"spread_weight": 0.5, "component_weight": 0.7},
    "single+component": {"n_outputs": 1, "component_weight": 0.7},
    "stop": {"stop_weight": 0.5},
    "loss_options": {"temperature": 0.07, "matched_loss": "sum", "exclude_fed_targets": True},
    "first_single+spread": {"first_vector": "single", "spread_weight": 0.5},
    "single_tau": {"n_outputs": 1, "temperature": 0.1},
    "teacher_forced": {"sampling": "teacher"},
    "schedule+optimizer": {
        "sampling_rate": 2.0,
        "max_sampling_prob": 0.5,
        "warmup": 0.3,
        "weight_decay": 0.1,
        "grad_clip": 0.5,
    },
    "micro_batches": {"micro_batch_size": 4},
}


class ComponentData:
    """The stand-in problem with two component vectors an example (its first two targets, moved)."""

    def __init__(self, base):
        self.base = base

    def __len__(self):
        return len(self.base)

    def __getattr__(self, name):
        return getattr(self.base, name)

    def components(self, indices):
        vectors = self.base.targets(indices)[0][:, :2] * 0.5 + 0.1
        return vectors, torch.ones(len(indices), 2, dtype=torch.bool)


def config(settings: dict) -> TrainConfig:
    """TrainConfig of `settings` as this tree's tests build it: through `stand_ins.with_terms` (the
    loss and its terms, or every group of settings, from the notebook field names), or as flat
    fields in a tree from before it."""
    settings = {**TRAIN_CONFIG, "steps": 6, "eval_every": 3, **settings}
    with_terms = getattr(stand_ins, "with_terms", None)
    return TrainConfig(**(with_terms(settings) if with_terms else settings))


def main() -> None:
    for name, settings in CASES.items():
        data, pool = make_problem()
        data = ComponentData(data)
        if "stop_weight" in settings:
            torch.manual_seed(0)
            overrides = dict(hidden_size=16, intermediate_size=32)
            model = AMERQueryEncoder(load_backbone("tiny", seed=0, config_overrides=overrides), DIM, stop_head=True)
        else:
            model = make_model()
        result = train(model, data, data, pool, config(settings), progress=False)
        digest = hashlib.sha256()
        for entry in result.history:
            digest.update(repr((entry["train_loss"], entry["val_loss"])).encode())
        for _, value in sorted(model.state_dict().items()):
            digest.update(value.detach().float().numpy().tobytes())
        print(name, digest.hexdigest()[:16], result.history[-1]["train_loss"])


if __name__ == "__main__":
    main()
