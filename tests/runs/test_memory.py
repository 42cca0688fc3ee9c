"""The memory preflight against hand arithmetic, its refusal, and its measured constants."""

import json
import re
import sys
from dataclasses import replace

import pytest
from conftest import ROOT, documentation

from amer_lib.core.backbones import LORA_TARGETS, backbone_config, describe
from amer_lib.core.device import cpu_threads
from amer_lib.runs import activation_memory, memory

sys.path.insert(0, str(ROOT / "benchmarks"))
import preflight_paper_files  # noqa: E402

GIB = 2**30
TINY = dict(  # a Llama layer small enough to measure in a second
    model_type="llama",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=16,
)


@pytest.fixture(autouse=True)
def one_thread():
    """The bytes do not depend on the threads, and one thread measures fastest beside other work."""
    with cpu_threads(1):
        yield


def test_the_8b_ambigqa_file_projects_as_the_hand_arithmetic_says():
    backbone, work = preflight_paper_files.paper_workload("04_real_data/ambigqa_llama8b.yaml")
    # Llama-3.1-8B without its LM head: embeddings 128256 x 4096, 32 layers of q, o 4096^2, k, v
    # 4096 x 1024, three MLP matrices 4096 x 14336 and two norms, and the final norm
    per_layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    parameters = 128256 * 4096 + 32 * per_layer + 4096
    assert backbone.parameters == parameters == 7_504_924_672
    # LoRA r = 64 times in + out of each of the seven projections, 32 layers
    assert backbone.lora_parameters == 64 * 32 * (2 * 8192 + 2 * 5120 + 3 * (4096 + 14336)) == 167_772_160
    assert (work.finetune, work.mixed_precision, work.micro_batch, work.sequence) == ("lora", True, 32, 65 + 10 - 1)
    measured = activation_memory.measured()["backbones"]["llama8b"]["activations"]["lora_bf16"]["plain"]
    # the docs' 341,242 bytes (333.2 KiB), re-measured once peft's float32 input casts were cut under autocast
    # (issue 69): the former 419,066 less 2 bytes x the seven adapters' input widths, 5 x 4096 + 4096 + 14336
    assert round(measured) == 341_242 == 419_066 - 2 * (5 * 4096 + 4096 + 14336)
    plan = memory.plan(backbone, work)
    assert plan.weights == 2 * parameters  # bfloat16 frozen weights
    assert plan.trained_state == 16 * (167_772_160 + 2 * 1536 * 4096)  # float32 weight, grad, two moments
    assert plan.gradient_buckets == 0  # one process: no DistributedDataParallel
    assert plan.activations == pytest.approx(32 * 74 * 32 * measured, abs=1)  # questions x tokens x layers x bytes
    assert plan.data == 2 * 1_000_000 * 1536 + 4 * 5044 * 10 * 1536  # float16 negatives, float32 targets
    assert plan.search == 4 * 500_000 * 1536 and plan.faiss_temporary == 1536 * 2**20
    without_search = memory.plan(backbone, replace(work, corpus_size=0))
    assert without_search.search == without_search.faiss_temporary == 0  # a step measured alone searches nothing
    expected = 2 * parameters + plan.trained_state + plan.data + plan.activations + plan.search + 1.5 * GIB + 2 * GIB
    assert plan.gpu_peak == plan.device_peak == expected
    assert 50 * GIB < expected < 51 * GIB  # the docs' 50.3 GiB
    host = 2 * parameters + 25_000_000 * activation_memory.measured()["host_bytes_per_document"] + plan.data
    assert plan.host_peak == host


def test_a_cpu_run_holds_every_term_once_in_one_memory_and_is_said_so():
    """On the CPU the weights, negatives and targets the host holds are the ones trained with (no
    copy to a device), the search block is made on the CPU, and there is no CUDA context nor FAISS
    GPU memory: float32 LoRA at 8B, AmbigQA's file run on the CPU."""
    backbone, work = preflight_paper_files.paper_workload("04_real_data/ambigqa_llama8b.yaml")
    plan = memory.plan(backbone, replace(work, mixed_precision=False))
    measured = activation_memory.measured()["backbones"]["llama8b"]["activations"]["lora_fp32"]["plain"]
    corpus_ids = 25_000_000 * activation_memory.measured()["host_bytes_per_document"]
    data = 2 * 1_000_000 * 1536 + 4 * 5044 * 10 * 1536
    expected = (
        4 * 7_504_924_672  # float32 weights
        + 16 * (167_772_160 + 2 * 1536 * 4096)  # LoRA and the two projections: weight, gradient, two moments
        + 32 * 74 * 32 * measured  # questions x tokens x layers x bytes
        + data
        + 4 * 500_000 * 1536  # one float32 search block
        + corpus_ids
    )
    assert plan.cpu_peak == pytest.approx(expected, abs=1)
    [line] = plan.lines(gpu=False)
    assert line.startswith(f"peak on the CPU {plan.cpu_peak / GIB:.1f} GiB per process: weights 28.0 GiB,")
    assert f"corpus ids {corpus_ids / GIB:.1f} GiB" in line and "GPU peak" not in line and "CUDA reserve 2" not in line
    assert plan.lines()[0].startswith(f"GPU peak {plan.gpu_peak / GIB:.1f} GiB per process")  # the GPU's words


def test_checkpointing_keeps_each_layers_input_and_kv_cache_and_one_layer():
    backbone, work = preflight_paper_files.paper_workload("04_real_data/qampari_llama8b.yaml")
    checkpointed = memory.plan(backbone, replace(work, gradient_checkpointing=True))
    per_token = activation_memory.per_token(backbone, "lora_bf16")
    # the layer's bfloat16 input and its KV cache (8 KV heads of 128, keys and values): the rest is recomputed
    assert per_token["checkpointed"] == pytest.approx(4096 * 2 + 2 * 8 * 128 * 2)
    assert checkpointed.activations == pytest.approx(
        32 * 72 * (32 * per_token["checkpointed"] + per_token["plain"]), abs=1
    )


@pytest.mark.parametrize(
    "mode, hidden_bytes, key_bytes, value_bytes",
    [
        ("lora_fp32", 4, 4, 4),
        ("lora_bf16", 2, 2, 2),
        # float32 weights under autocast: the residual stream stays float32, the keys leave the
        # rotary embedding in float32 (its cos and sin are the hidden states' dtype), values bfloat16
        ("full_bf16", 4, 4, 2),
    ],
)
def test_the_decode_paths_checkpointed_layer_keeps_its_input_and_kv_cache(mode, hidden_bytes, key_bytes, value_bytes):
    """Counted by hand: under checkpointing a layer keeps, per token, its input (hidden size
    values) and on the decode path its KV cache (KV heads x head size, keys and values), which
    the replay reads; the teacher-forced pass keeps the input alone."""
    decode = activation_memory.measure_layer_activations(
        TINY, mode, LORA_TARGETS, "decode", prompt_tokens=6, fed_back=3
    )
    teacher = activation_memory.measure_layer_activations(
        TINY, mode, LORA_TARGETS, "teacher", prompt_tokens=6, fed_back=3
    )
    assert decode["checkpointed"] == pytest.approx(64 * hidden_bytes + 2 * 16 * (key_bytes + value_bytes))
    assert teacher["checkpointed"] == pytest.approx(64 * hidden_bytes)
    # step by step, each fed-back position keeps its own copy of the cache it attended to
    assert decode["plain"] > teacher["plain"]


def test_an_unknown_path_or_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="valid: decode, teacher"):
        activation_memory.measure_layer_activations(TINY, "lora_bf16", LORA_TARGETS, "sampled")
    with pytest.raises(ValueError, match="valid: lora_bf16"):
        activation_memory.measure_layer_activations(TINY, "lora_fp16", LORA_TARGETS)


def test_a_workload_with_an_unknown_finetune_or_no_process_is_refused_by_name():
    _, work = preflight_paper_files.paper_workload("04_real_data/ambigqa_llama8b.yaml")
    with pytest.raises(ValueError, match="valid: full, lora"):
        replace(work, finetune="qlora")
    with pytest.raises(ValueError, match="processes_per_gpu must be >= 1"):
        replace(work, processes_per_gpu=0)


def test_a_config_dict_is_described_as_its_registry_name():
    by_name, by_config = describe("llama8b"), describe(backbone_config("llama8b"))
    assert (by_config.parameters, by_config.layers, by_config.hidden_size, by_config.lora_parameters) == (
        by_name.parameters,
        by_name.layers,
        by_name.hidden_size,
        by_name.lora_parameters,
    )
    _, work = preflight_paper_files.paper_workload("04_real_data/ambigqa_llama8b.yaml")
    assert memory.plan_for(backbone_config("llama8b"), work) == memory.plan_for("llama8b", work)
    with pytest.raises(ValueError, match="needs num_hidden_layers"):
        describe({"model_type": "llama", "hidden_size": 64})


def test_several_processes_add_gradient_buckets_and_sharing_a_gpu_multiplies_the_peak():
    backbone, work = preflight_paper_files.paper_workload("04_real_data/ambigqa_llama8b.yaml")
    one = memory.plan(backbone, work)
    four = memory.plan(backbone, replace(work, nproc=4))
    # DistributedDataParallel's buckets: a float32 copy of every trained gradient (LoRA and the projections)
    assert four.gradient_buckets == 4 * (167_772_160 + 2 * 1536 * 4096)
    assert four.gpu_peak - one.gpu_peak == four.gradient_buckets  # each process's share is 32 either way
    shared = memory.plan(backbone, replace(work, processes_per_gpu=2))
    assert shared.gpu_peak == one.gpu_peak and shared.device_peak == 2 * one.gpu_peak
    with pytest.raises(memory.MemoryPreflightError, match="x 2 processes on one GPU") as error:
        memory.check(backbone, replace(work, processes_per_gpu=2), 78 * GIB, "H100")
    # one process on the GPU, then the largest micro-batch that fits it alone: 64 questions (128 does not)
    alone = memory.plan(backbone, replace(work, micro_batch_size=64)).gpu_peak
    assert alone <= 78 * GIB < memory.plan(backbone, replace(work, micro_batch_size=128)).gpu_peak
    assert f"workers: 1, micro_batch_size: 64 ({alone / GIB:.1f} GiB, {78 - alone / GIB:.1f} GiB free)" in str(
        error.value
    )


def test_a_run_that_does_not_fit_stops_with_settings_that_do():
    backbone, work = preflight_paper_files.paper_workload("04_real_data/qampari_llama8b.yaml")
    whole = replace(work, micro_batch_size=0)
    capacity = 78 * GIB
    assert memory.plan(backbone, whole).gpu_peak > capacity  # 128 questions at once
    with pytest.raises(memory.MemoryPreflightError, match="H100") as error:
        memory.check(backbone, whole, capacity, "NVIDIA H100 80GB HBM3")
    advice = str(error.value)
    peak = memory.plan(backbone, whole).gpu_peak / GIB
    assert f"needs about {peak:.1f} GiB per process" in advice
    # the largest micro-batch that fits is named first: 64 questions at once fit, the whole 128 do not
    sixty_four = memory.plan(backbone, replace(work, micro_batch_size=64)).gpu_peak
    assert sixty_four <= capacity
    assert f"Settings that fit: micro_batch_size: 64 ({sixty_four / GIB:.1f} GiB, " in advice
    assert memory.check(backbone, work, capacity, "H100").device_peak < capacity  # the file's own micro-batches


SUGGESTION = re.compile(
    r"(?:nproc_per_node: (\d+), )?micro_batch_size: (\d+)(, gradient_checkpointing: true)? "
    r"\((\d+\.\d) GiB, (-?\d+\.\d) GiB free\)"
)


@pytest.mark.parametrize("capacity", [78 * GIB, 80 * 10**9], ids=["78 GiB usable", "80 GB"])
def test_every_suggestion_for_every_paper_file_fits_with_its_headroom_stated(capacity):
    """Each suggested layout, projected again with every term (search block, FAISS's temporary
    memory, gradient buckets), is within the device's memory by the headroom it states."""
    for name in preflight_paper_files.FILES:
        backbone, work = preflight_paper_files.paper_workload(name)
        for gpus in (1, 4):
            whole = replace(work, nproc=gpus, micro_batch_size=0)
            suggestions = memory.settings_that_fit(backbone, whole, capacity)
            assert suggestions, (name, gpus)
            for suggestion in suggestions:
                nproc, micro, recompute, peak, free = SUGGESTION.fullmatch(suggestion).groups()
                trial = replace(
                    whole,
                    nproc=int(nproc or 1),
                    micro_batch_size=int(micro),
                    gradient_checkpointing=bool(recompute),
                )
                projected = memory.plan(backbone, trial)
                assert projected.search > 0 and projected.faiss_temporary > 0
                assert (projected.gradient_buckets > 0) == (trial.nproc > 1)
                assert projected.device_peak <= capacity, suggestion
                assert float(peak) == round(projected.device_peak / GIB, 1)
                assert float(free) == round((capacity - projected.device_peak) / GIB, 1) >= 0


@pytest.mark.slow  # 28 s on one thread beside other work: the decode path runs its positions one at a time
def test_the_measured_activations_are_what_the_measurement_gives_now():
    """The committed constant of Llama-3.2-1B's layer shape, measured again (saved-tensor bytes do
    not depend on the machine), on the decode path, and above the teacher-forced pass's."""
    config = backbone_config("llama1b")
    fresh = activation_memory.measure_layer_activations(config, "lora_bf16", LORA_TARGETS)
    committed = activation_memory.measured()["backbones"]["llama1b"]
    assert fresh == committed["activations"]["lora_bf16"]
    assert committed["shape"] == activation_memory.layer_shape(config)
    teacher = activation_memory.measure_layer_activations(config, "lora_bf16", LORA_TARGETS, "teacher")
    assert fresh["plain"] > teacher["plain"] and fresh["checkpointed"] > teacher["checkpointed"]


def test_documentation_check_the_paper_files_memory_table_is_the_scripts():
    assert preflight_paper_files.markdown(preflight_paper_files.rows()) in documentation()


def test_documentation_check_the_activation_table_is_the_committed_files():
    """docs/paper_scale.md's KiB per token per layer, plain / checkpointed, of the paper's four
    decoders in each mode, are the committed constants (re-measured after issue 69)."""
    committed = activation_memory.measured()["backbones"]
    names = {"llama8b": "Llama-3.1-8B", "qwen4b": "Qwen3-4B", "llama3b": "Llama-3.2-3B", "llama1b": "Llama-3.2-1B"}
    docs = documentation()
    for key, name in names.items():
        activations = committed[key]["activations"]
        cells = [
            f"{activations[mode]['plain'] / 1024:.1f} / {activations[mode]['checkpointed'] / 1024:.1f}"
            for mode in ("lora_bf16", "lora_fp32", "full_bf16", "full_fp32")
        ]
        assert f"| {name} | {' | '.join(cells)} |" in docs, name
    assert "| Llama-3.1-8B | 333.2 / 12.0 |" in docs  # the figure the prose quotes, 341,242 bytes


def test_every_paper_training_file_fits_one_gpu_and_four():
    for row in preflight_paper_files.rows():
        assert row["fits_h100"], row


def test_a_shape_the_file_lacks_is_measured_once_a_machine_and_kept_under_its_key(tmp_path, monkeypatch):
    """The first process measures, the next reads the kept file without measuring; another mode or
    torch version is another key; a kept file that cannot be read is said and measured again."""
    monkeypatch.setenv("AMER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(activation_memory, "_MEASURED_NOW", {})
    calls = []

    def measure(config, mode, targets, lora_rank):
        calls.append(mode)
        return {"plain": 100.0 + len(calls), "checkpointed": 10.0}

    monkeypatch.setattr(activation_memory, "measure_layer_activations", measure)
    backbone = describe(TINY)
    first = activation_memory.per_token(backbone, "lora_bf16")
    assert first == {"plain": 101.0, "checkpointed": 10.0} and calls == ["lora_bf16"]
    (kept,) = (tmp_path / "activation_memory").glob("*.json")
    assert activation_memory.per_token(backbone, "lora_bf16") == first and len(calls) == 1  # this process's
    monkeypatch.setattr(activation_memory, "_MEASURED_NOW", {})  # a new process
    assert activation_memory.per_token(backbone, "lora_bf16") == first and len(calls) == 1  # read, not measured
    assert activation_memory.per_token(backbone, "full_fp32") == {"plain": 102.0, "checkpointed": 10.0}
    monkeypatch.setattr(activation_memory.torch, "__version__", "0.0-other")
    assert activation_memory.per_token(backbone, "lora_bf16")["plain"] == 103.0  # another torch: measured again
    assert len(list((tmp_path / "activation_memory").glob("*.json"))) == 3
    monkeypatch.undo()
    monkeypatch.setenv("AMER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(activation_memory, "_MEASURED_NOW", {})
    monkeypatch.setattr(activation_memory, "measure_layer_activations", measure)
    kept.write_text("{ cut short")
    with pytest.warns(activation_memory.AmerWarning, match="cannot be used.*JSONDecodeError") as said:
        again = activation_memory.per_token(backbone, "lora_bf16")
    assert str(kept) in str(said[0].message) and again["plain"] == 104.0
    assert json.loads(kept.read_text())["activations"] == again  # rewritten whole
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv("AMER_CACHE_DIR", str(tmp_path / "a file"))  # a folder that cannot be made
    with pytest.warns(activation_memory.AmerWarning, match="kept for this process only"):
        assert activation_memory.per_token(backbone, "full_bf16")["plain"] == 105.0  # measured, the run goes on


def test_the_cache_folder_follows_amer_cache_dir_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("AMER_CACHE_DIR", str(tmp_path / "mine"))
    assert activation_memory.cache_folder() == tmp_path / "mine"
    monkeypatch.delenv("AMER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert activation_memory.cache_folder() == tmp_path / "xdg" / "amer_lib"
