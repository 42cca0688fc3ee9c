"""What running validation under the training's bfloat16 autocast changes (issue 59, finding 4).

A mixed-precision run (`mixed_precision: true`, bfloat16 autocast on the CPU) of notebook 02's AMER
on the linear / Multi task, with at every validation the validation loss computed twice on the same
weights: under the training's autocast, and in float32 (as `core.train.validation_loss` ran before
this study). Recorded per checkpoint: both losses, their difference, the seconds each took; per
run: the step each would keep (the lowest validation loss). Backbones: `tiny` (notebook 02's
default) and `minilm` (all-MiniLM-L6-v2, 22M parameters, on the same vectors), one thread each.

    python studies/validation_autocast/validation_autocast.py --out studies/validation_autocast/validation_autocast
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import replace
from pathlib import Path

import torch

from amer_lib.io import write_text

ROOT = Path(__file__).resolve().parents[2]

# backbone: (steps, batch size, eval_every, dim, lr); notebook 02's defaults otherwise (seed 0): the
# tiny Llama at its steps and lr; MiniLM's identity input projections need the vectors' dimension to
# be its hidden size, and at notebook 02's lr of 5e-3 it does not learn (a first try: 9.0 throughout)
RUNS = {"tiny": (1000, 256, 50, 128, 5e-3), "minilm": (240, 64, 20, 384, 1e-4)}


def timed_loss(model, data, pool, config, autocast: bool) -> tuple[float, float]:
    """Validation loss of `model` in float32 or under bfloat16 autocast, and its seconds."""
    from amer_lib.core.train import training_autocast, validation_loss

    config = replace(config, mixed_precision=autocast)
    began = time.perf_counter()
    with training_autocast(model, config):
        loss = validation_loss(model, data, pool, config)
    return loss, time.perf_counter() - began


def one_run(backbone: str, folder: Path) -> dict:
    """One mixed-precision AMER run of `backbone`, both validation losses at every checkpoint."""
    from amer_lib.core.device import cpu_threads
    from amer_lib.core.train import split_train_validation, train
    from amer_lib.data.synthetic_task import task_from_params
    from amer_lib.experiments.synthetic import task_data
    from amer_lib.params import NOTEBOOKS, from_files
    from amer_lib.runs.query_encoders import build_query_encoder, train_config

    steps, batch, every, dim, lr = RUNS[backbone]
    params = from_files(NOTEBOOKS / "02_synthetic.ipynb").replace(
        backbone=backbone,
        dim=dim,
        steps=steps,
        batch_size=batch,
        eval_every=every,
        lr=lr,
        mixed_precision=True,
        device="cpu",
    )
    device = torch.device("cpu")
    task = task_from_params(params, "linear", "multi")
    data, pool = task_data(task, device)
    train_idx, val_idx = split_train_validation(len(data), params.seed)
    train_data, val_data = data.subset(train_idx), data.subset(val_idx)
    config = train_config(params, params.n_queries, params.seed)
    checkpoints = []

    def both(model) -> dict:
        autocast, autocast_s = timed_loss(model, val_data, pool, config, True)
        plain, plain_s = timed_loss(model, val_data, pool, config, False)
        checkpoints.append(
            dict(
                val_loss_autocast=autocast,
                val_loss_float32=plain,
                difference=autocast - plain,
                seconds_autocast=autocast_s,
                seconds_float32=plain_s,
            )
        )
        return {}

    with cpu_threads(params.threads):
        model = build_query_encoder(params, params.seed, params.dim, device)
        began = time.perf_counter()
        result = train(model, train_data, val_data, pool, config, progress=False, evaluate=both)
    for record, checkpoint in zip(result.history, checkpoints):
        checkpoint["step"] = record["step"]
    best = lambda key: min(checkpoints, key=lambda c: c[key])["step"]  # noqa: E731
    differences = [abs(c["difference"]) for c in checkpoints]
    ranked = sorted(c["val_loss_float32"] for c in checkpoints)
    return dict(
        backbone=backbone,
        dim=dim,
        steps=steps,
        batch_size=batch,
        eval_every=every,
        lr=lr,
        validation_examples=len(val_data),
        train_seconds=round(time.perf_counter() - began, 1),
        best_step_autocast=best("val_loss_autocast"),
        best_step_float32=best("val_loss_float32"),
        largest_difference=max(differences),
        mean_difference=sum(c["difference"] for c in checkpoints) / len(checkpoints),
        best_lead_float32=ranked[1] - ranked[0],  # the kept checkpoint's lead over the next best
        tied_checkpoints_autocast=len(checkpoints) - len({c["val_loss_autocast"] for c in checkpoints}),
        tied_checkpoints_float32=len(checkpoints) - len({c["val_loss_float32"] for c in checkpoints}),
        checkpoints=checkpoints,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    parser.add_argument("--backbones", nargs="+", default=list(RUNS), choices=list(RUNS))
    args = parser.parse_args()
    runs = [one_run(backbone, args.out.parent) for backbone in args.backbones]
    report = dict(machine=f"{platform.processor() or platform.machine()}, torch {torch.__version__}", runs=runs)
    write_text(args.out.with_suffix(".json"), json.dumps(report, indent=1) + "\n")
    lines = [
        "# Validation under the training's autocast: what it changes",
        "",
        f"`python studies/validation_autocast/validation_autocast.py --out {args.out}` ({report['machine']}); "
        "notebook 02's AMER on linear / Multi, `mixed_precision: true` (bfloat16 autocast on the CPU), seed 0, "
        "one thread. At every validation, the same weights' validation loss under autocast and in float32.",
        "",
        "| backbone | steps x batch, lr | checkpoints | kept step, autocast | kept step, float32 | "
        "largest abs. difference | mean difference (autocast - float32) | "
        "lead of the kept checkpoint over the next, float32 | "
        "checkpoints tying an earlier one, autocast / float32 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run['backbone']} | {run['steps']} x {run['batch_size']}, {run['lr']:g} | {len(run['checkpoints'])} | "
            f"{run['best_step_autocast']} | {run['best_step_float32']} | {run['largest_difference']:.5f} | "
            f"{run['mean_difference']:+.5f} | {run['best_lead_float32']:.5f} | "
            f"{run['tied_checkpoints_autocast']} / {run['tied_checkpoints_float32']} |"
        )
    for run in runs:
        lines += [
            "",
            f"{run['backbone']}, per checkpoint:",
            "",
            "| step | autocast | float32 | difference | seconds (autocast / float32) |",
            "|---|---|---|---|---|",
        ]
        for c in run["checkpoints"]:
            lines.append(
                f"| {c['step']} | {c['val_loss_autocast']:.5f} | {c['val_loss_float32']:.5f} | "
                f"{c['difference']:+.5f} | {c['seconds_autocast']:.2f} / {c['seconds_float32']:.2f} |"
            )
    write_text(args.out.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
