"""The GPU's precision and memory-saving layouts, checked on the CPU: a LoRA model whose frozen
weights are bfloat16 validates and generates (issue: float32 projections met bfloat16 activations
outside autocast), and micro-batches and gradient checkpointing give the plain step's gradients."""

import pytest
import torch
from stand_ins import DIM, TRAIN_CONFIG, make_problem, with_terms

from amer_lib.core import checkpointing
from amer_lib.core.backbones import LoraSettings, add_lora, load_backbone
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainConfig, accumulate_gradients, draw_batch, micro_batches, train, validation_loss

TINY = dict(hidden_size=16, intermediate_size=32)


def lora_model(dtype: torch.dtype, seed: int = 0, dropout: float = 0.0) -> AMERQueryEncoder:
    """A tiny Llama with LoRA on its seven projections, its frozen weights in `dtype`."""
    backbone = load_backbone("tiny", seed=seed, dtype=dtype, config_overrides=TINY)
    torch.manual_seed(seed)
    backbone = add_lora(backbone, LoraSettings(r=4, dropout=dropout))
    model = AMERQueryEncoder(backbone, DIM)
    model.mixed_precision = dtype == torch.bfloat16
    return model


def test_a_bfloat16_lora_model_validates_and_generates_on_the_cpu():
    data, pool = make_problem()
    model = lora_model(torch.bfloat16)
    assert model.backbone.get_input_embeddings().weight.dtype == torch.bfloat16
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "mixed_precision": True}))
    loss = validation_loss(model, data, pool, config)  # today's code: BFloat16 != float in a matmul
    assert torch.isfinite(torch.tensor(loss))
    vectors = model.generate(model.prompt_from_vectors(data.inputs[:5]), 3)
    assert vectors.shape == (5, 3, DIM) and torch.isfinite(vectors.float()).all()
    model.mixed_precision = False  # outside autocast the casts where bfloat16 meets float32 still hold
    assert torch.isfinite(model.generate(model.prompt_from_vectors(data.inputs[:5]), 3).float()).all()


def test_a_bfloat16_run_trains_past_its_validation_and_keeps_its_best_weights(tmp_path):
    """The paper files' failure at step 500: the first validation after bfloat16 training steps."""
    data, pool = make_problem()
    config = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 8, "eval_every": 4, "mixed_precision": True}))
    result = train(lora_model(torch.bfloat16), data, data, pool, config, run_dir=tmp_path, progress=False)
    assert [h["step"] for h in result.history] == [4, 8] and (tmp_path / "best.pt").exists()


def gradients(model: AMERQueryEncoder, config: TrainConfig, p: float) -> dict[str, torch.Tensor]:
    """The gradients of one step of `config` on the tiny problem with scheduled-sampling rate `p`."""
    data, pool = make_problem()
    if config.memory.gradient_checkpointing:
        checkpointing.enable(model.backbone)
    model.train()
    batch = draw_batch(data, torch.arange(16), pool, config, p, torch.Generator().manual_seed(3))
    model.zero_grad(set_to_none=True)
    accumulate_gradients(model, data, batch, config)
    return {name: w.grad.clone() for name, w in model.named_parameters() if w.grad is not None}


LAYOUTS = [
    dict(micro_batch_size=5),
    dict(gradient_checkpointing=True),
    dict(micro_batch_size=4, gradient_checkpointing=True),
]


def assert_layout_keeps_the_gradients(make_model, layout: dict, p: float) -> None:
    """One step's gradients with `layout` equal the plain step's, in float64 (so that only the
    order of sums differs), both models made by `make_model`."""
    torch.set_default_dtype(torch.float64)
    try:
        plain = gradients(make_model(), TrainConfig(**with_terms(TRAIN_CONFIG)), p)
        changed = gradients(make_model(), TrainConfig(**with_terms({**TRAIN_CONFIG, **layout})), p)
    finally:
        torch.set_default_dtype(torch.float32)
    assert plain.keys() == changed.keys() and len(plain) > 10
    for name in plain:
        torch.testing.assert_close(changed[name], plain[name], rtol=1e-9, atol=1e-12, msg=name)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])  # teacher-forced pass, mixed, every input predicted (KV cache)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_micro_batches_and_checkpointing_give_the_plain_steps_gradients(p, layout):
    """Without micro-batches LoRA's dropout is on, so that checkpointing's recomputation must
    replay the same dropout masks (micro-batches draw other masks: equal in distribution only),
    and under p > 0 the KV cache."""
    dropout = 0.0 if layout.get("micro_batch_size") else 0.1
    assert_layout_keeps_the_gradients(lambda: lora_model(torch.float64, dropout=dropout), layout, p)


def test_checkpointing_a_prefix_lm_bert_gives_its_plain_gradients():
    """MiniLM run as a prefix LM (the offline backbone): its BERT layers recomputed, the KV cache
    of every input predicted replayed, dropout on (train mode)."""

    def minilm():
        torch.manual_seed(0)
        return AMERQueryEncoder(load_backbone("minilm"), DIM).double()

    assert_layout_keeps_the_gradients(minilm, {"gradient_checkpointing": True}, 1.0)


def test_checkpointing_keeps_the_kv_cache_that_hugging_face_would_drop():
    """Every input predicted (p = 1) decodes with a KV cache; a layer recomputed without it would
    give other gradients. Hugging Face's own checkpointing, for contrast, does drop it."""
    torch.set_default_dtype(torch.float64)
    try:
        config = TrainConfig(**with_terms(TRAIN_CONFIG))
        plain = gradients(lora_model(torch.float64), config, 1.0)
        hugging_face = lora_model(torch.float64)
        hugging_face.backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        dropped = gradients(hugging_face, config, 1.0)
    finally:
        torch.set_default_dtype(torch.float32)
    assert any(not torch.allclose(dropped[name], plain[name]) for name in plain)


def test_checkpointing_finds_the_layer_in_either_partial_transformers_makes():
    """transformers 5.24 hands the checkpoint `partial(forward, layer, ...)`, earlier 5.x releases
    `partial(layer.__call__, ...)`: the layer (and so its cache index) is found either way."""
    from functools import partial

    layer = torch.nn.Linear(2, 2)
    assert checkpointing._layer_of(partial(torch.nn.Linear.forward, layer, input=None)) is layer
    assert checkpointing._layer_of(partial(layer.__call__, input=None)) is layer


def test_micro_batches_cover_the_share_in_order():
    assert micro_batches(slice(0, 10), 0) == [slice(0, 10)]
    assert micro_batches(slice(0, 10), 16) == [slice(0, 10)]
    assert micro_batches(slice(4, 14), 4) == [slice(4, 8), slice(8, 12), slice(12, 14)]
    with pytest.raises(ValueError, match="micro_batch_size"):
        TrainConfig(**with_terms({**TRAIN_CONFIG, "micro_batch_size": -1}))


def test_a_run_resumes_with_another_memory_layout(tmp_path):
    """Micro-batches and checkpointing say how a step fits in memory: a run stopped for memory
    resumes with smaller micro-batches (the other fields must match, as before)."""
    data, pool = make_problem()
    first = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 8, "checkpoint_every": 4}))
    train(lora_model(torch.float32), data, data, pool, first, run_dir=tmp_path, progress=False)
    again = TrainConfig(**with_terms({**TRAIN_CONFIG, "steps": 8, "checkpoint_every": 4, "micro_batch_size": 4}))
    result = train(lora_model(torch.float32, seed=3), data, data, pool, again, run_dir=tmp_path, progress=False)
    assert [h["step"] for h in result.history] == [4, 8]
