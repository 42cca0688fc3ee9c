"""benchmarks/device/paper_shapes.py, the GPU's own numbers of issues 59 and 69, rehearsed on the
CPU: its projection is the preflight's table, its counting and fitting give hand-made answers, its
budget adds up to the 6-minute command it promises, its forecast predicts hand-made seconds, zero
CUDA events are flagged rather than counted, the device's own memory is set against the projection,
and every measured row survives each injected fault (a profiler that raises, a part that raises
after some rows, a clock that runs out mid-part, an out-of-memory step); the whole script at tiny
shapes writes a record whose measurements sit beside their projections."""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "device" / "paper_shapes.py"
sys.path.insert(0, str(SCRIPT.parent))

import paper_shapes  # noqa: E402

from amer_lib.core.device import cpu_threads  # noqa: E402

GIB = 2**30


def test_the_projection_of_the_paper_files_micro_batches_is_the_preflight_table():
    # docs/paper_scale.md, "Memory of the paper files": 50.8 GiB (QAMPARI) and 50.3 GiB (AmbigQA)
    # for Llama-8B at micro-batches of 32 on one GPU; the script's workload holds the same sizes but
    # searches nothing during its steps, so the table's search block and FAISS's temporary memory
    # are added back here ("The GPU's own numbers" quotes the script's own 46.4 and 45.9 GiB)
    from amer_lib.runs.memory import FAISS_TEMPORARY, SEARCH_BLOCK

    size = paper_shapes.shapes(tiny=False)
    config = size["backbones"]["llama8b"]
    search = 4 * SEARCH_BLOCK * size["embedding_dim"] + FAISS_TEMPORARY
    qampari = paper_shapes.projection("llama8b", config, size, "qampari", 32, False)
    ambigqa = paper_shapes.projection("llama8b", config, size, "ambigqa", 32, False)
    assert qampari["terms"]["search"] == qampari["terms"]["faiss_temporary"] == 0
    assert round((qampari["gpu_peak"] + search) / GIB, 1) == 50.8 and qampari["sequence"] == 72
    assert round((ambigqa["gpu_peak"] + search) / GIB, 1) == 50.3 and ambigqa["sequence"] == 74
    assert round(qampari["gpu_peak"] / GIB, 1) == 46.4 and round(ambigqa["gpu_peak"] / GIB, 1) == 45.9
    assert qampari["without_reserve"] == qampari["gpu_peak"] - 2 * GIB
    checkpointed = paper_shapes.projection("llama8b", config, size, "qampari", 64, True)
    assert checkpointed["terms"]["activations"] < qampari["terms"]["activations"]


def test_the_step_projection_is_the_docs_arithmetic():
    projected = paper_shapes.projected_step_seconds("llama8b", 128)
    assert projected["seconds"] == pytest.approx(128 * 65 * 4 * 8.0e9 / (0.4 * 989e12))
    assert round(projected["seconds"], 2) == 0.67 and "128 x 65 tokens" in projected["arithmetic"]


def test_an_out_of_memory_error_records_the_bytes_it_asked_for():
    error = torch.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.19 GiB"
    )
    assert paper_shapes.out_of_memory(error)["bytes_asked"] == int(2.5 * GIB)
    assert paper_shapes.out_of_memory(error)["status"] == "OOM"
    assert paper_shapes.out_of_memory(RuntimeError("no size said"))["bytes_asked"] is None


def test_the_op_counter_counts_what_computes_and_leaves_views_out():
    x = torch.randn(3, 4)
    with paper_shapes.OpCounter() as counter:
        (x @ x.T).relu().view(-1).sum()
    assert counter.names == ["aten::mm", "aten::relu", "aten::sum"]


def test_no_cuda_event_is_flagged_not_counted_as_zero(monkeypatch):
    # the CPU build of torch drops CUDA activity silently: what a GPU without CUPTI would also give
    monkeypatch.setattr(paper_shapes, "synchronize", lambda device: None)
    counted = paper_shapes.profiled(lambda: torch.ones(3) * 2, "cuda")
    assert counted["status"] == "no GPU events" and counted["kernels"] is None and counted["copies"] is None
    assert counted["kind"] == "cuda kernels (torch.profiler)"


def test_the_gpu_counts_split_kernels_from_copies_and_say_when_kineto_may_have_dropped_some():
    names = ["ampere_bf16_gemm", "Memcpy HtoD (Pageable -> Device)", "void at::native::elementwise", "Memset (Device)"]
    counted = paper_shapes.gpu_counts(names, False, 9, 1024)
    assert (counted["kernels"], counted["copies"], counted["status"]) == (2, 2, "ok")
    assert paper_shapes.gpu_counts(names, True, 9, 1024)["status"].startswith("truncated")
    # a torch that cannot say: 10M records of up to 128 B (1.28e9 B) could fill 1024 MB (1.07e9 B), 8M (1.02e9) not
    assert paper_shapes.gpu_counts(names, None, 10_000_000, 1024)["status"].startswith("may be truncated")
    assert paper_shapes.gpu_counts(names, None, 8_000_000, 1024)["status"] == "ok"
    assert paper_shapes.gpu_counts([], None, 40, 1024)["status"] == "no GPU events"


def test_kinetos_buffer_is_raised_through_the_file_kineto_config_names(monkeypatch, tmp_path):
    monkeypatch.delenv("KINETO_CONFIG", raising=False)
    assert paper_shapes.kineto_buffer_mb() == 128  # kineto's default
    got = paper_shapes.raise_kineto_buffer(tmp_path, 2048)
    assert (tmp_path / "libkineto.conf").read_text() == "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB = 2048\n"
    assert os.environ["KINETO_CONFIG"] == str(tmp_path / "libkineto.conf")
    assert got["set_here"] and got["buffer_mb"] == 2048 == paper_shapes.kineto_buffer_mb()
    again = paper_shapes.raise_kineto_buffer(tmp_path / "elsewhere", 4096)  # a KINETO_CONFIG already set is kept
    assert not again["set_here"] and again["buffer_mb"] == 2048 and not (tmp_path / "elsewhere").exists()


def test_the_device_use_is_total_less_free_at_its_sampled_maximum(monkeypatch):
    # a fake driver: 60, 40 and 55 GiB free of 140 GiB over three samples -> 80, 100 and 85 GiB in use
    readings = iter([(60 * GIB, 140 * GIB), (40 * GIB, 140 * GIB), (55 * GIB, 140 * GIB)])
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: next(readings))
    used = paper_shapes.DeviceUse("cuda")
    assert [used.sample() for _ in range(3)] == [80 * GIB, 100 * GIB, 85 * GIB]
    assert used.facts() == dict(device_used_peak=100 * GIB, device_total=140 * GIB)
    row = dict(**used.facts(), projected=dict(gpu_peak=80 * GIB, without_reserve=78 * GIB))
    assert paper_shapes.ratios(row) == dict(device_over_projected=1.25, device_within_projection=False)
    cpu = paper_shapes.DeviceUse("cpu")
    assert cpu.sample() is None and cpu.facts() == dict(device_used_peak=None, device_total=None)


def test_the_fit_recovers_a_known_count():
    a, b, c, d = 40.0, 30.0, 70.0, 260.0
    counts = {(layers, n): a + b * layers + c * n + d * layers * n for layers in (2, 4) for n in (5, 8)}
    assert paper_shapes.fit(counts) == pytest.approx((a, b, c, d))


def test_a_part_out_of_time_records_each_setting_skipped_beside_its_projection():
    size = paper_shapes.shapes(tiny=True)
    with cpu_threads(1):  # the projection measures the stand-in's layer: seconds on one thread, more on two shared
        rows = paper_shapes.training(size, deadline=time.perf_counter())
    assert len(rows) == 2 * 2 * 2 * 2  # datasets x backbones x micro-batches x checkpointing
    assert {row["status"] for row in rows} == {"skipped: time"}
    assert all(row["projected"]["gpu_peak"] > 0 and row["projected_step"]["seconds"] > 0 for row in rows)
    assert all(row["predicted_seconds"] > 0 and row["seconds_left"] == 0 for row in rows)


def test_the_budget_adds_up_to_a_six_minute_command_as_the_docstring_writes_it():
    assert paper_shapes.WALL == 360 and paper_shapes.BUDGET == sum(paper_shapes.CAPS.values()) == 285
    assert sum(paper_shapes.SETUP.values()) + paper_shapes.BUDGET + paper_shapes.MARGIN == paper_shapes.WALL
    arithmetic = paper_shapes.budget_arithmetic()
    assert arithmetic["total"] == 360 and arithmetic["parts"] == 285
    caps = " + ".join(f"{name} {cap:.0f}" for name, cap in paper_shapes.CAPS.items())
    assert caps == "smoke 20 + llama8b 130 + llama1b 40 + generation 40 + encoding 25 + ambigqa 30"
    assert caps in paper_shapes.__doc__ and "<= 25 s" in paper_shapes.__doc__ and "<= 20 s" in paper_shapes.__doc__
    assert list(paper_shapes.CAPS) == [name for name in paper_shapes.ORDER if name != "faiss"]


def test_the_parts_by_default_leave_cpu_faiss_out_and_say_why():
    order = ["smoke", "llama8b", "llama1b", "generation", "encoding", "ambigqa"]
    parts, reasons = paper_shapes.chosen_parts(None, 0)
    assert parts == order and set(reasons) == {"faiss"} and "CPU build" in reasons["faiss"]
    assert paper_shapes.chosen_parts(None, None)[1]["faiss"].startswith("skipped: no faiss")
    assert paper_shapes.chosen_parts(None, 1) == (order[:5] + ["faiss", "ambigqa"], {})
    parts, reasons = paper_shapes.chosen_parts(["faiss", "training"], 0)
    assert parts == ["llama8b", "llama1b", "faiss", "ambigqa"]
    assert reasons == dict.fromkeys(("smoke", "generation", "encoding"), "skipped: not asked")
    with pytest.raises(ValueError, match="no part bogus; the parts are smoke, llama8b"):
        paper_shapes.chosen_parts(["bogus"], 0)


def measured_row(backbone, checkpointing, step, warmup, wall, profiled=None, counted=None):
    """A training row as `training` records it, with hand-made seconds."""
    row = dict(
        backbone=backbone,
        checkpointing=checkpointing,
        median_step_seconds=step,
        step_seconds=[step] * 3,
        warmup_seconds=warmup,
        wall_seconds=wall,
        projected_step=dict(seconds=0.67),
    )
    if profiled:
        row["kernels"] = dict(seconds=profiled)
    if counted:
        row["ops"] = dict(seconds=counted)
    return row


def test_the_forecast_predicts_each_next_setting_from_what_was_measured():
    forecast = paper_shapes.Forecast()
    # nothing measured: the projected 0.67 s step x the launch bound 6 = 4.02 s; a profiled and
    # counted setting runs warm-up 3 + 3 timed + profiled 2.5 + counted 4 = 12.5 steps, + 2 s overhead
    assert forecast.setting("llama8b", False, 32, 0.67, 3, True, True) == pytest.approx(2 + 12.5 * 4.02)
    assert forecast.step("llama8b", True, 32, 0.67) == pytest.approx(4.02 * 1.6)
    # a plain profiled, counted setting: 2 s steps, warm-up 4 s (x2), profiled 5 s (x2.5), counted 8 s (x4),
    # 26 s in all: 26 - 6 - 4 - 5 - 8 = 3 s of overhead
    forecast.observe_setting(measured_row("llama8b", False, 2.0, 4.0, 26.0, profiled=5.0, counted=8.0), 32)
    assert forecast.measured == {"warmup", "profiled", "counted", "setting_seconds"}
    assert forecast.setting("llama8b", False, 32, 0.67, 3, False, False) == pytest.approx(3 + (2 + 3) * 2.0)
    # checkpointed, profiled, not counted: the step bounded at 2 x 1.6 = 3.2 s, 2 + 3 + 2.5 = 7.5 steps
    assert forecast.setting("llama8b", True, 32, 0.67, 3, True, False) == pytest.approx(3 + 7.5 * 3.2)
    # the checkpointed step measured at 3 s (warm-up 6 s, 17 s in all): its factor is now 1.5, overhead 2 s
    forecast.observe_setting(measured_row("llama8b", True, 3.0, 6.0, 17.0), 32)
    assert forecast.factors["checkpointed"] == pytest.approx(1.5) and forecast.factors["setting_seconds"] == 2.0
    # another backbone: 8B's step of the same checkpointing x max(16 / 32 layers, 0.104 / 0.67 projected) = x 0.5
    assert forecast.setting("llama1b", False, 16, 0.104, 3, False, False) == pytest.approx(2 + 5 * 1.0)
    assert forecast.setting("llama1b", True, 16, 0.104, 3, False, False) == pytest.approx(2 + 5 * 1.5)
    # builds: 2 s a GiB until one is measured, then the measured rate (12 s for 4 GiB: 3 s a GiB)
    assert forecast.build(15 * GIB) == pytest.approx(30.0)
    forecast.observe_build(12.0, 4 * GIB)
    assert forecast.build(2 * GIB) == pytest.approx(6.0)


def test_a_prediction_past_the_deadline_is_skipped_with_the_prediction_beside_it():
    run = paper_shapes.Run(clock=paper_shapes.Clock(100, now=lambda: 50.0))
    assert run.skip(10.0, deadline=70.0) is None and run.skip(20.0, deadline=70.0) is None
    assert run.skip(30.0, deadline=70.0) == dict(status="skipped: time", predicted_seconds=30.0, seconds_left=20.0)
    assert run.skip(5.0, deadline=40.0)["seconds_left"] == 0.0
    assert run.clock.left() == 100 and run.clock.part(30) == 80 and run.clock.part(300) == 150


def test_the_parameter_count_is_the_published_models():
    # inf-retriever-v1-1.5b (Qwen2-1.5B): 1.543e9 counted on the meta device; Llama-3.1-8B without its
    # 525M-parameter head: 8.03e9 - 0.525e9
    assert round(paper_shapes.parameter_count(paper_shapes.INF_RETRIEVER) / 1e9, 3) == 1.543
    assert round(paper_shapes.parameter_count(paper_shapes.backbone_config("llama8b")) / 1e9, 3) == 7.505


def rehearse(tmp_path, parts, context=None):
    """`run` at the rehearsal's shapes on one CPU thread, the record read back from disk."""
    args = argparse.Namespace(tiny=False, out=tmp_path, budget=200.0, parts=parts, started=None)
    with cpu_threads(1):
        record = paper_shapes.run(args, context=context, size=paper_shapes.shapes(tiny=True))
    assert json.loads((tmp_path / "paper_shapes.json").read_text()) == json.loads(json.dumps(record))
    return record


def test_a_profiler_that_raises_keeps_each_settings_step_times_and_peaks(tmp_path):
    def failing(step, device):
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    context = paper_shapes.Run(clock=paper_shapes.Clock(200), profiler=failing)
    rows = rehearse(tmp_path, ["llama8b"], context)["parts"]["llama8b"]["rows"]
    assert [row["status"] for row in rows] == ["ok"] * 4
    assert all(len(row["step_seconds"]) == 2 and row["median_step_seconds"] > 0 for row in rows)
    assert all("max_memory_reserved" in row and "device_used_peak" in row for row in rows)
    profiled = [row for row in rows if row["micro_batch"] == 2]
    assert len(profiled) == 2 and all("kernels" not in row for row in profiled)
    assert {row["profiler_error"] for row in profiled} == {"RuntimeError: CUPTI_ERROR_NOT_INITIALIZED"}


def test_a_part_that_fails_between_settings_keeps_its_rows_and_its_traceback_beside_them(tmp_path, monkeypatch):
    built, broken = [], []
    random_encoder = paper_shapes.random_encoder

    def second_build_fails(*args, **kwargs):  # the second backbone's build, after the first one's rows
        built.append(args[0])
        if len(built) == 2:
            broken.append(True)
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return random_encoder(*args, **kwargs)

    def free(device):  # after the CUDA error, freeing the device fails too
        if broken:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(paper_shapes, "random_encoder", second_build_fails)
    monkeypatch.setattr(paper_shapes, "free", free)
    part = rehearse(tmp_path, ["ambigqa"])["parts"]["ambigqa"]
    assert part["status"] == "failed: RuntimeError: CUDA error: an illegal memory access was encountered"
    assert [(row["backbone"], row["status"]) for row in part["rows"]] == [("llama8b", "ok")] * 4
    assert any("second_build_fails" in line for line in part["error"]) and part["error"][-1].startswith("RuntimeError")
    assert part["free_error"].startswith("RuntimeError: CUDA error")
    assert "ambigqa failed after what it measured above" in (tmp_path / "paper_shapes.md").read_text()


def test_a_clock_that_runs_out_mid_part_keeps_the_rows_measured_and_skips_the_rest(tmp_path, monkeypatch):
    shift = [0.0]
    write = paper_shapes.write

    def written(record, out):  # the clock jumps past every deadline once the first row is written
        write(record, out)
        if record["parts"]["llama8b"].get("rows"):
            shift[0] = 1e6

    monkeypatch.setattr(paper_shapes, "write", written)
    context = paper_shapes.Run(clock=paper_shapes.Clock(200, now=lambda: time.perf_counter() + shift[0]))
    parts = rehearse(tmp_path, ["llama8b", "llama1b", "generation"], context)["parts"]
    rows = parts["llama8b"]["rows"]
    assert [row["status"] for row in rows] == ["ok"] + ["skipped: time"] * 3
    assert rows[0]["median_step_seconds"] > 0 and rows[0]["kernels"]["kernels"] > 0
    assert all(row["predicted_seconds"] > 0 and row["seconds_left"] == 0 for row in rows[1:])
    assert parts["llama1b"]["status"] == parts["generation"]["status"] == "skipped: time"


def test_an_out_of_memory_step_keeps_the_steps_timed_before_it_and_the_next_settings(tmp_path, monkeypatch):
    calls = []
    optimizer_step = paper_shapes.optimizer_step

    def seventh_step_runs_out(*args):
        # setting 1 (micro-batch 2, profiled): steps 1-4; setting 2: its warm-up 5, timed 6, and 7 runs out
        calls.append(1)
        if len(calls) == 7:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 139.8 GiB")
        return optimizer_step(*args)

    monkeypatch.setattr(paper_shapes, "optimizer_step", seventh_step_runs_out)
    rows = rehearse(tmp_path, ["llama8b"])["parts"]["llama8b"]["rows"]
    assert [row["status"] for row in rows] == ["ok", "OOM", "ok", "ok"]
    oom = rows[1]
    assert oom["bytes_asked"] == 2 * GIB and oom["warmup_seconds"] > 0 and len(oom["step_seconds"]) == 1
    assert oom["median_step_seconds"] is None and "max_memory_reserved" in oom


def test_the_smoke_records_a_failing_part_and_runs_the_others(monkeypatch):
    def broken(size, deadline, *, result=None, run=None):
        result["questions"] = 0
        raise TypeError("generate() got an unexpected keyword argument")

    monkeypatch.setattr(paper_shapes, "generation", broken)
    size = paper_shapes.shapes(tiny=True)
    with cpu_threads(1):
        result = paper_shapes.smoke(
            size, time.perf_counter() + 100, parts=["smoke", "llama8b", "generation", "encoding"]
        )
    assert result["status"] == "failed: generation (each one's error beside it)"
    assert result["generation"]["status"].startswith("failed: TypeError") and result["generation"]["questions"] == 0
    assert [row["status"] for row in result["training"]["rows"]] == ["ok", "ok"]  # plain and checkpointed
    assert all(row["kernels"]["kernels"] > 0 for row in result["training"]["rows"])
    assert result["encoding"]["status"] == "ok" and result["encoding"]["batches"][0]["passages_per_second"] > 0


def test_faiss_at_the_smokes_shapes_measures_the_cpu_build_and_says_why_the_gpu_is_skipped():
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        result = paper_shapes.faiss_part(paper_shapes.smoke_shapes("cpu"), time.perf_counter() + 100)
    finally:
        faiss.omp_set_num_threads(threads)
    entry = result["sizes"][0]
    assert result["status"] == "ok" and entry["n"] == 5000 and 0 < entry["builds"]["cpu"]["recall_at_100"] <= 1
    assert entry["builds"]["gpu"]["status"].startswith("skipped: faiss")


def test_the_ratios_set_each_measurement_over_its_projection():
    row = dict(
        max_memory_allocated=45 * GIB,
        max_memory_reserved=50 * GIB,
        median_step_seconds=1.34,
        projected=dict(gpu_peak=50 * GIB, without_reserve=48 * GIB),
        projected_step=dict(seconds=0.67),
    )
    ratios = paper_shapes.ratios(row)
    assert ratios == pytest.approx(
        dict(reserved_over_projected=1.0, allocated_over_projected=45 / 48, step_over_projected=2.0)
    )
    assert paper_shapes.ratios(dict(status="OOM", projected=row["projected"])) == {}


@pytest.mark.slow
def test_the_tiny_rehearsal_records_every_part_with_projections_beside_measurements(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((tmp_path / "paper_shapes.json").read_text())
    assert record["tiny"] is True and record["machine"]["device"] == "cpu" and record["budget"] == 285
    assert {"name", "memory", "driver", "torch", "transformers", "peft", "faiss"} <= set(record["machine"])
    assert record["arithmetic"]["total"] == 360 and record["setup"]["process_seconds"] > 0
    statuses = {name: part["status"] for name, part in record["parts"].items()}
    assert set(statuses) == set(paper_shapes.ORDER)  # written with sorted keys: the table below keeps the order
    assert statuses.pop("faiss").startswith("skipped: faiss's CPU build")  # no GPU number to give
    assert statuses == dict.fromkeys(("smoke", "llama8b", "llama1b", "generation", "encoding", "ambigqa"), "ok")
    smoke = record["parts"]["smoke"]["result"]
    assert {job: smoke[job]["status"] for job in ("training", "generation", "encoding")} == dict.fromkeys(
        ("training", "generation", "encoding"), "ok"
    )
    rows = [row for name in ("llama8b", "llama1b", "ambigqa") for row in record["parts"][name]["rows"]]
    assert len(rows) == 16 and {row["status"] for row in rows} == {"ok"}
    assert [row["backbone"] for row in rows[:8]] == ["llama8b"] * 4 + ["llama1b"] * 4  # QAMPARI's first
    assert {row["dataset"] for row in rows[8:]} == {"ambigqa"}
    for row in rows:
        assert row["projected"]["gpu_peak"] > 0 and row["projected_step"]["seconds"] > 0
        assert {"max_memory_allocated", "max_memory_reserved", "device_used_peak"} <= set(row)  # None on the CPU
        assert len(row["step_seconds"]) == 2 and min(row["step_seconds"]) > 0 and row["warmup_seconds"] > 0
        assert row["micro_batches"] == 4 // row["micro_batch"] and row["predicted_seconds"] > 0
    profiled = [row for row in rows if "kernels" in row]
    assert len(profiled) == 8 and all(row["micro_batch"] == 2 for row in profiled)
    for row in profiled:
        kernels = row["kernels"]
        assert kernels["status"] == "ok" and kernels["seconds"] > 0
        assert kernels["positions"] == row["decoded_positions"][-1]  # the profiled step is the last
        assert kernels["per_position_per_micro_batch"] == pytest.approx(kernels["kernels"] / (2 * kernels["positions"]))
        assert "aten::mm" in kernels["by_name"]
    plain = [row["kernels"]["kernels"] for row in profiled if not row["checkpointing"]]
    recomputed = [row["kernels"]["kernels"] for row in profiled if row["checkpointing"]]
    assert min(recomputed) > max(plain)  # checkpointing runs each layer's forward again
    generation = record["parts"]["generation"]["result"]
    assert generation["ranked_shape"] == [16, generation["k"]] and generation["export_bytes"] > 0
    assert generation["stages"] == dict.fromkeys(("generate", "export", "search"), dict(status="ok"))
    encoding = record["parts"]["encoding"]["result"]
    assert encoding["projected_passages_per_second"] > 0
    assert all(entry["passages_per_second"] > 0 for entry in encoding["batches"])
    table = (tmp_path / "paper_shapes.md").read_text()
    assert "| part | backbone | data | micro-batch | checkpointing |" in table and table.count("| llama8b |") == 11
    parts_table = table.split("| part | status | seconds |\n|---|---|---|\n")[1].split("\n\n")[0]
    assert [line.split(" | ")[0][2:] for line in parts_table.splitlines()] == list(paper_shapes.ORDER)


def test_the_carried_wheels_are_the_versions_this_environment_was_installed_with():
    import peft
    import transformers

    assert paper_shapes.pins() == [
        "faiss-cpu==1.15.1",
        f"transformers=={transformers.__version__}",
        f"peft=={peft.__version__}",
    ]
    with pytest.raises(ValueError, match="pins no version of not-a-package"):
        paper_shapes.pins(("not-a-package",))
