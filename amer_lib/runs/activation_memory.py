"""What one decoder layer keeps for the backward pass of a training step, per token: the measured
constant of the memory preflight (`amer_lib.runs.memory`), written for every registry backbone to
`activation_memory.json` by `benchmarks/bench_activation_memory.py`.

The step measured is the one that trains: a micro-batch through `AMERQueryEncoder.forward` as
`train.batch_loss` runs it, on a randomly initialised stand-in of the backbone's real layer shape
in the run's precision. Its prompts are left-padded to the longest (every other one half as long)
and, on the decode path, the fed-back positions run one at a time against the KV cache with the
model's own outputs fed back through `input_projection(output_projection(h))` (scheduled sampling:
from the first hundred steps on, nearly every micro-batch samples somewhere, and then the whole
micro-batch decodes); the teacher-forced path runs the same sequence in one pass. Counted: the
bytes of the distinct storages autograd saves (parameters and autocast's weight copies left out),
and the KV cache, which gradient checkpointing keeps alive for its replay without saving it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import warnings
from functools import lru_cache
from pathlib import Path

import torch

from amer_lib.core import checkpointing
from amer_lib.core.backbones import BACKBONES, Description, LoraSettings, PrefixLMBert, add_lora, frozen_weights_dtype
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.io import write_json
from amer_lib.progress import AmerWarning

MEASURED = Path(__file__).with_name("activation_memory.json")  # written by benchmarks/bench_activation_memory.py
MODES = ("lora_bf16", "lora_fp32", "full_bf16", "full_fp32")  # fine-tuning mode x precision
PATHS = ("decode", "teacher")  # scheduled sampling step by step, or one teacher-forced pass
PROMPT_TOKENS = 65  # the authors' instruction (their code's; the paper states no prompt), chat template, a question
FED_BACK = 9  # AmbigQA's largest target set (10) less one: the most positions a paper step decodes
EMBEDDING_DIM = 1536  # the paper's target embeddings (inf-retriever-v1-1.5b)


def precision_mode(finetune: str, mixed_precision: bool) -> str:
    return f"{finetune}_{'bf16' if mixed_precision else 'fp32'}"


@lru_cache(maxsize=1)
def measured() -> dict:
    """The committed measurements (`activation_memory.json`)."""
    return json.loads(MEASURED.read_text())


_MEASURED_NOW: dict[str, dict[str, float]] = {}  # this process's measurements of shapes the file lacks


def per_token(backbone: Description, mode: str) -> dict[str, float]:
    """Bytes per token per layer, plain and checkpointed, that `backbone` keeps in `mode`: the
    committed measurement of a registry backbone of the same layer shape and LoRA settings, or
    measured now, once a machine (about three minutes a mode at 8B's width on one CPU thread:
    `benchmarks/bench_activation_memory.py` took 762 s for Llama-8B's four) and kept in
    `cache_folder()` for the next process, under a key that names the shape, the LoRA settings,
    the mode, the measured step's sizes, torch's, transformers' and peft's versions and this
    measurement's code."""
    shape = layer_shape(backbone.config)
    for name, entry in measured()["backbones"].items():
        if entry["shape"] == shape and BACKBONES[name].lora == backbone.lora and mode in entry["activations"]:
            return entry["activations"][mode]
    key = cache_key(shape, backbone.lora, mode)
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    if name not in _MEASURED_NOW:
        path = cache_folder() / "activation_memory" / f"{name}.json"
        _MEASURED_NOW[name] = _read_cached(path, key)
        if _MEASURED_NOW[name] is None:
            _MEASURED_NOW[name] = measure_layer_activations(
                backbone.config, mode, backbone.lora.targets, lora_rank=backbone.lora.r
            )
            try:
                write_json(path, {"key": key, "activations": _MEASURED_NOW[name]})
            except OSError as error:  # a read-only home: the run goes on, the next process measures again
                message = f"the activations measured are kept for this process only: {path} ({error})"
                warnings.warn(message, AmerWarning, stacklevel=2)
    return _MEASURED_NOW[name]


def cache_folder() -> Path:
    """Where measurements outlive their process: `$AMER_CACHE_DIR`, else `$XDG_CACHE_HOME/amer_lib`,
    else `~/.cache/amer_lib` (deleting it costs only the measurements again)."""
    if os.environ.get("AMER_CACHE_DIR"):
        return Path(os.environ["AMER_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "amer_lib"


# the code a measurement runs: a change to any of these measures again
PACKAGE = Path(__file__).resolve().parents[1]
MEASURED_BY = ("runs/activation_memory.py", "core/model.py", "core/checkpointing.py", "core/backbones.py")


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """The measuring code's hash, read once a process."""
    return hashlib.sha256(b"".join((PACKAGE / name).read_bytes() for name in MEASURED_BY)).hexdigest()


def cache_key(shape: dict, lora: LoraSettings, mode: str) -> dict:
    """Everything a measurement depends on besides the machine (on which it does not)."""
    import peft
    import transformers

    return {
        "shape": shape,
        "lora": {**dataclasses.asdict(lora), "targets": list(lora.targets)},
        "mode": mode,
        "step": {"prompt_tokens": PROMPT_TOKENS, "fed_back": FED_BACK, "embedding_dim": EMBEDDING_DIM},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
        "code": _code_digest(),
    }


def _read_cached(path: Path, key: dict) -> dict[str, float] | None:
    """The measurement kept at `path` for `key`, or None when there is none; one that cannot be
    read is said and measured again."""
    if not path.exists():
        return None
    try:
        kept = json.loads(path.read_text())
        if kept["key"] == key:
            return {kind: float(kept["activations"][kind]) for kind in ("plain", "checkpointed")}
        problem = "it was made under another key (a hash collision)"
    except (OSError, ValueError, KeyError, TypeError) as error:
        problem = f"{type(error).__name__}: {error}"
    message = f"measuring the activations again: the kept measurement {path} cannot be used ({problem})"
    warnings.warn(message, AmerWarning, stacklevel=3)
    return None


SHAPE_KEYS = (
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
)


def layer_shape(config: dict) -> dict:
    """What sizes one layer's activations (the measurement's key)."""
    return {key: config.get(key) for key in SHAPE_KEYS}


def measure_layer_activations(
    config: dict,
    mode: str,
    lora_targets: tuple[str, ...],
    path: str = "decode",
    prompt_tokens: int = PROMPT_TOKENS,
    fed_back: int = FED_BACK,
    lora_rank: int = 64,
) -> dict[str, float]:
    """Bytes per token that one decoder layer of this shape keeps for the backward pass of a
    training step on `path`, plain and under gradient checkpointing: a stand-in of two layers less
    one of one layer (the final norm and the projections drop out), trained on two and on four
    questions of `prompt_tokens` + `fed_back` positions (the per-question constants drop out), in
    `mode`'s precision (bfloat16 frozen weights with LoRA r = `lora_rank` under CPU bfloat16
    autocast, or float32 weights with or without autocast)."""
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}; valid: {', '.join(PATHS)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    finetune, precision = mode.split("_")
    tokens = prompt_tokens + fed_back
    per_layer = {"plain": 0.0, "checkpointed": 0.0}
    for layers, sign in ((2, 1), (1, -1)):
        encoder = _stand_in(config, layers, finetune, precision, lora_targets, lora_rank)
        for checkpointed in (False, True):
            if checkpointed:
                checkpointing.enable(encoder.backbone)
            kept = [_kept_bytes(encoder, questions, prompt_tokens, fed_back, path) for questions in (2, 4)]
            per_layer["checkpointed" if checkpointed else "plain"] += sign * (kept[1] - kept[0]) / (2 * tokens)
    return per_layer


def _stand_in(
    config: dict, layers: int, finetune: str, precision: str, lora_targets: tuple[str, ...], rank: int
) -> AMERQueryEncoder:
    """A randomly initialised query encoder on `config`'s shape with `layers` layers, as `mode`
    trains it (a BERT backbone run as the prefix LM the project makes of it)."""
    from transformers import AutoConfig, AutoModel

    per_layer = {  # lists of one value per layer (Qwen3's `layer_types`) cut to the stand-in's layers
        key: value[:layers]
        for key, value in config.items()
        if isinstance(value, list) and len(value) == config.get("num_hidden_layers")
    }
    shape = AutoConfig.for_model(**{**config, **per_layer, "num_hidden_layers": layers, "vocab_size": 16})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        backbone = AutoModel.from_config(shape).to(frozen_weights_dtype(finetune, precision == "bf16"))
        if shape.model_type == "bert":
            backbone = PrefixLMBert(backbone)
        if finetune == "lora":
            backbone = add_lora(backbone, LoraSettings(r=rank, targets=lora_targets))
            # the projections train, the backbone's own weights do not (peft freezes them)
        encoder = AMERQueryEncoder(backbone, EMBEDDING_DIM)
    encoder.mixed_precision = precision == "bf16"
    return encoder.train()


def _kept_bytes(encoder: AMERQueryEncoder, questions: int, prompt_tokens: int, fed_back: int, path: str) -> int:
    """Bytes that the training forward of `questions` left-padded prompts keeps until its backward
    pass: the distinct storages autograd saves, and the KV cache's."""
    weights = {p.untyped_storage().data_ptr() for p in encoder.parameters()}
    storages: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    caches = {}  # the decode path's KV cache, as the backbone is handed it

    def record_cache(module, args, kwargs):
        cache = kwargs.get(encoder.cache_keyword)
        if cache is not None:
            caches[id(cache)] = cache

    hook = encoder.backbone.register_forward_pre_hook(record_cache, with_kwargs=True)
    generator = torch.Generator().manual_seed(questions)
    ids = torch.randint(encoder.backbone.config.vocab_size, (questions, prompt_tokens), generator=generator)
    mask = torch.ones_like(ids)
    mask[1::2, : prompt_tokens // 2] = 0  # every other prompt half as long, padded on the left
    teacher = torch.randn(questions, fed_back, encoder.embedding_dim, generator=generator)
    sample = torch.full((questions, fed_back), path == "decode")  # where the model's own output is fed back
    try:
        with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor), encoder.autocast():
            outputs = encoder(encoder.prompt_from_tokens(ids, mask), fed_back + 1, teacher, sample)
    finally:
        hook.remove()
    for cache in caches.values():
        for layer in cache.layers:
            keep(layer.keys)
            keep(layer.values)
    outputs.float().sum().backward()
    return sum(storages.values())
