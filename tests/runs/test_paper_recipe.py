"""The design card's command, `papermill notebooks/04_real_data.ipynb out.ipynb -p backbone llama8b`,
resolves to the paper's recipe (LoRA, bfloat16 on a GPU) with no weight loaded, and notebook 04's
memory preflight stops a run that does not fit before any weight is loaded."""

import types

import pytest
import torch
from conftest import ROOT
from stand_ins import tiny_wordnet_runs

from amer_lib.core.backbones import BACKBONES, is_large_backbone
from amer_lib.experiments import real_data
from amer_lib.params import notebook_defaults, validate
from amer_lib.runs import preflight
from amer_lib.runs.memory import MemoryPreflightError

NOTEBOOK = ROOT / "notebooks" / "04_real_data.ipynb"


def resolved(**overrides):
    """Notebook 04's config as papermill's `-p NAME VALUE` gives it: the cell's defaults, overridden."""
    return validate("04_real_data", {**notebook_defaults(NOTEBOOK), **overrides})


def test_the_design_cards_command_trains_lora_in_bfloat16_on_a_gpu():
    on_gpu = resolved(backbone="llama8b", device="cuda")
    assert (on_gpu.finetune, on_gpu.mixed_precision) == ("lora", True)
    on_cpu = resolved(backbone="llama8b", device="cpu")
    assert (on_cpu.finetune, on_cpu.mixed_precision) == ("lora", False)  # bfloat16 autocast is the GPU's default
    auto = resolved(backbone="llama8b")  # device auto: the GPU when torch sees one
    assert auto.mixed_precision == torch.cuda.is_available()


def test_an_explicit_choice_overrides_the_recipe():
    full = resolved(backbone="llama8b", device="cuda", finetune="full")
    assert full.finetune == "full" and full.mixed_precision is True
    assert resolved(backbone="llama8b", device="cuda", mixed_precision=False).mixed_precision is False
    assert resolved(backbone="minilm", finetune="lora").finetune == "lora"


def test_auto_resolves_again_for_the_machine_a_run_is_for_and_an_explicit_value_is_kept(monkeypatch):
    """`RealConfig.on_machine`, what the preflight without weights projects: here a machine
    without a GPU."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    here = resolved(backbone="llama8b")
    assert (here.finetune, here.mixed_precision) == ("lora", False)  # what runs here, and its runs' key
    on_gpu = here.on_machine(gpu=True)
    assert (on_gpu.finetune, on_gpu.mixed_precision) == ("lora", True) and here.on_machine(gpu=False) is here
    asked = resolved(backbone="llama8b", finetune="full", mixed_precision=False)
    assert asked.on_machine(gpu=True) is asked  # both given: kept wherever it runs
    assert resolved(backbone="llama8b", mixed_precision=False).on_machine(gpu=True).mixed_precision is False
    small = resolved().on_machine(gpu=True)  # MiniLM: full fine-tuning in float32 on any machine
    assert (small.finetune, small.mixed_precision) == ("full", False)


def test_the_paper_decoders_are_large_and_the_offline_backbones_are_not():
    assert [name for name in BACKBONES if is_large_backbone(name)] == ["llama1b", "llama3b", "llama8b", "qwen4b"]
    default = resolved()  # notebook 04's offline default: MiniLM fully fine-tuned in float32, as before
    assert (default.finetune, default.mixed_precision) == ("full", False)
    assert default.as_dict()["finetune"] == "full"  # the runs' key holds what runs, not "auto"


def test_a_run_that_does_not_fit_the_gpu_stops_before_any_weight_is_loaded(tmp_path, monkeypatch):
    """A tiny benchmark whose run cannot fit a GPU of 1 MiB: run_all stops in the preflight, naming
    the settings to change, and no encoder is ever built."""
    params = tiny_wordnet_runs(tmp_path)
    built = []
    monkeypatch.setattr(real_data, "new_query_encoder", lambda *args: built.append(args))
    for module in (real_data, preflight):  # the run and its preflight see a GPU
        monkeypatch.setattr(module, "resolve_device", lambda name: torch.device("cuda"))
    tiny_gpu = types.SimpleNamespace(total_memory=2**20, name="a 1 MiB GPU")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: tiny_gpu)
    with pytest.raises(MemoryPreflightError, match="a 1 MiB GPU has 0.0 GiB"):
        real_data.run_all(params, progress=False)
    assert built == []


def test_the_preflight_prints_its_projection_on_the_cpu(tmp_path, capsys):
    params = tiny_wordnet_runs(tmp_path)
    from amer_lib.data.benchmark import Benchmark

    plan = preflight.memory_preflight(params, Benchmark(params.prepared_dir), "wordnet_kinds")
    out = capsys.readouterr().out
    assert out.startswith("memory preflight, wordnet_kinds:\n  peak on the CPU ")  # device cpu: the CPU's run
    assert f"peak on the CPU {plan.cpu_peak / 2**30:.1f} GiB" in out and "GPU peak" not in out
    assert plan.weights == 4 * sum(p.numel() for p in _minilm().parameters())  # float32, full fine-tuning


def _minilm():
    from amer_lib.core.backbones import load_backbone

    return load_backbone("minilm")
