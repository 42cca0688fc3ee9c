"""benchmarks/device/paper_shapes.py, the GPU's own numbers of issue 59, rehearsed on the CPU: its
projection is the preflight's table, its counting and fitting give hand-made answers, a part out
of time records every setting as skipped with the projection beside it, and the whole script at
tiny shapes writes a record whose measurements sit beside their projections."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "device" / "paper_shapes.py"
sys.path.insert(0, str(SCRIPT.parent))

import paper_shapes  # noqa: E402

from amer_lib.core.device import cpu_threads  # noqa: E402

GIB = 2**30


def test_the_projection_of_the_paper_files_micro_batches_is_the_preflight_table():
    # docs/paper_scale.md, "Memory of the paper files": 56.1 GiB (QAMPARI) and 55.8 GiB (AmbigQA)
    # for Llama-8B at micro-batches of 32 on one GPU; the script's workload holds the same sizes but
    # searches nothing during its steps, so the table's search block and FAISS's temporary memory
    # are added back here
    from amer_lib.core.memory import FAISS_TEMPORARY, SEARCH_BLOCK

    size = paper_shapes.shapes(tiny=False)
    config = size["backbones"]["llama8b"]
    search = 4 * SEARCH_BLOCK * size["embedding_dim"] + FAISS_TEMPORARY
    qampari = paper_shapes.projection("llama8b", config, size, "qampari", 32, False)
    ambigqa = paper_shapes.projection("llama8b", config, size, "ambigqa", 32, False)
    assert qampari["terms"]["search"] == qampari["terms"]["faiss_temporary"] == 0
    assert round((qampari["gpu_peak"] + search) / GIB, 1) == 56.1 and qampari["sequence"] == 72
    assert round((ambigqa["gpu_peak"] + search) / GIB, 1) == 55.8 and ambigqa["sequence"] == 74
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


def test_the_gpu_count_reads_kinetos_events_and_finds_no_kernel_on_the_cpu(monkeypatch):
    monkeypatch.setattr(paper_shapes, "synchronize", lambda device: None)
    counted = paper_shapes.profiled(lambda: torch.ones(3) * 2, "cuda")
    assert counted == dict(kind="cuda kernels (torch.profiler)", kernels=0, copies=0)


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
    assert record["tiny"] is True and record["machine"]["device"] == "cpu"
    assert {"name", "memory", "driver", "torch", "transformers", "peft", "faiss"} <= set(record["machine"])
    assert {name: part["status"] for name, part in record["parts"].items()} == dict.fromkeys(
        ("training", "generation", "faiss", "encoding"), "ok"
    )
    rows = record["parts"]["training"]["result"]
    assert len(rows) == 16 and {row["status"] for row in rows} == {"ok"}
    for row in rows:
        assert row["projected"]["gpu_peak"] > 0 and row["projected_step"]["seconds"] > 0
        assert {"max_memory_allocated", "max_memory_reserved"} <= set(row)  # None on the CPU
        assert len(row["step_seconds"]) == 2 and min(row["step_seconds"]) > 0
        assert row["micro_batches"] == 4 // row["micro_batch"]
    profiled = [row for row in rows if "kernels" in row]
    assert len(profiled) == 8 and all(row["micro_batch"] == 2 for row in profiled)
    for row in profiled:
        kernels = row["kernels"]
        assert kernels["positions"] == row["decoded_positions"][-1]  # the profiled step is the last
        assert kernels["per_position_per_micro_batch"] == pytest.approx(kernels["kernels"] / (2 * kernels["positions"]))
        assert "aten::mm" in kernels["by_name"]
    plain = [row["kernels"]["kernels"] for row in profiled if not row["checkpointing"]]
    recomputed = [row["kernels"]["kernels"] for row in profiled if row["checkpointing"]]
    assert min(recomputed) > max(plain)  # checkpointing runs each layer's forward again
    generation = record["parts"]["generation"]["result"]
    assert generation["ranked_shape"] == [16, generation["k"]] and generation["export_bytes"] > 0
    faiss = record["parts"]["faiss"]["result"]["sizes"][0]
    assert 0 < faiss["builds"]["cpu"]["recall_at_100"] <= 1
    assert faiss["builds"]["gpu"]["status"].startswith("skipped: faiss")
    encoding = record["parts"]["encoding"]["result"]
    assert encoding["projected_passages_per_second"] > 0
    assert all(entry["passages_per_second"] > 0 for entry in encoding["batches"])
    table = (tmp_path / "paper_shapes.md").read_text()
    assert "| backbone | data | micro-batch | checkpointing |" in table and table.count("| llama8b |") == 8


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
