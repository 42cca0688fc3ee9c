"""The memory preflight against hand arithmetic, its refusal, and its measured constants."""

import re
import sys
from dataclasses import replace

import pytest
from conftest import ROOT, documentation

from amer_lib.core import memory
from amer_lib.core.backbones import LORA_TARGETS, backbone_config

sys.path.insert(0, str(ROOT / "benchmarks"))
import preflight_paper_files  # noqa: E402

GIB = 2**30


def test_the_8b_ambigqa_file_projects_as_the_hand_arithmetic_says():
    arch, work = preflight_paper_files.paper_workload("04_real_data/ambigqa_llama8b.yaml")
    # Llama-3.1-8B without its LM head: embeddings 128256 x 4096, 32 layers of q, o 4096^2, k, v
    # 4096 x 1024, three MLP matrices 4096 x 14336 and two norms, and the final norm
    per_layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    parameters = 128256 * 4096 + 32 * per_layer + 4096
    assert arch.parameters == parameters == 7_504_924_672
    # LoRA per unit of rank: in + out of each of the seven projections, 32 layers
    assert arch.lora_parameters_per_rank == 32 * (2 * 8192 + 2 * 5120 + 3 * (4096 + 14336)) == 2_621_440
    assert (work.finetune, work.mixed_precision, work.micro_batch, work.sequence) == ("lora", True, 32, 65 + 10 - 1)
    measured = memory._measured()["backbones"]["llama8b"]["activations"]["lora_bf16"]["plain"]
    plan = memory.plan(arch, work)
    assert plan.weights == 2 * parameters  # bfloat16 frozen weights
    assert plan.trained_state == 16 * (64 * 2_621_440 + 2 * 1536 * 4096)  # float32 weight, grad, two moments
    assert plan.activations == 32 * 74 * 32 * measured  # questions x tokens x layers x bytes
    assert plan.data == 2 * 1_000_000 * 1536 + 4 * 5044 * 10 * 1536  # float16 negatives, float32 targets
    assert plan.search == 4 * 500_000 * 1536
    expected = 2 * parameters + plan.trained_state + plan.data + max(plan.activations, plan.search) + 2 * GIB
    assert plan.gpu_peak == expected
    assert 45 * GIB < expected < 50 * GIB  # the docs' 48.2 GiB
    assert plan.host_peak == 2 * parameters + 25_000_000 * memory._measured()["host_bytes_per_document"] + plan.data


def test_checkpointing_keeps_each_layers_input_and_one_layer():
    arch, work = preflight_paper_files.paper_workload("04_real_data/qampari_llama8b.yaml")
    checkpointed = memory.plan(arch, replace(work, gradient_checkpointing=True))
    per_token = arch.activations["lora_bf16"]
    assert per_token["checkpointed"] == 4096 * 2  # the layer's bfloat16 input: the rest is recomputed
    assert checkpointed.activations == 32 * 72 * (32 * per_token["checkpointed"] + per_token["plain"])


def test_a_run_that_does_not_fit_stops_with_settings_that_do():
    arch, work = preflight_paper_files.paper_workload("04_real_data/qampari_llama8b.yaml")
    whole = replace(work, micro_batch_size=0)
    capacity = 78 * GIB
    assert memory.plan(arch, whole).gpu_peak > capacity  # 128 questions at once: about 126 GiB
    with pytest.raises(memory.MemoryPreflightError, match="H100") as error:
        memory.check(arch, whole, capacity, "NVIDIA H100 80GB HBM3")
    advice = str(error.value)
    assert "needs about 125.7 GiB per GPU" in advice and "micro_batch_size: 64" in advice
    for suggestion in re.findall(r"micro_batch_size: (\d+)(, gradient_checkpointing: true)?", advice):
        trial = replace(whole, micro_batch_size=int(suggestion[0]), gradient_checkpointing=bool(suggestion[1]))
        assert memory.plan(arch, trial).gpu_peak <= capacity
    assert memory.check(arch, work, capacity, "H100").gpu_peak < capacity  # the file's own micro-batches


@pytest.mark.slow  # 35 s beside a training process, about 22 s on idle cores (the suite's ratio, 499 / 309 s)
def test_the_measured_activations_are_what_the_measurement_gives_now():
    """The committed constant of Llama-3.2-1B's layer shape, measured again (saved-tensor bytes do
    not depend on the machine)."""
    config = backbone_config("llama1b")
    fresh = memory.measure_layer_activations(config, "lora_bf16", LORA_TARGETS)
    assert fresh == memory._measured()["backbones"]["llama1b"]["activations"]["lora_bf16"]
    assert memory._measured()["backbones"]["llama1b"]["shape"] == memory.layer_shape(config)


def test_documentation_check_the_paper_files_memory_table_is_the_scripts():
    assert preflight_paper_files.markdown(preflight_paper_files.rows()) in documentation()


def test_every_paper_training_file_fits_one_gpu_and_four():
    for row in preflight_paper_files.rows():
        assert row["fits_h100"], row
