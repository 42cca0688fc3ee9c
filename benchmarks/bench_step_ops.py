"""Where a training step's operations per decoded position go, by cause (issue 69, "Fewer kernels a step").

    .venv/bin/python benchmarks/bench_step_ops.py            # about a minute on one thread

counts, with the project's own counter (`paper_shapes.OpCounter`'s rule: the aten operations that reach the
kernels, below autograd and autocast, views and allocations left out; a GPU runs each as about one kernel),
one training micro-batch of 4 questions through `train.accumulate_gradients`, every fed-back position the
model's own (p = 1), on `paper_shapes.count_ops`'s stand-ins of Llama-3.1-8B's structure (its GQA ratio,
LoRA r = 64 on the seven projections, bfloat16 frozen weights under bfloat16 autocast) at 2 and 4 layers and
5 and 8 decoded positions, and fits each count as a + b L + c n + d L n (`paper_shapes.fit`): d is an
operation's count per layer and decoded position, c per decoded position outside the layers, and
c + 32 d per decoded position of one micro-batch at 8B's 32 layers.

Each operation is attributed to a cause as it runs: forward operations by the innermost module running
them (hooks on every module of the encoder); backward operations by the autograd node running them, which
carries the module that made it in the forward pass (tagged by a `TorchFunctionMode` above autograd);
operations run by a module's forward while autograd runs a node are checkpointing's recompute. The causes:
LoRA's dropout, the float32 casts around the adapters (peft's cast of each adapter's bfloat16 input to its
float32 weights and autocast's cast back), autocast's casts of the float32 adapter weights, the adapters'
own matrix products, scaling and sum, checkpointing's recompute, and the rest by component (attention,
norms, rotary, MLP, residual, the decode loop outside the backbone, the loss).

Variants: the paper files' step ("lora", dropout 0.1), checkpointed, without LoRA, and the causes' controls
(dropout 0; peft's input casts kept, `AMERQueryEncoder.peft_input_casts`). `--before PATH` writes this
checkout's counts as the "before" record (`benchmarks/step_ops_before.json`: 57ec677's files, before issue 69's
cuts, from `git archive 57ec677` with this script copied in, run with `--before benchmarks/step_ops_before.json
--commit 57ec677`); the default run writes `benchmarks/step_ops.json` with that record beside its own counts,
as ratios, and prints the summary.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "device"))

from paper_shapes import (  # noqa: E402
    NOT_KERNELS,
    fit,
    negative_pool,
    question_data,
    random_encoder,
    shapes,
)

from amer_lib.core import checkpointing  # noqa: E402
from amer_lib.core.backbones import LORA_TARGETS  # noqa: E402
from amer_lib.core.train import TrainConfig, accumulate_gradients, draw_batch, step_generator  # noqa: E402
from amer_lib.io import write_json  # noqa: E402

OUT = ROOT / "benchmarks" / "step_ops.json"
BEFORE = ROOT / "benchmarks" / "step_ops_before.json"
LAYERS, POSITIONS = (2, 4), (5, 8)  # the fit's stand-ins, as paper_shapes.count_ops
DEPTH = 32  # Llama-3.1-8B's layers
QAMPARI = dict(positions=8, micro_batches=4)  # a QAMPARI step: 8 decoded positions, batch 128 in micro-batches of 32
# name: (LoRA, LoRA dropout, checkpointing, peft's input casts)
VARIANTS = {
    "lora": (True, 0.1, False, False),
    "lora_checkpointed": (True, 0.1, True, False),
    "no_lora": (False, 0.0, False, False),
    "lora_peft_casts": (True, 0.1, False, True),
    "lora_checkpointed_peft_casts": (True, 0.1, True, True),
    "lora_no_dropout": (True, 0.0, False, False),
}
# the paper files' step without and with gradient checkpointing, and without LoRA: after the cuts, and the
# before record's variant of the same step (peft's input casts were the only path then)
SYNC, SYNCS = "aten::_local_scalar_dense", "host syncs"  # a tensor's value read on the host: not a kernel, a wait
HEADLINE = {"lora": "lora_peft_casts", "lora_checkpointed": "lora_checkpointed_peft_casts", "no_lora": "no_lora"}


# ----- attribution ----------------------------------------------------------------------------------------------------


def component(name: str, module: torch.nn.Module) -> str:
    """The part of the model a module's own operations belong to, from its qualified name in the encoder."""
    parts = name.split(".")
    if "lora_dropout" in parts:
        return "lora dropout"
    if "lora_A" in parts or "lora_B" in parts:
        return "lora matmuls"
    if "base_layer" in parts:
        return "attention" if "self_attn" in parts else "mlp"
    if parts[-1] in LORA_TARGETS and hasattr(module, "base_layer"):
        return "lora wrapper"  # peft's Linear: its input cast, scaling and sum
    if "rotary_emb" in parts:
        return "rotary"
    if parts[-1].endswith("norm"):
        return "norms"
    if "self_attn" in parts:
        return "attention"
    if "mlp" in parts:
        return "mlp"
    if re.fullmatch(r"layers\.\d+", ".".join(parts[-2:])):
        return "residual"  # the decoder layer's own additions
    if parts[-1] in ("input_projection", "output_projection"):
        return "projections"
    if name == "":
        return "decode loop"  # AMERQueryEncoder's own operations between the backbone calls
    return "backbone outside the layers"  # embedding, attention masks, position handling, final norm


def cause(phase: str, part: str, op: str, weight_cast: bool) -> str:
    """The cause an operation is counted under (see the module docstring)."""
    if phase == "recompute":
        return "checkpoint recompute"
    if weight_cast:
        return "autocast weight casts"
    if part == "lora dropout":
        return "lora dropout"
    if part in ("lora wrapper", "lora matmuls"):
        return "float32 casts around the adapters" if op == "aten::_to_copy" else "lora adapters"
    return f"rest: {part}"


class Attributing(TorchDispatchMode):
    """`OpCounter`'s operations, each with its phase (forward, backward, recompute), the model part it came
    from and its cause."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.counts: Counter = Counter()
        self.stack: list[str] = []
        self.parts = {id(module): component(name, module) for name, module in model.named_modules()}
        self.parameters = {id(p) for p in model.parameters()}

    def part(self) -> str:
        return self.stack[-1] if self.stack else "loss"

    def __enter__(self):
        self.tagger = Tagging(self)
        hooks = torch.nn.modules.module
        self.handles = [
            hooks.register_module_forward_pre_hook(self._enter_module),
            hooks.register_module_forward_hook(self._leave_module, always_call=True),
        ]
        self.tagger.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.tagger.__exit__(*exc)
        for handle in self.handles:
            handle.remove()

    def _enter_module(self, module, args):
        if id(module) in self.parts:
            self.stack.append(self.parts[id(module)])

    def _leave_module(self, module, args, output):
        if id(module) in self.parts:
            self.stack.pop()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._overloadpacket._qualified_op_name
        if name == SYNC:
            self.counts[(SYNCS, "forward", self.part(), name)] += 1
        elif not func.is_view and name not in NOT_KERNELS:
            node = torch._C._current_autograd_node()
            weight_cast = name == "aten::_to_copy" and bool(args) and id(args[0]) in self.parameters
            if node is None:
                phase, part = "forward", self.part()
            elif self.stack:
                phase, part = "recompute", self.part()
            else:
                meta = node.metadata
                phase, part = "backward", meta.get("part", "untagged")
                weight_cast = weight_cast or meta.get("weight_cast", False)
            self.counts[(cause(phase, part, name, weight_cast), phase, part, name)] += 1
        return func(*args, **(kwargs or {}))


class Tagging(TorchFunctionMode):
    """Marks every autograd node a torch function makes with the model part running it (and whether it
    is a cast of a trained weight), so that its backward operations are counted under that part."""

    def __init__(self, counter: Attributing):
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if torch.is_grad_enabled() and torch._C._current_autograd_node() is None:
            outputs = result if isinstance(result, (tuple, list)) else (result,)
            for output in outputs:
                if isinstance(output, torch.Tensor) and output.grad_fn is not None:
                    self._tag(output.grad_fn)
        return result

    def _tag(self, node) -> None:
        part, todo = self.counter.part(), [node]
        while todo:
            node = todo.pop()
            if node is None or "part" in node.metadata or type(node).__name__ == "AccumulateGrad":
                continue
            node.metadata["part"] = part
            following = [n for n, _ in node.next_functions if n is not None]
            if type(node).__name__ == "ToCopyBackward0" and any(
                type(n).__name__ == "AccumulateGrad" for n in following
            ):
                node.metadata["weight_cast"] = True
            todo.extend(following)


# ----- counting -------------------------------------------------------------------------------------------------------


def encoder(layers: int, lora: bool, dropout: float, checkpointed: bool, peft_casts: bool):
    """`paper_shapes.count_ops`'s stand-in at `layers` layers, its LoRA dropout and peft's input casts as asked."""
    size = shapes(True)
    config = {**size["backbones"]["llama8b"], "num_hidden_layers": layers}
    model = random_encoder(config, size["embedding_dim"], "cpu", lora=lora).train()
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = dropout
    if hasattr(model, "peft_input_casts"):
        model.peft_input_casts = peft_casts
    elif not peft_casts:  # the checkout before issue 69: only peft's own switch (without checkpointing)
        for module in model.modules():
            if hasattr(module, "cast_input_dtype_enabled"):
                module.cast_input_dtype_enabled = False
    if checkpointed:
        checkpointing.enable(model.backbone)
    return model, size


def count(layers: int, n: int, lora: bool, dropout: float, checkpointed: bool, peft_casts: bool) -> Counter:
    """The attributed operations of one micro-batch's forward and backward (after a warm-up one)."""
    model, size = encoder(layers, lora, dropout, checkpointed, peft_casts)
    data = question_data({**size, "datasets": {"q": dict(questions=4, targets=(n, n))}}, "q", "cpu")
    train = TrainConfig(n_outputs=n, steps=10, batch_size=4, mixed_precision=True)
    batch = draw_batch(data, torch.arange(4), negative_pool(size, "cpu"), train, 1.0, step_generator(0, 0))
    accumulate_gradients(model, data, batch, train)  # warm-up
    model.zero_grad(set_to_none=True)
    with Attributing(model) as counter:
        accumulate_gradients(model, data, batch, train)
    return counter.counts


def fitted(counts: dict[tuple[int, int], Counter]) -> dict[str, dict]:
    """Per (cause, op): the fit's a, b, c, d and c + 32 d, from the four stand-ins' counts."""
    keys = {(key[0], key[3]) for counted in counts.values() for key in counted}
    found = {}
    for c, op in sorted(keys):
        total = {
            shape: sum(v for key, v in counted.items() if key[0] == c and key[3] == op)
            for shape, counted in counts.items()
        }
        a, b, per_n, d = fit(total)
        found[f"{c} | {op}"] = dict(a=a, b=b, c=per_n, d=d, per_position_at_32=per_n + DEPTH * d)
    return found


def by_cause(ops: dict[str, dict]) -> dict[str, dict]:
    """`fitted`'s rows summed by cause."""
    causes: dict[str, dict] = {}
    for key, row in ops.items():
        total = causes.setdefault(key.split(" | ")[0], dict(a=0.0, b=0.0, c=0.0, d=0.0, per_position_at_32=0.0))
        for field in total:
            total[field] += row[field]
    return dict(sorted(causes.items(), key=lambda item: -item[1]["per_position_at_32"]))


def variant(name: str) -> dict:
    lora, dropout, checkpointed, peft_casts = VARIANTS[name]
    counts = {(L, n): count(L, n, lora, dropout, checkpointed, peft_casts) for L in LAYERS for n in POSITIONS}
    ops = fitted(counts)
    causes = by_cause(ops)
    syncs = causes.pop(SYNCS, dict(c=0.0, d=0.0))
    per_layer = sum(row["d"] for row in causes.values())
    per_position = sum(row["c"] for row in causes.values())
    fixed = sum(row["a"] + DEPTH * row["b"] for row in causes.values())
    position = per_position + DEPTH * per_layer
    return dict(
        settings=dict(
            lora=lora, lora_dropout=dropout, gradient_checkpointing=checkpointed, peft_input_casts=peft_casts
        ),
        counts={f"L={L} n={n}": sum(counts[L, n].values()) for L in LAYERS for n in POSITIONS},
        per_layer_per_position=per_layer,
        per_position_outside_layers=per_position,
        per_position_per_micro_batch_at_32=position,
        per_micro_batch_fixed_at_32=fixed,
        # the forward and backward of a QAMPARI step's micro-batches (clipping and AdamW not counted here)
        qampari_step_forward_backward=QAMPARI["micro_batches"] * (fixed + QAMPARI["positions"] * position),
        host_syncs_per_position=syncs["c"] + DEPTH * syncs["d"],
        by_cause=causes,
        by_cause_and_op={key: row for key, row in ops.items() if row["d"] or row["c"]},
    )


def measure(made_at: str | None = None) -> dict:
    torch.set_num_threads(1)
    began = time.perf_counter()
    variants = {name: variant(name) for name in VARIANTS}
    return dict(
        commit=made_at or commit(),
        torch=torch.__version__,
        seconds=round(time.perf_counter() - began, 1),
        variants=variants,
    )


def commit() -> str:
    """This checkout's commit, marked when its tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def compared(after: dict, before: dict) -> dict:
    """After beside before for the headline variants: totals and each cause per decoded position, as ratios."""
    rows = {}
    for name, was in HEADLINE.items():
        new, old = after["variants"][name], before["variants"][was]
        causes = sorted(set(new["by_cause"]) | set(old["by_cause"]))
        rows[name] = dict(
            host_syncs_per_position=[old["host_syncs_per_position"], new["host_syncs_per_position"]],
            per_layer_per_position=[old["per_layer_per_position"], new["per_layer_per_position"]],
            per_position_outside_layers=[old["per_position_outside_layers"], new["per_position_outside_layers"]],
            per_position_per_micro_batch_at_32=[
                old["per_position_per_micro_batch_at_32"],
                new["per_position_per_micro_batch_at_32"],
            ],
            qampari_step_forward_backward=[old["qampari_step_forward_backward"], new["qampari_step_forward_backward"]],
            ratio_per_position=new["per_position_per_micro_batch_at_32"] / old["per_position_per_micro_batch_at_32"],
            ratio_step=new["qampari_step_forward_backward"] / old["qampari_step_forward_backward"],
            by_cause_per_position_at_32={
                c: [
                    old["by_cause"].get(c, {}).get("per_position_at_32", 0.0),
                    new["by_cause"].get(c, {}).get("per_position_at_32", 0.0),
                ]
                for c in causes
            },
        )
    return rows


def summary(record: dict) -> str:
    lines = []
    for name, row in record.get("before_after", {}).items():
        old, new = row["per_position_per_micro_batch_at_32"]
        lines.append(
            f"{name}: per decoded position per micro-batch at 32 layers {old:.0f} -> {new:.0f} "
            f"(x {row['ratio_per_position']:.3f}); per layer and position "
            f"{row['per_layer_per_position'][0]:.0f} -> {row['per_layer_per_position'][1]:.0f}; outside the layers "
            f"{row['per_position_outside_layers'][0]:.0f} -> {row['per_position_outside_layers'][1]:.0f}; host syncs "
            f"{row['host_syncs_per_position'][0]:.0f} -> {row['host_syncs_per_position'][1]:.0f} a position"
        )
        for c, (was, now) in row["by_cause_per_position_at_32"].items():
            lines.append(f"    {c:45s} {was:8.0f} -> {now:8.0f}")
    for name, found in record["variants"].items():
        lines.append(
            f"{name}: d = {found['per_layer_per_position']:.0f} per layer and position, c = "
            f"{found['per_position_outside_layers']:.0f}; {found['per_position_per_micro_batch_at_32']:.0f} a position"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="write this checkout's counts as the before record here")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--commit", help="the commit the counted code is at, where this is no git checkout")
    args = parser.parse_args(argv)
    record = measure(args.commit)
    if args.before:
        write_json(args.before, record)
    else:
        import json

        before = json.loads(BEFORE.read_text())
        record["before"] = dict(commit=before["commit"], variants=before["variants"])
        record["before_after"] = compared(record, before)
        write_json(args.out, record)
    print(summary(record))


if __name__ == "__main__":
    main()
