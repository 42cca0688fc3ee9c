"""A trained AMER query encoder as a folder that stands alone, the way Hugging Face models are
shared: `save_pretrained(model, folder, ...)` and `from_pretrained(folder)`.

    <folder>/amer.json                 what builds the model again: the backbone (a registry name
                                       or a local folder) and its overrides, the fine-tuning mode,
                                       the embedding size, n, the stop head's threshold and most
                                       vectors, the prompt template (`data.prompts.PromptTemplate`),
                                       the document encoder it was trained against, the search
                                       depth of its evaluation, its run's training recipe and the
                                       facts given (training data, results), and the sha256 of
                                       each weight file, checked before they are loaded
    <folder>/projections.safetensors   the input / output projections (and the stop head)
    <folder>/backbone.safetensors      full fine-tuning: every backbone weight
    <folder>/adapter/                  LoRA: the adapters in peft's own format (adapter_config.json,
                                       adapter_model.safetensors); the frozen base is the backbone's
    <folder>/README.md                 a model card

The folder is written beside its destination and moved into place at the end, so an interrupted
save leaves no half folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import yaml
from safetensors.torch import load_file, save_file

from amer_lib.core.backbones import PrefixLMBert, frozen_weights_dtype, get_backbone, load_backbone, require_weights
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.io import atomic_folder, file_sha256

FORMAT = 1
CONFIG = "amer.json"
# the weight files of each fine-tuning mode
WEIGHTS = {
    "full": ("projections.safetensors", "backbone.safetensors"),
    "lora": ("projections.safetensors", "adapter/adapter_config.json", "adapter/adapter_model.safetensors"),
}


def save_pretrained(
    model: AMERQueryEncoder,
    folder: str | Path,
    *,
    backbone: str,
    n_queries: int,
    document_encoder: str | None = None,
    prompt: dict | None = None,
    search_depth: int | None = None,
    stop: dict | None = None,
    backbone_overrides: dict | None = None,
    recipe: dict | None = None,
    facts: dict | None = None,
) -> Path:
    """Write `model` as a folder `from_pretrained` reads back. `backbone`: the registry name or
    local folder it was built from (with `backbone_overrides`, for a randomly initialised one);
    `n_queries`: the vectors it generates per question; `document_encoder`, `prompt` (a
    `PromptTemplate`'s JSON) and `search_depth`: the encoder whose embeddings it was trained
    against, how its questions were put to it and how deep each vector's list was searched in
    its evaluation (all None for the synthetic task); `stop`: the stop head's `threshold` and the
    most vectors it may ask for, `max_n` (required with a stop head, None without);
    `recipe`: the training parameters of its run; `facts`: what the model card and `amer.json`
    record besides (training data, steps, seed, results)."""
    folder = Path(folder)
    if (stop is None) != (model.stop_head is None):
        raise ValueError("give stop = {'threshold': ..., 'max_n': ...} for a model with a stop head, and only for one")
    lora = _peft_model(model) is not None
    config = {
        "format": FORMAT,
        "backbone": backbone,
        "backbone_overrides": backbone_overrides or None,
        "finetune": "lora" if lora else "full",
        # generated as trained: bfloat16 autocast (and bfloat16 frozen weights under LoRA)
        "mixed_precision": bool(model.mixed_precision),
        "embedding_dim": model.embedding_dim,
        "hidden_size": model.backbone.config.hidden_size,
        "n_queries": n_queries,
        "stop": stop,
        "document_encoder": document_encoder,
        "prompt": prompt,
        "search_depth": search_depth,
        "recipe": recipe or {},
        "facts": facts or {},
    }
    with atomic_folder(folder) as staging:
        save_file(_tensors(model, exclude="backbone."), staging / "projections.safetensors")
        if lora:
            _peft_model(model).save_pretrained(staging / "adapter")
        else:
            save_file(_tensors(model.backbone), staging / "backbone.safetensors")
        config["sha256"] = {name: file_sha256(staging / name) for name in WEIGHTS[config["finetune"]]}
        (staging / CONFIG).write_text(json.dumps(config, indent=1) + "\n")
        (staging / "README.md").write_text(model_card(config))
    return folder


def from_pretrained(folder: str | Path, device: str | torch.device = "cpu") -> AMERQueryEncoder:
    """The query encoder saved in `folder`, in eval mode on `device`, in the precision it was
    trained in (a mixed-precision LoRA model: bfloat16 frozen weights, generation under bfloat16
    autocast); the backbone's pretrained weights must be on this machine (else the error says what
    to fetch)."""
    config = read_config(folder)
    folder = Path(folder)
    missing = [name for name in WEIGHTS[config["finetune"]] if not (folder / name).exists()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {', '.join(missing)}: the folder is incomplete; export the run again")
    for name, sha256 in config.get("sha256", {}).items():  # folders written before it was recorded: unchecked
        if (now := file_sha256(folder / name)) != sha256:
            raise ValueError(
                f"{folder / name} is damaged (its sha256 is {now[:12]}, {sha256[:12]} when written): "
                "export the run again, or download the folder again"
            )
    require_weights(config["backbone"])
    mixed = config.get("mixed_precision", False)  # folders written before it was recorded: float32
    dtype = frozen_weights_dtype(config["finetune"], mixed)
    backbone = load_backbone(config["backbone"], dtype=dtype, config_overrides=config["backbone_overrides"])
    if backbone.config.hidden_size != config["hidden_size"]:
        raise ValueError(
            f"{folder} was trained on a backbone of hidden size {config['hidden_size']}, but "
            f"{config['backbone']!r} here has {backbone.config.hidden_size}"
        )
    if config["finetune"] == "lora":
        backbone = _with_adapters(backbone, folder / "adapter")
    else:
        backbone.load_state_dict(load_file(folder / "backbone.safetensors"))
    model = AMERQueryEncoder(backbone, config["embedding_dim"], stop_head=config["stop"] is not None)
    model.mixed_precision = mixed
    missing, unexpected = model.load_state_dict(load_file(folder / "projections.safetensors"), strict=False)
    absent = [name for name in missing if not name.startswith("backbone.")]
    if absent or unexpected:
        raise ValueError(
            f"{folder / 'projections.safetensors'} does not fit: missing {absent}, unexpected {unexpected}"
        )
    return model.to(device).eval()


def read_config(folder: str | Path) -> dict:
    """A saved model's `amer.json`, checked for the format this library reads."""
    path = Path(folder) / CONFIG
    if not Path(folder).is_dir():
        raise FileNotFoundError(
            f"model folder {folder} does not exist; make one from a trained run with `python -m amer_lib.export`"
        )
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: {folder} is not a model folder written by save_pretrained")
    config = json.loads(path.read_text())
    if config.get("format") != FORMAT:
        raise ValueError(f"{path} has format {config.get('format')!r}; this library reads format {FORMAT}")
    return config


def card_metadata(config: dict) -> dict:
    """The model card's YAML header, as the Hugging Face Hub reads it (library, base model, tags,
    datasets, metrics)."""
    spec = get_backbone(config["backbone"])
    metadata = {
        "library_name": "amer_lib",
        "pipeline_tag": "feature-extraction",
        "tags": ["amer", "multi-vector-retrieval", "dense-retrieval", f"finetune-{config['finetune']}"],
    }
    if base := spec.model_id or (spec.packaged and spec.packaged.upstream):
        metadata["base_model"] = base
    if datasets := config["recipe"].get("datasets"):
        metadata["datasets"] = list(datasets)
    measured = [key for key in config["facts"] if key.startswith("test ")]
    if measured:
        metadata["metrics"] = sorted({key.split()[1].split("@")[0].lower() for key in measured})
    return metadata


def model_card(config: dict) -> str:
    """The folder's README: its YAML header (`card_metadata`), what the model is, what it was
    trained against, and the facts given."""
    header = yaml.safe_dump(card_metadata(config), sort_keys=False).rstrip()
    lines = [
        "---",
        header,
        "---",
        "",
        "# AMER query encoder",
        "",
        "An Autoregressive Multi-Embedding Retriever's query encoder (amer_lib): for one question it",
        f"generates {config['n_queries']} query vectors one after another, each searched in the index",
        "and the lists merged round-robin.",
        "",
        f"- backbone: `{config['backbone']}`"
        + (f" (resized: {config['backbone_overrides']})" if config["backbone_overrides"] else ""),
        f"- fine-tuning: {config['finetune']}",
        f"- embedding size: {config['embedding_dim']} (the document encoder's)",
        f"- document encoder: `{config['document_encoder']}`"
        if config["document_encoder"]
        else "- document encoder: none (the synthetic task's vectors)",
        f"- stop head: yes, up to {config['stop']['max_n']} vectors, stopping past {config['stop']['threshold']}"
        if config["stop"]
        else "- stop head: no",
    ]
    if config["prompt"]:
        prompt = config["prompt"]
        lines.append(
            f"- prompt: {'the instruction, then the question' if prompt['instruction'] else 'the question alone'}"
            f"{', in the chat template' if prompt['chat_template'] else ''} (source: {prompt['source']})"
        )
        lines += [
            "",
            "Search a corpus encoded by the same document encoder (a prepared benchmark's folder):",
            "",
            "    from amer_lib.retriever import AMERRetriever",
            "    retriever = AMERRetriever.from_pretrained(FOLDER, index=PREPARED_DIR)",
            '    results = retriever.search(["who wrote the iliad?"], k=100)',
        ]
    else:
        lines += ["", "    from amer_lib.runs.saved import from_pretrained", "    model = from_pretrained(FOLDER)"]
    for title, record in (("Recorded with it", config["facts"]), ("Training recipe", config["recipe"])):
        if record:
            lines += ["", f"## {title}", ""] + [f"- {key}: {json.dumps(value)}" for key, value in record.items()]
    return "\n".join(lines) + "\n"


def _tensors(module: torch.nn.Module, exclude: str | None = None) -> dict[str, torch.Tensor]:
    """Every weight of `module` (none under `exclude`), each its own contiguous copy in CPU memory
    (safetensors stores no shared storage)."""
    return {
        name: tensor.detach().cpu().contiguous().clone()
        for name, tensor in module.state_dict().items()
        if exclude is None or not name.startswith(exclude)
    }


def _peft_model(model: AMERQueryEncoder):
    """The peft wrapper of a LoRA backbone, else None."""
    from peft import PeftModel

    inner = model.backbone.bert if isinstance(model.backbone, PrefixLMBert) else model.backbone
    return inner if isinstance(inner, PeftModel) else None


def _with_adapters(backbone: torch.nn.Module, adapter: Path) -> torch.nn.Module:
    from peft import PeftModel

    if isinstance(backbone, PrefixLMBert):
        backbone.bert = PeftModel.from_pretrained(backbone.bert, adapter)
        return backbone
    return PeftModel.from_pretrained(backbone, adapter)
