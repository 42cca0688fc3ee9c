"""Issue 69's fewer operations a step, same numbers: peft's adapters take autocast's bfloat16 activations
without a float32 round trip, and the decode loop makes once what every position shares. Each cut is
checked against the unchanged path (peft's own input casts, `AMERQueryEncoder.peft_input_casts`; the
recomputing decode) as the independent answer, and the counts against hand-made expectations."""

import sys
from pathlib import Path

import pytest
import torch
from stand_ins import DIM, TRAIN_CONFIG, make_problem, with_terms

from amer_lib.core import checkpointing
from amer_lib.core.backbones import LoraSettings, adapter_layers, add_lora, load_backbone
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainConfig, accumulate_gradients, draw_batch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

TINY = dict(hidden_size=16, intermediate_size=32)


def lora_model(dropout: float, peft_casts: bool, checkpointed: bool = False) -> AMERQueryEncoder:
    """A tiny Llama, bfloat16 frozen weights, LoRA r = 4 on the seven projections with `dropout`, its
    adapters' B matrices drawn (they start at zero, which would leave the adapters' inputs out of the
    gradients), under bfloat16 autocast."""
    backbone = load_backbone("tiny", seed=0, dtype=torch.bfloat16, config_overrides=TINY)
    torch.manual_seed(0)
    backbone = add_lora(backbone, LoraSettings(r=4, dropout=dropout))
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, weight in backbone.named_parameters():
            if "lora_B" in name:
                weight.copy_(0.5 * torch.randn(weight.shape, generator=generator))
    model = AMERQueryEncoder(backbone, DIM)
    model.mixed_precision, model.peft_input_casts = True, peft_casts
    if checkpointed:
        checkpointing.enable(model.backbone)
    return model.train()


def step(model: AMERQueryEncoder, checkpointed: bool = False) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One mixed-precision step's loss and gradients on the tiny problem, scheduled sampling at p = 0.5
    (the decode path, some gold vectors fed), dropout's masks drawn from seed 5."""
    data, pool = make_problem()
    config = TrainConfig(
        **with_terms({**TRAIN_CONFIG, "mixed_precision": True, "gradient_checkpointing": checkpointed})
    )
    batch = draw_batch(data, torch.arange(16), pool, config, 0.5, torch.Generator().manual_seed(3))
    assert batch.sample_mask.any() and not batch.sample_mask.all()
    torch.manual_seed(5)
    loss = accumulate_gradients(model, data, batch, config)
    return loss, {name: w.grad.clone() for name, w in model.named_parameters() if w.grad is not None}


@pytest.mark.parametrize("checkpointed", [False, True])
def test_without_dropout_the_adapters_uncast_input_gives_the_same_step_to_the_bit(checkpointed):
    """bfloat16 -> float32 -> bfloat16 is the identity, forward and backward: without dropout nothing else
    changes, so the loss and every gradient are bitwise those of peft's own casts."""
    loss, grads = step(lora_model(0.0, peft_casts=False, checkpointed=checkpointed), checkpointed)
    peft_loss, peft_grads = step(lora_model(0.0, peft_casts=True, checkpointed=checkpointed), checkpointed)
    assert grads.keys() == peft_grads.keys() and sum("lora_A" in name for name in grads) == 14
    assert torch.equal(loss, peft_loss)
    for name in grads:
        assert torch.equal(grads[name], peft_grads[name]), name


class CpuBfloat16Dropout(torch.nn.Module):
    """peft's float32 dropout rounded as the CPU's bfloat16 dropout rounds: a kept input times 1 / 0.9 in
    bfloat16 (1.109375), the product rounded to bfloat16 (exact in float32 first: both factors have 8
    significant bits)."""

    def __init__(self, dropout: torch.nn.Dropout):
        super().__init__()
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = self.dropout(x) != 0
        scale = torch.tensor(1 / (1 - self.dropout.p)).bfloat16().float()
        return torch.where(kept, x * scale, 0.0).bfloat16().to(x.dtype)


@pytest.mark.parametrize("checkpointed", [False, True])
def test_with_the_papers_dropout_the_only_change_is_the_cpus_bfloat16_dropout_scale(checkpointed):
    """Dropout 0.1 on the same seed draws the same masks on either path. Without peft's cast the CPU scales
    the kept bfloat16 inputs by 1 / 0.9 rounded to bfloat16 (0.16% less); a GPU's fused dropout scales in
    float32, as peft's path did. With that rounding put into peft's path, the loss is the cast-free one to
    the bit and the gradients are within bfloat16's tolerance (their sums over an input's users may add in
    another order); without it the loss stays within bfloat16's tolerance, while the gradients of this tiny
    stand-in (hidden size 16, scheduled sampling, matched targets) move by more, from that 0.16% alone."""
    loss, grads = step(lora_model(0.1, peft_casts=False, checkpointed=checkpointed), checkpointed)
    rounded = lora_model(0.1, peft_casts=True, checkpointed=checkpointed)
    for layer in adapter_layers(rounded.backbone):
        layer.lora_dropout["default"] = CpuBfloat16Dropout(layer.lora_dropout["default"])
    rounded_loss, rounded_grads = step(rounded, checkpointed)
    assert torch.equal(loss, rounded_loss)
    for name in grads:
        scale = float(rounded_grads[name].abs().max())
        torch.testing.assert_close(grads[name], rounded_grads[name], rtol=1.6e-2, atol=1.6e-2 * scale, msg=name)
    peft_loss, _ = step(lora_model(0.1, peft_casts=True, checkpointed=checkpointed), checkpointed)
    undropped_loss, _ = step(lora_model(0.0, peft_casts=True, checkpointed=checkpointed), checkpointed)
    torch.testing.assert_close(loss, peft_loss, rtol=1.6e-2, atol=0)
    assert (loss - peft_loss).abs() < 0.25 * (undropped_loss - peft_loss).abs()  # dropout itself moves it more


def test_one_adapter_with_dropout_is_peft_casts_within_bfloat16():
    """One adapted projection, its bfloat16 input and float32 adapters under autocast, dropout 0.1 on the
    same seed: output and gradients (input, A, B) within bfloat16's tolerance of peft's own casts."""
    results = []
    for peft_casts in (True, False):
        model = lora_model(0.1, peft_casts)
        layer = model.backbone.base_model.model.layers[0].mlp.down_proj
        x = torch.randn(6, 5, 32, generator=torch.Generator().manual_seed(2)).bfloat16().requires_grad_()
        torch.manual_seed(7)
        with torch.autocast("cpu", dtype=torch.bfloat16), model._adapter_casts():
            out = layer(x)
        out.float().square().sum().backward()
        adapters = [layer.lora_A["default"].weight.grad, layer.lora_B["default"].weight.grad]
        results.append([out.detach().float(), x.grad.float(), *adapters])
    for peft, cast_free in zip(*results):
        torch.testing.assert_close(cast_free, peft, rtol=1.6e-2, atol=1.6e-2 * float(peft.abs().max()))


def test_checkpointing_recomputes_the_adapters_as_their_forward_ran():
    """The recomputation runs after the encoder's pass has returned and put peft's casts back: it must take
    the forward's setting (else its saved tensors differ in dtype). Same seed, dropout included: the
    checkpointed step is the plain one."""
    loss, grads = step(lora_model(0.1, peft_casts=False))
    checkpointed_loss, checkpointed = step(lora_model(0.1, peft_casts=False, checkpointed=True), True)
    torch.testing.assert_close(checkpointed_loss, loss, rtol=1e-6, atol=0)
    for name in grads:
        torch.testing.assert_close(checkpointed[name], grads[name], rtol=1e-5, atol=1e-7, msg=name)


def test_a_pass_leaves_peft_casting_as_it_found_it():
    """Outside the encoder's passes the adapters cast as peft does (a bfloat16 model without autocast
    needs it: float32 adapter weights cannot multiply bfloat16 activations)."""
    model = lora_model(0.1, peft_casts=False)
    step(model)
    assert len(adapter_layers(model.backbone)) == 14
    assert all(layer.cast_input_dtype_enabled for layer in adapter_layers(model.backbone))
    model.mixed_precision = False
    assert torch.isfinite(model.generate(model.prompt_from_vectors(torch.randn(3, DIM)), 3).float()).all()


def test_the_decode_loop_on_left_padded_prompts_is_the_recomputing_pass():
    """The mask, positions and cast gold vectors made once before the loop: on a left-padded batch with
    some positions fed their own output and some the gold vector, the cached step-by-step pass equals
    recomputing the whole prefix at every step (a separate path, no cache, no slicing)."""
    torch.manual_seed(0)
    model = AMERQueryEncoder(load_backbone("tiny", config_overrides=dict(hidden_size=32, intermediate_size=64)), 12)
    ids = torch.randint(1, 200, (3, 5))
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]])
    prompt = model.prompt_from_tokens(ids * mask, mask)
    teacher = torch.randn(3, 3, 12)
    sample_mask = torch.tensor([[True, False, True], [False, True, True], [True, True, False]])
    with torch.no_grad():
        cached = model(prompt, 4, teacher, sample_mask)
        recomputed = model._decode(prompt, 4, teacher, sample_mask, use_cache=False)
    torch.testing.assert_close(cached, recomputed, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_the_counter_finds_peft_casts_and_the_decode_loops_copies_gone():
    """benchmarks/bench_step_ops.py on the paper step's stand-ins, against hand-made expectations: peft's casts
    were a copy each way forward and backward at each of the seven adapters, 28 per layer and decoded
    position; the CPU's dropout is bernoulli_, div_ and mul forward and mul backward, 7 of each but mul;
    without them the per-layer count drops by exactly 28, and the decode loop and projections copy nothing
    per position."""
    import bench_step_ops

    before, after = bench_step_ops.variant("lora_peft_casts"), bench_step_ops.variant("lora")
    ops = lambda found, key: found["by_cause_and_op"].get(key, {}).get("d", 0.0)
    assert ops(before, "float32 casts around the adapters | aten::_to_copy") == 28
    assert ops(after, "float32 casts around the adapters | aten::_to_copy") == 0
    for found in (before, after):
        assert [ops(found, f"lora dropout | aten::{op}") for op in ("bernoulli_", "div_", "mul")] == [7, 7, 14]
        assert ops(found, "lora adapters | aten::mm") == 42  # two products forward, four backward, per adapter
    assert before["per_layer_per_position"] - after["per_layer_per_position"] == 28
    per_position = lambda found, part: found["by_cause_and_op"].get(f"rest: {part} | aten::_to_copy", {}).get("c", 0)
    assert per_position(after, "decode loop") == 0 and per_position(after, "projections") == 0
    total = sum(row["per_position_at_32"] for row in after["by_cause"].values())
    assert total == after["per_position_per_micro_batch_at_32"]
