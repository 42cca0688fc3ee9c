"""The design card's command (`-p backbone llama8b`) without the weights: it stops at once with
the `hf download` to run, and with the memory preflight of what they will need, from the backbone's
published config and the data sizes of the benchmark (the offline one's drawn again, not prepared),
projected for the machine the run is for: on a machine without a GPU, the GPU's run (device auto),
unless the CPU is asked for."""

import re
import types

import huggingface_hub
import pytest
import torch
from conftest import ROOT, notebook_config

from amer_lib.core.backbones import BackboneUnavailableError
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.preparation import offline_sizes, prepare_wordnet
from amer_lib.experiments.real_data import ready_benchmark
from amer_lib.params import notebook_defaults, validate
from amer_lib.runs import memory, preflight
from amer_lib.runs.preflight import preflight_without_weights

DATASETS = ["wordnet_senses", "wordnet_kinds"]
LLAMA8B = 7_504_924_672  # Llama-3.1-8B's parameters without its LM head (tests/core/test_memory.py counts them)


def weights(bytes_per_parameter: int) -> str:
    """The preflight's words for Llama-3.1-8B's weights at this many bytes a parameter."""
    return f"weights {LLAMA8B * bytes_per_parameter / 2**30:.1f} GiB,"


@pytest.mark.parametrize("corpus_size", [120, 5])  # 5: fewer than the gold documents, which all stay
def test_offline_sizes_are_what_the_preparation_makes_without_writing_anything(tmp_path, corpus_size):
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=corpus_size)
    prepared = prepare_wordnet(tmp_path / "prepared", 6, 4, corpus_size, seed=0)
    train, corpus = offline_sizes(tmp_path / "not_yet", DATASETS, recipe)
    assert corpus == prepared.manifest["corpus_size"]
    for dataset in DATASETS:
        assert [q.qid for q in train[dataset]] == [q.qid for q in prepared.questions(dataset, "train")]
    assert not (tmp_path / "not_yet").exists()
    with pytest.raises(FileNotFoundError, match=r"prepare \['ambigqa'\] with notebooks/03_real_data_prep.ipynb"):
        offline_sizes(tmp_path / "not_yet", ["ambigqa"], recipe)


def expected_lines(benchmark: Benchmark, dataset: str, mixed_precision: bool, gpu: bool) -> list[str]:
    """The plan of notebook 04's defaults (LoRA, batch 32) for llama8b in `mixed_precision`, from
    the prepared benchmark's sizes and the paper's 65 prompt tokens, in the words of a GPU's run
    (`gpu`) or a CPU's: `memory.plan_for`, what the device script compares its GPU's peaks with."""
    questions = benchmark.questions(dataset, "train")
    corpus = benchmark.manifest["corpus_size"]
    work = memory.Workload(
        finetune="lora",
        mixed_precision=mixed_precision,
        batch_size=32,
        micro_batch_size=0,
        gradient_checkpointing=False,
        prompt_tokens=65,
        max_targets=max(len(q.targets) for q in questions),
        embedding_dim=384,  # MiniLM's targets
        negatives=corpus,
        training_questions=len(questions),
        corpus_size=corpus,
    )
    plan = memory.plan_for("llama8b", work)
    return [f"memory preflight, {dataset}:", *["  " + line for line in plan.lines(gpu)]]


def without_a_gpu(monkeypatch):
    """This machine as one without a GPU (as the CPU machines the tests run on), and the backbone's
    weights not on it."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)  # not cached


def design_card(**overrides):
    """Notebook 04's config as `papermill ... -p backbone llama8b` gives it ("auto" as given)."""
    defaults = notebook_defaults(ROOT / "notebooks" / "04_real_data.ipynb")
    return validate("04_real_data", {**defaults, "backbone": "llama8b", **overrides})


def test_missing_weights_stop_with_what_to_fetch_and_the_memory_they_will_need(tmp_path, monkeypatch):
    without_a_gpu(monkeypatch)
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=120)
    prepared = prepare_wordnet(tmp_path / "prepared", 6, 4, 120, seed=0)
    expected = [line for dataset in DATASETS for line in expected_lines(prepared, dataset, False, gpu=False)]
    for where in ("not_yet", "prepared"):  # the offline benchmark to prepare, then one prepared
        params = notebook_config(
            "04_real_data", backbone="llama8b", finetune="lora", device="cpu", prepared_dir=str(tmp_path / where)
        )
        with pytest.raises(BackboneUnavailableError) as stopped:
            ready_benchmark(params, recipe)
        fetch, preflight = str(stopped.value).split("\n\n")
        assert "`hf download meta-llama/Llama-3.1-8B-Instruct`" in fetch
        first, *lines = preflight.splitlines()
        assert first.startswith("The memory preflight of llama8b from its published config (prompts taken at the ")
        # device cpu asked for: the CPU's run, in its words (one memory, no GPU term)
        assert first.endswith("projected for the CPU (device cpu): finetune lora and mixed_precision false, as asked:")
        assert lines == expected and all("GPU peak" not in line for line in lines)
    assert not (tmp_path / "not_yet").exists()  # nothing prepared before the weights are here


def test_the_design_cards_command_on_a_machine_without_a_gpu_projects_the_gpus_run(tmp_path, monkeypatch):
    """The issue's case: `-p backbone llama8b` (device auto) here resolves to float32 (no GPU), but
    the weights are fetched for a GPU, where "auto" is LoRA in bfloat16: that run is projected."""
    without_a_gpu(monkeypatch)
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=120)
    prepared = prepare_wordnet(tmp_path / "prepared", 6, 4, 120, seed=0)
    params = design_card(prepared_dir=str(tmp_path / "prepared"))
    assert (params.finetune, params.mixed_precision) == ("lora", False)  # what would run here, as the run key holds
    with pytest.raises(BackboneUnavailableError) as stopped:
        ready_benchmark(params, recipe)
    first, *lines = str(stopped.value).split("\n\n")[1].splitlines()
    assert first.endswith(
        "projected for a GPU: finetune lora and mixed_precision true, as device auto resolves there; "
        "this machine has no GPU (-p device cpu projects the run on a CPU):"
    )
    assert lines == [line for dataset in DATASETS for line in expected_lines(prepared, dataset, True, gpu=True)]
    # bfloat16 frozen weights: 2 bytes a parameter, 14.0 GiB, not float32's 28.0
    assert (weights(2), weights(4)) == ("weights 14.0 GiB,", "weights 28.0 GiB,")
    assert all(lines[i].startswith("  GPU peak") and weights(2) in lines[i] for i in (1, 4))
    assert "28.0 GiB" not in "\n".join(lines)


def test_the_cpu_is_projected_when_asked_for_and_an_explicit_precision_is_honoured(tmp_path, monkeypatch):
    without_a_gpu(monkeypatch)
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=120)
    prepared = prepare_wordnet(tmp_path / "prepared", 6, 4, 120, seed=0)
    folder = str(tmp_path / "prepared")
    on_cpu = preflight_without_weights(design_card(device="cpu", prepared_dir=folder), recipe).splitlines()
    assert on_cpu[0].endswith(
        "projected for the CPU (device cpu): finetune lora and mixed_precision false, as auto resolves on a CPU:"
    )
    assert on_cpu[1:] == [line for d in DATASETS for line in expected_lines(prepared, d, False, gpu=False)]
    assert on_cpu[2].startswith("  peak on the CPU ") and weights(4) in on_cpu[2]  # float32
    float32 = preflight_without_weights(design_card(mixed_precision=False, prepared_dir=folder), recipe).splitlines()
    assert float32[0].endswith(
        "projected for a GPU: finetune lora, as device auto resolves there; mixed_precision false, as asked; "
        "this machine has no GPU (-p device cpu projects the run on a CPU):"
    )
    assert float32[1:] == [line for d in DATASETS for line in expected_lines(prepared, d, False, gpu=True)]
    assert float32[2].startswith("  GPU peak") and weights(4) in float32[2]


def test_the_docs_quote_the_design_cards_projection_at_the_offline_defaults(tmp_path, monkeypatch):
    """docs/paper_scale.md ("Memory of the paper files") quotes the design card's preflight on a
    machine without a GPU, at notebook 04's and 03's defaults (the offline benchmark drawn again)."""
    without_a_gpu(monkeypatch)
    params = design_card(prepared_dir=str(tmp_path / "not_yet"))
    text = preflight_without_weights(params, notebook_config("03_real_data_prep"))
    peak, weight = re.search(
        r"wordnet_senses:\n  GPU peak (\d+\.\d) GiB per process: weights (\d+\.\d) GiB", text
    ).groups()
    assert f"weights {weight} GiB," == weights(2)
    docs = " ".join((ROOT / "docs" / "paper_scale.md").read_text().split())
    assert f"a GPU peak of {peak} GiB per process, {weight} GiB of it Llama-3.1-8B's bfloat16 weights" in docs
    # the costs table's row for the design card's command quotes the same projection
    assert f"| a GPU peak of {peak} GiB per process, {weight} GiB of it the bfloat16 weights, with the" in docs
    assert f"the weights ({LLAMA8B * 4 / 2**30:.1f} GiB at 8B in float32)" in docs


def test_a_gpu_here_is_what_the_preflight_checks_the_run_against(tmp_path, monkeypatch):
    """Without the weights on a machine with a GPU (faked: 1 MiB), the run is for that GPU: the
    projection names it and, where it does not fit, the settings that fit."""
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    monkeypatch.setattr(preflight, "resolve_device", lambda name: torch.device("cuda"))
    tiny_gpu = types.SimpleNamespace(total_memory=2**20, name="a 1 MiB GPU")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: tiny_gpu)
    recipe = notebook_config("03_real_data_prep", max_train=6, max_test=4, corpus_size=120)
    prepare_wordnet(tmp_path / "prepared", 6, 4, 120, seed=0)
    params = design_card(device="cuda", prepared_dir=str(tmp_path / "prepared"))
    first, *lines = preflight_without_weights(params, recipe).splitlines()
    assert first.endswith(
        "projected for this machine's GPU (a 1 MiB GPU): finetune lora and mixed_precision true, "
        "as auto resolves on a GPU:"
    )
    assert (
        lines[0].startswith("memory preflight, wordnet_senses: llama8b at batch 32 ")
        and "a 1 MiB GPU has 0.0 GiB. Settings that fit: nothing on up to 8 GPUs" in lines[0]
    )


def test_a_benchmark_that_is_not_prepared_nor_offline_is_named_instead_of_projected(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    params = notebook_config("04_real_data", backbone="llama8b", datasets=["mine"], prepared_dir=str(tmp_path / "x"))
    with pytest.raises(BackboneUnavailableError, match=r"(?s)hf download.*needs the prepared datasets: .*prepare"):
        ready_benchmark(params, notebook_config("03_real_data_prep"))
