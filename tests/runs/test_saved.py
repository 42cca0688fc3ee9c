"""A model folder written by save_pretrained generates, once read back by from_pretrained, the
vectors the saved model generates: full fine-tuning of a resized random backbone, LoRA on
MiniLM (peft's own adapter files), and the stop head; a folder that is not one says so."""

import json
import os
import stat

import pytest
import torch
import yaml

from amer_lib.core.backbones import LoraSettings, add_lora, get_backbone, load_backbone
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.runs.saved import from_pretrained, read_config, save_pretrained

TINY = {"hidden_size": 32, "intermediate_size": 64}


def perturbed(model: AMERQueryEncoder) -> AMERQueryEncoder:
    """Every trainable weight moved away from its initial value, as training would."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    return model.eval()


def generated(model: AMERQueryEncoder, n: int = 3) -> torch.Tensor:
    inputs = torch.randn(4, model.embedding_dim, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return model.generate(model.prompt_from_vectors(inputs), n)


def test_a_fully_fine_tuned_model_comes_back_with_the_same_generations_and_a_card(tmp_path):
    model = perturbed(AMERQueryEncoder(load_backbone("tiny", seed=3, config_overrides=TINY), 12, stop_head=True))
    umask = os.umask(0o022)  # a shared machine's usual mask: a colleague reads the model
    try:
        folder = save_pretrained(
            model,
            tmp_path / "model",
            backbone="tiny",
            n_queries=3,
            stop={"threshold": 0.5, "max_n": 6},
            backbone_overrides=TINY,
            facts={"seed": 3, "test MRecall@10 (%)": 50.0},
        )
    finally:
        os.umask(umask)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {
        name: 0o644 for name in ("README.md", "amer.json", "backbone.safetensors", "projections.safetensors")
    }  # safetensors writes 0o600 by itself
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "amer.json",
        "backbone.safetensors",
        "projections.safetensors",
    ]
    loaded = from_pretrained(folder)
    assert torch.equal(generated(loaded), generated(model))
    assert torch.equal(loaded.stop_head.weight, model.stop_head.weight)
    config = read_config(folder)
    assert config["finetune"] == "full" and config["n_queries"] == 3 and config["document_encoder"] is None
    assert config["stop"] == {"threshold": 0.5, "max_n": 6} and config["prompt"] is None
    card = (folder / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])  # the Hub's model-card metadata
    assert header["library_name"] == "amer_lib" and "base_model" not in header  # a random backbone has none
    assert header["metrics"] == ["mrecall"] and "multi-vector-retrieval" in header["tags"]
    assert (
        "generates 3 query vectors" in (folder / "README.md").read_text()
        and "- seed: 3" in (folder / "README.md").read_text()
    )
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_lora_adapters_are_saved_in_peft_format_and_loaded_over_the_frozen_backbone(tmp_path):
    backbone = add_lora(load_backbone("minilm"), get_backbone("minilm").lora)
    model = perturbed(AMERQueryEncoder(backbone, 384))
    folder = save_pretrained(model, tmp_path / "lora", backbone="minilm", n_queries=5, document_encoder="minilm")
    assert (folder / "adapter" / "adapter_config.json").exists() and not (folder / "backbone.safetensors").exists()
    assert (folder / "adapter" / "adapter_model.safetensors").stat().st_size < 20_000_000  # adapters, not MiniLM
    assert torch.allclose(generated(from_pretrained(folder)), generated(model), atol=1e-6)
    header = yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])
    assert header["base_model"] == "sentence-transformers/all-MiniLM-L6-v2" and "finetune-lora" in header["tags"]


def test_a_mixed_precision_lora_model_comes_back_in_bfloat16_and_generates_as_before(tmp_path):
    """A paper run's export (LoRA on bfloat16 frozen weights, trained under autocast) is searched
    as it was evaluated, not in float32."""
    torch.manual_seed(0)
    # seed 0: a random backbone under LoRA is rebuilt from its config, as load_backbone seeds it
    backbone = add_lora(load_backbone("tiny", dtype=torch.bfloat16, config_overrides=TINY), LoraSettings(r=4))
    model = perturbed(AMERQueryEncoder(backbone, 12))
    model.mixed_precision = True
    folder = save_pretrained(model, tmp_path / "bf16", backbone="tiny", n_queries=3, backbone_overrides=TINY)
    loaded = from_pretrained(folder)
    assert read_config(folder)["mixed_precision"] is True and loaded.mixed_precision
    assert loaded.backbone.get_input_embeddings().weight.dtype == torch.bfloat16
    assert torch.equal(generated(loaded), generated(model))


def test_a_folder_that_is_not_a_saved_model_or_does_not_fit_says_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="amer.json is missing: .* not a model folder"):
        from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"model folder \S*typo does not exist; make one .* amer_lib.export"):
        from_pretrained(tmp_path / "typo")
    model = AMERQueryEncoder(load_backbone("tiny", config_overrides=TINY), 12)
    folder = save_pretrained(model, tmp_path / "m", backbone="tiny", n_queries=2, backbone_overrides=TINY)
    config = read_config(folder)
    (folder / "amer.json").write_text(json.dumps({**config, "backbone_overrides": {**TINY, "hidden_size": 16}}))
    with pytest.raises(ValueError, match="hidden size 32, but 'tiny' here has 16"):
        from_pretrained(folder)
    (folder / "amer.json").write_text(json.dumps({**config, "format": 99}))
    with pytest.raises(ValueError, match="format 99; this library reads format 1"):
        from_pretrained(folder)
    (folder / "amer.json").write_text(json.dumps(config))
    (folder / "backbone.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="lacks backbone.safetensors: the folder is incomplete"):
        from_pretrained(folder)


def test_a_model_with_a_stop_head_records_where_it_stops():
    model = AMERQueryEncoder(load_backbone("tiny", config_overrides=TINY), 12, stop_head=True)
    with pytest.raises(ValueError, match="give stop = "):
        save_pretrained(model, "never-written", backbone="tiny", n_queries=2, backbone_overrides=TINY)


@pytest.mark.parametrize("name", ["projections.safetensors", "backbone.safetensors"])
def test_a_weight_file_changed_since_it_was_written_is_refused_by_path(tmp_path, name):
    """safetensors reads a changed byte inside a tensor without a word; amer.json's sha256 does not."""
    model = AMERQueryEncoder(load_backbone("tiny", config_overrides=TINY), 12)
    folder = save_pretrained(model, tmp_path / "m", backbone="tiny", n_queries=2, backbone_overrides=TINY)
    assert set(read_config(folder)["sha256"]) == {"projections.safetensors", "backbone.safetensors"}
    data = bytearray((folder / name).read_bytes())
    data[-3] ^= 0xFF
    (folder / name).write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"{folder / name} is damaged \(its sha256 is \w+, \w+ when written\)"):
        from_pretrained(folder)
