"""The GPU's own numbers (issue 59): the paper's shapes on a lent GPU, in one call of about 8 minutes.

Run it first in any session lent a device, before any other use of it. The lent machine of this
workplace reaches no network and holds torch, transformers 5.17 and peft but no faiss; the
repository's gradient checkpointing needs the transformers constraints.txt pins (5.17 fails it with
an IndexError in `checkpointing._checkpointed`), so the pinned wheels of faiss-cpu, transformers and
peft travel in `.whl/` (git ignores it; 31.7 MiB), made here once by

    .venv/bin/python benchmarks/device/paper_shapes.py --pack

then the device call, from the repository root, with `carry: [".whl"]` and `timeout_s: 600`:

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && \
    PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 benchmarks/device/paper_shapes.py --out $OUT

(constraints.txt's faiss-gpu==1.15.1 is a 135 MB wheel that needs CUDA 12's runtime wheels beside
it, more than a call carries: there the GPU half of part 3 records why it was skipped). On a GPU
machine with network, the repository with its `gpu` extra, pinned by constraints.txt:

    pip install -c constraints.txt -e ".[gpu]" && python benchmarks/device/paper_shapes.py --out OUT

The CPU rehearsal (the test runs it): `python benchmarks/device/paper_shapes.py --tiny --out DIR`,
every part at tiny shapes (2-layer stand-ins of the same configs, small corpora).

Parts, most valuable first, each under a wall-clock cap (what does not fit is recorded as
"skipped: time"), the record rewritten atomically after each (`paper_shapes.json` and
`paper_shapes.md` under --out):

1. training: random-weight Llama-3.1-8B and Llama-3.2-1B (their published configs, no download)
   with LoRA r = 64 and the two projections as notebook 04's paper files set them, bfloat16,
   through the project's training step (`train._optimizer_step`: batch 128 cut into micro-batches
   of 32 and 64, scheduled sampling at p = 0.5, in-batch negatives, the matched loss) without and
   with gradient checkpointing: peak allocated and reserved memory beside the preflight's
   projection, seconds a step beside the projected 0.67 s, and CUDA kernels a step (torch.profiler);
2. bfloat16 generation of n vectors for a batch of questions, export (`saved.save_pretrained`,
   what `python -m amer_lib.export` writes) and search of the generated vectors;
3. faiss IVF-PQ training, adding and search on 1M (4M if time allows) tree vectors of 1536
   dimensions (`bench_scale.TreeVectors`) on the GPU against the CPU build, recall@100 against
   exact search;
4. inf-retriever-v1-1.5b's shape (Qwen2-1.5B) encoding random passages of 128-160 tokens in
   bfloat16: passages a second at a few batch sizes, beside `benchmarks/projection.py`'s rate.

`--count-ops JSON` (CPU, 30 s) answers issue 59's finding 6 as far as a CPU can: operations per
decoded position per micro-batch at 8B's depth, counted (`OpCounter`) on stand-ins of 2 and 4
layers and extrapolated by layers (`paper_shapes_cpu_ops.json` beside this file).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # amer_lib from this checkout (not installed on the device machine)
sys.path.insert(0, str(ROOT / "benchmarks"))

from amer_lib.core import checkpointing, memory  # noqa: E402
from amer_lib.core.backbones import LoraSettings, add_lora, backbone_config  # noqa: E402
from amer_lib.core.model import AMERQueryEncoder  # noqa: E402
from amer_lib.core.train import (  # noqa: E402
    TrainConfig,
    _adamw,
    _optimizer_step,
    _step_generator,
    accumulate_gradients,
    draw_batch,
)
from amer_lib.data.datasets import TextData  # noqa: E402
from amer_lib.io import write_json, write_text  # noqa: E402

GIB = 2**30
# seconds for the four parts: a device call is cut at 600, and a setting or a build that starts
# inside its part's time may end past it
BUDGET = 450.0
CAPS = {"training": 240.0, "generation": 45.0, "faiss": 120.0, "encoding": 45.0}  # each part's share
BATCH = 128  # the paper files' global batch
EMBEDDING_DIM = 1536  # inf-retriever-v1-1.5b
PROMPT_TOKENS = (58, 65)  # a prompt's tokens (the instruction in the chat template and a question), left-padded to 65
P_SAMPLING = 0.5  # scheduled sampling's p at mid-run (it rises to 0.8): some fed-back positions are the model's own
# the paper's data sizes on the GPU (benchmarks/preflight_paper_files.py): questions with targets, and at most how many
DATASETS = {"qampari": dict(questions=32023, targets=(5, 8)), "ambigqa": dict(questions=5044, targets=(2, 10))}
NEGATIVES = 1_000_000  # the float16 negative pool
# docs/paper_scale.md's step projection: examples x 65 tokens x 4 x parameters FLOPs at 40% of 989 TFLOPS bf16
PROJECTED_PARAMETERS = {"llama8b": 8.0e9, "llama1b": 1.24e9}
PEAK_FLOPS, MFU, PROJECTED_TOKENS = 989e12, 0.4, 65
# infly/inf-retriever-v1-1.5b's published config.json (a Qwen2-1.5B), its architecture fields: 1.543e9
# parameters counted on the meta device, benchmarks/projection.py's 1.54e9
INF_RETRIEVER = dict(
    model_type="qwen2",
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    vocab_size=151646,
    max_position_embeddings=131072,
    rope_theta=1_000_000.0,
    tie_word_embeddings=False,
)
PASSAGE_TOKENS = (128, 160)
ENCODER_PARAMETERS = 1.54e9  # benchmarks/projection.py's ENCODER_PARAMS
# stand-ins: the same configs at a width a CPU runs in seconds
TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=8,
    vocab_size=512,
)


class Clock:
    """The run's wall-clock budget and each part's cap within it."""

    def __init__(self, budget: float):
        self.end = time.perf_counter() + budget

    def left(self) -> float:
        return self.end - time.perf_counter()

    def part(self, cap: float) -> float:
        """The deadline (perf_counter) of a part capped at `cap` seconds."""
        return time.perf_counter() + min(cap, max(0.0, self.left()))


# ----- shapes ---------------------------------------------------------------------------------------------------------


def shapes(tiny: bool) -> dict:
    """Every size the parts use: the paper's, or the CPU rehearsal's."""
    if not tiny:
        return dict(
            device="cuda",
            backbones={name: backbone_config(name) for name in ("llama8b", "llama1b")},
            micro_batches=(32, 64),
            batch=BATCH,
            embedding_dim=EMBEDDING_DIM,
            prompt_tokens=PROMPT_TOKENS,
            datasets=DATASETS,
            negatives=NEGATIVES,
            timed_steps=3,
            questions=512,
            generated=5,
            search_corpus=250_000,
            faiss_sizes=(1_000_000, 4_000_000),
            faiss_factory="IVF4096,PQ96",
            faiss_queries=1000,
            # a guess, not a measurement: RESULTS.md's 209 s for IVF1024,PQ96 at 1M x 1536 on 2 cores over
            # the device's 16 cores, with room for IVF4096's larger k-means: a CPU build starts only if it fits
            cpu_build_seconds_per_million=80.0,
            encoder=INF_RETRIEVER,
            encode_batches=(64, 128, 256),
            encode_seconds=6.0,
            passage_tokens=PASSAGE_TOKENS,
        )
    small = {name: {**backbone_config(name), **TINY} for name in ("llama8b", "llama1b")}
    return dict(
        device="cpu",
        backbones=small,
        micro_batches=(2, 4),
        batch=4,
        embedding_dim=32,
        prompt_tokens=(6, 9),
        datasets={"qampari": dict(questions=64, targets=(2, 3)), "ambigqa": dict(questions=64, targets=(2, 4))},
        negatives=1000,
        timed_steps=2,
        questions=16,
        generated=3,
        search_corpus=2000,
        faiss_sizes=(20_000,),
        faiss_factory="IVF64,PQ8x4",  # faiss trains 8-bit PQ on 4 dimensions slowly (30 s on one thread)
        faiss_queries=50,
        cpu_build_seconds_per_million=0.0,
        encoder={**INF_RETRIEVER, **TINY, "num_attention_heads": 4, "head_dim": 16},
        encode_batches=(2, 4),
        encode_seconds=0.5,
        passage_tokens=(12, 16),
    )


def random_encoder(config: dict, embedding_dim: int, device: str, seed: int = 0, lora: bool = True) -> AMERQueryEncoder:
    """Notebook 04's LoRA encoder (`runs.query_encoders.build_query_encoder`'s steps) on a randomly
    initialised backbone of `config`, built on `device` at once (an 8B model initialised on the
    CPU takes minutes): bfloat16 frozen weights, LoRA r = 64 on the seven projections, float32
    projections, bfloat16 autocast."""
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(seed)
    with torch.device(device):
        backbone = AutoModel.from_config(AutoConfig.for_model(**config), dtype=torch.bfloat16)
        if lora:
            backbone = add_lora(backbone, LoraSettings())
        else:  # frozen: only the projections train
            backbone.requires_grad_(False)
        model = AMERQueryEncoder(backbone, embedding_dim)
    model.mixed_precision = True
    return model.to(device)


def question_data(size: dict, dataset: str, device: str, count: int | None = None, seed: int = 0) -> TextData:
    """Random questions of the dataset's size (or `count` of them): left-padded prompts of
    `prompt_tokens` tokens and 1536-d targets, as many per question as the dataset's range allows."""
    spec = size["datasets"][dataset]
    generator = torch.Generator().manual_seed(seed)
    count, (least, most) = count or spec["questions"], spec["targets"]
    shortest, width = size["prompt_tokens"]
    vocab = next(iter(size["backbones"].values()))["vocab_size"]
    lengths = torch.randint(shortest, width + 1, (count,), generator=generator)
    attention = (torch.arange(width)[None, :] >= width - lengths[:, None]).long()
    input_ids = torch.randint(vocab, (count, width), generator=generator) * attention
    targets = torch.randn(count, most, size["embedding_dim"], generator=generator)
    targets = torch.nn.functional.normalize(targets, dim=-1)
    counts = torch.randint(least, most + 1, (count,), generator=generator)
    mask = torch.arange(most)[None, :] < counts[:, None]
    return TextData(input_ids, attention, targets, mask).to(device)


def negative_pool(size: dict, device: str) -> torch.Tensor:
    """The float16 negative pool, unit rows."""
    pool = torch.randn(size["negatives"], size["embedding_dim"], device=device, dtype=torch.float16)
    return pool / torch.linalg.vector_norm(pool, dim=-1, keepdim=True, dtype=torch.float32).to(torch.float16)


# ----- the preflight's projection (the one place to adapt when the preflight changes) ---------------------------------


def projection(name: str, config: dict, size: dict, dataset: str, micro: int, checkpointed: bool) -> dict:
    """The preflight's projected GPU peak of one training setting, for exactly what this script puts
    on the GPU: `amer_lib.core.memory.plan_for` of the backbone's config and a `Workload` of the
    setting (no search during the step: corpus size 0)."""
    work = memory.Workload(
        finetune="lora",
        mixed_precision=True,
        batch_size=size["batch"],
        micro_batch_size=micro,
        gradient_checkpointing=checkpointed,
        prompt_tokens=size["prompt_tokens"][1],
        max_targets=size["datasets"][dataset]["targets"][1],
        embedding_dim=size["embedding_dim"],
        negatives=size["negatives"],
        training_questions=size["datasets"][dataset]["questions"],
        corpus_size=0,
    )
    plan = described_plan(json.dumps(config, sort_keys=True), work)
    return dict(
        gpu_peak=plan.gpu_peak,
        without_reserve=plan.gpu_peak - plan.reserve,  # what max_memory_allocated can see (no CUDA context)
        terms=asdict(plan),
        sequence=work.sequence,
        function="amer_lib.core.memory.plan_for",
    )


@lru_cache(maxsize=64)
def described_plan(config: str, work: memory.Workload) -> memory.MemoryPlan:
    """The preflight's plan of a backbone config (a stand-in's shape is measured once a process)."""
    return memory.plan_for(json.loads(config), work)


def projected_step_seconds(name: str, batch: int) -> dict:
    """docs/paper_scale.md's projection of one optimizer step, with its arithmetic."""
    parameters = PROJECTED_PARAMETERS.get(name, PROJECTED_PARAMETERS["llama8b"])
    seconds = batch * PROJECTED_TOKENS * 4 * parameters / (MFU * PEAK_FLOPS)
    return dict(
        seconds=seconds,
        arithmetic=f"{batch} x {PROJECTED_TOKENS} tokens x 4 x {parameters:.3g} FLOPs / ({MFU:.0%} of 989 TFLOPS)",
    )


# ----- measuring ------------------------------------------------------------------------------------------------------


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def free(device: str) -> None:
    """Memory of what went before returned to the GPU, and its peaks reset (nothing on the CPU)."""
    if device == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def resident(device: str) -> int | None:
    """Bytes allocated now (weights, data, negatives: what every step starts from)."""
    return torch.cuda.memory_allocated() if device == "cuda" else None


def peaks(device: str) -> dict:
    """The CUDA caching allocator's peaks since the last reset (None on the CPU: no allocator statistics)."""
    if device != "cuda":
        return dict(max_memory_allocated=None, max_memory_reserved=None)
    return dict(
        max_memory_allocated=torch.cuda.max_memory_allocated(), max_memory_reserved=torch.cuda.max_memory_reserved()
    )


NOT_KERNELS = {
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::_local_scalar_dense",
    "aten::lift_fresh",
    "aten::_unsafe_view",  # a view the schema does not mark as one
}
CARRIED = ("faiss-cpu", "transformers", "peft")  # the wheels a device call carries, at constraints.txt's pins


class OpCounter(TorchDispatchMode):
    """The aten operations that reach the kernels (below autograd and autocast), views and
    allocations left out: a GPU runs each as about one kernel."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._overloadpacket._qualified_op_name
        if not func.is_view and name not in NOT_KERNELS:
            self.names.append(name)
        return func(*args, **(kwargs or {}))


def profiled(step, device: str, everything: bool = False) -> dict:
    """Run `step()` once and count what it launched: on a GPU the CUDA kernels (and copies) that
    torch.profiler sees; on the CPU the operations `OpCounter` sees, and the top of them by name."""
    if device != "cuda":
        with OpCounter() as counter:
            step()
        found = dict(kind="cpu aten ops (OpCounter)", kernels=len(counter.names), by_name=top_names(counter.names))
        return {**found, "all_names": top_names(counter.names, top=None)} if everything else found
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        synchronize(device)
    # kineto's raw events: parsing 10^5 of them into torch's FunctionEvents takes seconds more
    gpu = [e.name() for e in prof.profiler.kineto_results.events() if e.device_type() == torch.autograd.DeviceType.CUDA]
    copies = [name for name in gpu if name.startswith(("Memcpy", "Memset"))]
    return dict(kind="cuda kernels (torch.profiler)", kernels=len(gpu) - len(copies), copies=len(copies))


def top_names(names: list[str], top: int | None = 15) -> dict[str, int]:
    """Each name's count, the `top` most frequent (all for None)."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1])[:top])


def out_of_memory(error: Exception) -> dict:
    """'OOM' with the bytes the failed allocation asked for (from torch's message)."""
    text = str(error)
    found = re.search(r"Tried to allocate ([\d.]+) (GiB|MiB|KiB|B)", text)
    units = {"GiB": GIB, "MiB": 2**20, "KiB": 2**10, "B": 1}
    asked = int(float(found.group(1)) * units[found.group(2)]) if found else None
    return dict(status="OOM", bytes_asked=asked, message=text.splitlines()[0][:300])


# ----- part 1: training -----------------------------------------------------------------------------------------------


def training(size: dict, deadline: float, on_row=None) -> list[dict]:
    """Every (dataset, backbone, micro-batch, checkpointing) setting that fits the part's time:
    peaks beside the projection, seconds a step (median of the timed steps after a warm-up step),
    kernels a step at the smaller micro-batch. QAMPARI's settings of both backbones come first;
    a model is built for each dataset, and its plain settings run before its checkpointed ones
    (checkpointing is switched on once and stays on). `on_row(rows)` after each measured setting
    (the record written as it grows: a call cut short keeps what was measured)."""
    device = size["device"]
    rows = []
    free(device)
    pool = negative_pool(size, device)
    for dataset in size["datasets"]:
        data = question_data(size, dataset, device)
        for name, config in size["backbones"].items():
            settings = [(m, c) for c in (False, True) for m in size["micro_batches"]]
            heads = [dict(backbone=name, dataset=dataset, micro_batch=m, checkpointing=c) for m, c in settings]
            for head in heads:
                head["projected"] = projection(name, config, size, dataset, head["micro_batch"], head["checkpointing"])
                head["projected_step"] = projected_step_seconds(name, size["batch"])
            if time.perf_counter() > deadline:
                rows += [{**head, "status": "skipped: time"} for head in heads]
                continue
            began = time.perf_counter()
            model = random_encoder(config, size["embedding_dim"], device)
            built, last = time.perf_counter() - began, 0.0
            for head in heads:
                if time.perf_counter() + 1.2 * last > deadline:
                    rows.append({**head, "status": "skipped: time"})
                    continue
                if head["checkpointing"] and not getattr(model, "_checkpointed", False):
                    checkpointing.enable(model.backbone)
                    model._checkpointed = True
                began = time.perf_counter()
                profile = head["micro_batch"] == size["micro_batches"][0]
                row = {**head, "build_seconds": built}
                row.update(
                    training_setting(model, data, pool, size, head["micro_batch"], head["checkpointing"], profile)
                )
                last = row["wall_seconds"] = time.perf_counter() - began
                row.update(ratios(row))
                rows.append(row)
                print(summary_line(row), flush=True)
                if on_row is not None:
                    on_row(rows)
            model = None
            free(device)
    return rows


def training_setting(model, data, pool, size: dict, micro: int, checkpointed: bool, profile: bool) -> dict:
    """One setting with a fresh AdamW: a warm-up step, the timed steps, and with `profile` a step
    whose kernels are counted (and on a GPU one more whose operations `OpCounter` counts, the
    CPU's measure of the same step)."""
    device = size["device"]
    config = TrainConfig(
        n_outputs=int(data.mask.sum(-1).max()),
        steps=1000,
        batch_size=size["batch"],
        lr=5e-5,
        temperature=0.05,
        matched_loss="sum",
        mixed_precision=True,
        micro_batch_size=micro,
        gradient_checkpointing=checkpointed,
    )
    params, optimizer, _ = _adamw(model, config)
    model.train()
    free(device)
    record, seconds, failure = dict(resident=resident(device)), [], None
    draws = []

    def step(number: int) -> None:
        generator = _step_generator(0, number)
        indices = torch.randperm(len(data), generator=generator)[: size["batch"]]
        batch = draw_batch(data, indices, pool, config, P_SAMPLING, generator)
        draws.append(int(batch.targets.shape[1]))
        _optimizer_step(model, data, batch, config, params, optimizer)

    try:
        for number in range(1 + size["timed_steps"]):
            synchronize(device)
            began = time.perf_counter()
            step(number)
            synchronize(device)
            if number:
                seconds.append(time.perf_counter() - began)
        record.update(peaks(device))
        if profile:
            record["kernels"] = profiled(lambda: step(1 + size["timed_steps"]), device)
            record["kernels"]["positions"] = draws[-1]
            if device == "cuda" and not checkpointed:  # the CPU's count of the same step, for finding 6
                record["ops"] = profiled(lambda: step(2 + size["timed_steps"]), "cpu")
                record["ops"]["positions"] = draws[-1]
    except torch.OutOfMemoryError as error:
        failure = out_of_memory(error)
        failure.update(peaks(device))
    except Exception as error:  # recorded, and the next setting runs
        failure = dict(status=f"failed: {type(error).__name__}: {str(error)[:300]}")
    optimizer.zero_grad(set_to_none=True)
    optimizer.state.clear()  # AdamW's moments: the next setting starts its own
    free(device)
    if failure is not None:
        return failure
    micro_batches = -(-size["batch"] // micro)
    for counted in (record.get("kernels"), record.get("ops")):
        if counted:  # positions: the backbone's calls a micro-batch (the prompt pass and n - 1 fed-back positions)
            counted["per_position_per_micro_batch"] = counted["kernels"] / (micro_batches * counted["positions"])
    record.update(
        status="ok",
        step_seconds=seconds,
        median_step_seconds=statistics.median(seconds) if seconds else None,
        decoded_positions=draws,
        micro_batches=micro_batches,
        sampling_p=P_SAMPLING,
    )
    return record


def ratios(row: dict) -> dict:
    """Measured over projected: reserved against the whole projected peak (the CUDA reserve
    counted), allocated against the peak less the reserve; the step's seconds against the
    projection's."""
    projected = row.get("projected") or {}
    found = {}
    if row.get("max_memory_reserved") and projected:
        found["reserved_over_projected"] = row["max_memory_reserved"] / projected["gpu_peak"]
        found["allocated_over_projected"] = row["max_memory_allocated"] / projected["without_reserve"]
    if row.get("median_step_seconds") and row.get("projected_step"):
        found["step_over_projected"] = row["median_step_seconds"] / row["projected_step"]["seconds"]
    return found


def summary_line(row: dict) -> str:
    head = f"{row['backbone']} {row['dataset']} micro {row['micro_batch']} ckpt {row['checkpointing']}: "
    if row.get("status") != "ok":
        return head + str(row.get("status"))
    gib = lambda value: "-" if value is None else f"{value / GIB:.1f} GiB"
    return head + (
        f"allocated {gib(row['max_memory_allocated'])} reserved {gib(row['max_memory_reserved'])} "
        f"projected {gib(row['projected']['gpu_peak'])}; step {row['median_step_seconds']:.3f} s "
        f"(projected {row['projected_step']['seconds']:.2f}); {(row.get('kernels') or {}).get('kernels', '-')} kernels"
    )


# ----- part 2: generation, export, search -----------------------------------------------------------------------------


def generation(size: dict, deadline: float) -> dict:
    """The first backbone's encoder generating `generated` vectors for `questions` questions in
    bfloat16 (`runs.query_encoders.generated_vectors`, batches of 128), written as a model folder
    (`saved.save_pretrained`), and its vectors searched round-robin in an exact index."""
    from amer_lib.core.saved import save_pretrained
    from amer_lib.core.search import VectorIndex, _use_gpu, multi_vector_search, unit_norm
    from amer_lib.runs.query_encoders import generated_vectors, token_prompts

    device = size["device"]
    name, config = next(iter(size["backbones"].items()))
    free(device)
    model = random_encoder(config, size["embedding_dim"], device).eval()
    data = question_data(size, "qampari", device, count=size["questions"])
    n = size["generated"]
    prompts = lambda rows: token_prompts(model, data.input_ids[rows], data.attention_mask[rows], batch_size=128)
    generated_vectors(model, prompts(slice(0, 128)), n)  # warm-up
    began = time.perf_counter()
    vectors = generated_vectors(model, prompts(slice(None)), n)
    seconds = time.perf_counter() - began
    record = dict(
        backbone=name,
        questions=len(vectors),
        n=n,
        batch=128,
        generate_seconds=seconds,
        questions_per_second=len(vectors) / seconds,
        dtype=str(next(model.backbone.parameters()).dtype),
        **peaks(device),
    )
    with tempfile.TemporaryDirectory() as scratch:
        began = time.perf_counter()
        folder = save_pretrained(model, Path(scratch) / "model", backbone=name, n_queries=n)
        record["export_seconds"] = time.perf_counter() - began
        record["export_bytes"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    model = None
    free(device)
    rng = np.random.default_rng(0)
    corpus = unit_norm(rng.standard_normal((size["search_corpus"], size["embedding_dim"]), dtype=np.float32))
    began = time.perf_counter()
    index = VectorIndex(corpus)
    record["index_seconds"] = time.perf_counter() - began
    k, depth = min(100, len(corpus) // 10), min(500, len(corpus) // 4)
    began = time.perf_counter()
    ranked = multi_vector_search(index, vectors, k=k, depth=depth)
    record.update(
        search_corpus=len(corpus),
        search_on_gpu=_use_gpu(None),
        k=k,
        depth=depth,
        search_seconds=time.perf_counter() - began,
        ranked_shape=list(np.shape(ranked)),
        status="ok",
    )
    return record


# ----- part 3: faiss IVF-PQ on the GPU against the CPU build ----------------------------------------------------------


class InMemoryShards:
    """Float16 rows held in memory, read as `EmbeddingShards` is (what `IVFPQIndex` and
    `ShardedFlatIndex` take)."""

    def __init__(self, rows: np.ndarray):
        self.shards, self.dim = [rows], rows.shape[1]

    def __len__(self) -> int:
        return len(self.shards[0])

    def rows(self, rows: np.ndarray, dtype: np.dtype = np.float32) -> np.ndarray:
        return self.shards[0][rows].astype(dtype)


def tree_vectors(n: int, dim: int, chunk: int = 100_000) -> np.ndarray:
    """`bench_scale.TreeVectors`' first n documents as float16 rows (the vectors of its 1M and 4M
    measurements on the CPU)."""
    from bench_scale import TreeVectors

    encoder = TreeVectors(dim)
    rows = np.empty((n, dim), dtype=np.float16)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        rows[start:stop] = encoder.encode_documents([str(i) for i in range(start, stop)], chunk)
    return rows


def faiss_part(size: dict, deadline: float) -> dict:
    """IVF-PQ (`core.search.IVFPQIndex`) trained, added and searched on the GPU and with the CPU
    build on the same vectors, recall@100 of both against exact search (`ShardedFlatIndex`)."""
    import faiss
    from bench_scale import held_out_queries

    from amer_lib.core.search import IVFPQIndex, ShardedFlatIndex, recall_against_exact

    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    record = dict(faiss=faiss.__version__, faiss_gpus=gpus, factory=size["faiss_factory"], nprobe=32, sizes=[])
    dim, k, last = size["embedding_dim"], 100, 0.0
    for n in size["faiss_sizes"]:
        if time.perf_counter() + 4.5 * last > deadline:  # the next size: about four times the last one
            record["sizes"].append(dict(n=n, status="skipped: time"))
            continue
        began = time.perf_counter()
        shards = InMemoryShards(tree_vectors(n, dim))
        queries = held_out_queries(n, dim, size["faiss_queries"])
        entry = dict(n=n, dim=dim, queries=len(queries), vectors_seconds=time.perf_counter() - began, builds={})
        exact_began = time.perf_counter()
        _, exact = ShardedFlatIndex(shards, use_gpu=gpus > 0).search(queries, min(k, n // 10))
        entry["exact_seconds"], entry["exact_on_gpu"] = time.perf_counter() - exact_began, gpus > 0
        for build in ("gpu", "cpu"):
            if build == "gpu" and gpus == 0:
                reason = f"skipped: faiss {faiss.__version__} here has no GPU (the CPU build)"
                entry["builds"][build] = dict(status=reason)
                continue
            estimate = size["cpu_build_seconds_per_million"] * n / 1e6 if build == "cpu" else 0.0
            if time.perf_counter() + estimate > deadline:
                entry["builds"][build] = dict(status="skipped: time")
                continue
            index = IVFPQIndex(shards, size["faiss_factory"], nprobe=32, use_gpu=build == "gpu")
            searched = time.perf_counter()
            _, rows = index.search(queries, exact.shape[1])
            entry["builds"][build] = dict(
                status="ok",
                train_seconds=index.build_seconds["train"],
                add_seconds=index.build_seconds["add"],
                search_seconds=time.perf_counter() - searched,
                recall_at_100=recall_against_exact(rows, exact),
            )
            del index
        del shards
        gc.collect()
        last = time.perf_counter() - began
        entry["wall_seconds"] = last
        record["sizes"].append(entry)
    record["status"] = "ok"
    return record


# ----- part 4: inf-retriever's shape encoding passages ----------------------------------------------------------------


def encoding(size: dict, deadline: float) -> dict:
    """A random-weight model of inf-retriever-v1-1.5b's shape encoding random passages of 128-160
    tokens (right-padded to the batch's longest) in bfloat16, last-token pooling: passages a
    second at each batch size, beside `benchmarks/projection.py`'s assumed rate."""
    from transformers import AutoConfig, AutoModel

    device = size["device"]
    free(device)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModel.from_config(AutoConfig.for_model(**size["encoder"]), dtype=torch.bfloat16).eval()
    parameters = sum(p.numel() for p in model.parameters())
    shortest, longest = size["passage_tokens"]
    mean_tokens = (shortest + longest) / 2
    projected = MFU * PEAK_FLOPS / (2 * ENCODER_PARAMETERS * mean_tokens)
    record = dict(
        parameters=parameters,
        passage_tokens=[shortest, longest],
        projected_passages_per_second=projected,
        projection=f"{MFU:.0%} of 989 TFLOPS / (2 x 1.54e9 x {mean_tokens:.0f} tokens)",
        batches=[],
    )
    generator = torch.Generator().manual_seed(0)
    for batch in size["encode_batches"]:
        if time.perf_counter() > deadline:
            record["batches"].append(dict(batch=batch, status="skipped: time"))
            continue
        lengths = torch.randint(shortest, longest + 1, (batch,), generator=generator)
        mask = (torch.arange(longest)[None, :] < lengths[:, None]).long()
        ids = (torch.randint(size["encoder"]["vocab_size"], (batch, longest), generator=generator) * mask).to(device)
        mask, last = mask.to(device), (lengths - 1).to(device)

        def encode():
            with torch.inference_mode():
                hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
                return torch.nn.functional.normalize(hidden[torch.arange(batch, device=device), last].float(), dim=-1)

        free(device)
        try:
            encode()  # warm-up
            synchronize(device)
            began, done = time.perf_counter(), 0
            while done < 2 or time.perf_counter() - began < size["encode_seconds"]:
                encode()
                done += 1
                if time.perf_counter() > deadline:
                    break
            synchronize(device)
            seconds = time.perf_counter() - began
            rate = done * batch / seconds
            entry = dict(batch=batch, status="ok", batches=done, seconds=seconds, passages_per_second=rate)
            record["batches"].append({**entry, **peaks(device)})
        except torch.OutOfMemoryError as error:
            record["batches"].append(dict(batch=batch, **out_of_memory(error)))
    model = None
    free(device)
    record["status"] = "ok"
    return record


# ----- the record -----------------------------------------------------------------------------------------------------

PARTS = {"training": training, "generation": generation, "faiss": faiss_part, "encoding": encoding}


def machine(device: str) -> dict:
    """The device, its memory and driver, and the versions that shaped the numbers."""
    import subprocess

    import peft
    import transformers

    from amer_lib.io import git_commit

    try:
        import faiss

        faiss_version = f"{faiss.__version__} ({faiss.get_num_gpus() if hasattr(faiss, 'get_num_gpus') else 0} GPUs)"
    except ImportError:
        faiss_version = None
    facts = dict(
        device=device,
        python=platform.python_version(),
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        transformers=transformers.__version__,
        peft=peft.__version__,
        faiss=faiss_version,
        cpu_threads=torch.get_num_threads(),
        git_commit=git_commit(ROOT),
    )
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        try:
            query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            driver = subprocess.run(query, capture_output=True, text=True, timeout=20).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            driver = None
        facts.update(name=torch.cuda.get_device_name(), memory=properties.total_memory, driver=driver)
    else:
        facts.update(name=platform.processor() or platform.machine(), memory=None, driver=None)
    return facts


def markdown(record: dict) -> str:
    """The record as Markdown tables."""
    gib = lambda value: "-" if value is None else f"{value / GIB:.1f}"
    number = lambda value, digits=3: "-" if value is None else f"{value:.{digits}g}"
    facts = record["machine"]
    lines = [
        "# The paper's shapes on one device (benchmarks/device/paper_shapes.py)",
        "",
        f"Device: {facts['name']} ({gib(facts['memory'])} GiB, driver {facts['driver']}), torch {facts['torch']} "
        f"(CUDA {facts['torch_cuda']}), transformers {facts['transformers']}, peft {facts['peft']}, faiss "
        f"{facts['faiss']}, commit {facts['git_commit']}; "
        f"{'tiny CPU rehearsal' if record['tiny'] else 'paper shapes'}.",
        "",
    ]
    parts = record["parts"]
    training_part = parts.get("training", {})
    lines += [f"## training: {training_part.get('status')}", ""]
    if training_part.get("status", "").startswith("failed"):
        lines += ["```", *training_part["result"], "```", ""]
    if training_part.get("status") in ("ok", "running"):
        lines += [
            "Batch 128 (4 in the rehearsal), LoRA r = 64, bfloat16; projected: `amer_lib.core.memory.plan`.",
            "",
            "| backbone | data | micro-batch | checkpointing | status | allocated GiB | reserved GiB | projected GiB "
            "| reserved / projected | step s | projected s | kernels a step | per position per micro-batch |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in training_part["result"]:
            kernels = row.get("kernels") or {}
            lines.append(
                f"| {row['backbone']} | {row['dataset']} | {row['micro_batch']} | {row['checkpointing']} | "
                f"{row['status']} | {gib(row.get('max_memory_allocated'))} | {gib(row.get('max_memory_reserved'))} | "
                f"{gib((row.get('projected') or {}).get('gpu_peak'))} | {number(row.get('reserved_over_projected'))} | "
                f"{number(row.get('median_step_seconds'))} | "
                f"{number((row.get('projected_step') or {}).get('seconds'))} | {kernels.get('kernels', '-')} | "
                f"{number(kernels.get('per_position_per_micro_batch'), 4)} |"
            )
        lines.append("")
    for name in ("generation", "faiss", "encoding"):
        part = parts.get(name, {})
        lines += [f"## {name}", "", f"status: {part.get('status')}, {number(part.get('seconds'))} s", ""]
        result = part.get("result") if part.get("status") == "ok" else None
        if part.get("status", "").startswith("failed"):
            lines += ["```", *part["result"], "```"]
        if name == "faiss" and isinstance(result, dict):
            lines += ["| n | build | status | train s | add s | search s | recall@100 |", "|---" * 7 + "|"]
            for entry in result["sizes"]:
                for build, got in entry.get("builds", {"-": {"status": entry.get("status")}}).items():
                    lines.append(
                        f"| {entry['n']} | {build} | {got['status']} | {number(got.get('train_seconds'))} | "
                        f"{number(got.get('add_seconds'))} | {number(got.get('search_seconds'))} | "
                        f"{number(got.get('recall_at_100'))} |"
                    )
        elif name == "encoding" and isinstance(result, dict):
            lines += [
                f"projected: {result['projected_passages_per_second']:.0f} passages a second ({result['projection']})",
                "",
                "| batch | status | passages a second | reserved GiB |",
                "|---|---|---|---|",
            ]
            lines += [
                f"| {b['batch']} | {b['status']} | {number(b.get('passages_per_second'), 4)} | "
                f"{gib(b.get('max_memory_reserved'))} |"
                for b in result["batches"]
            ]
        elif isinstance(result, dict):
            lines += [f"- {key}: {value}" for key, value in result.items()]
        lines.append("")
    return "\n".join(lines)


def write(record: dict, out: Path) -> None:
    write_json(out / "paper_shapes.json", record)
    write_text(out / "paper_shapes.md", markdown(record))


def run(args: argparse.Namespace) -> dict:
    size = shapes(args.tiny)
    device = size["device"]
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: torch sees no GPU here; rehearse on the CPU with --tiny")
    if args.tiny:  # tiny operations on a shared CPU: threads cost more than they give
        torch.set_num_threads(1)
        import faiss

        faiss.omp_set_num_threads(1)
    clock = Clock(args.budget)
    record = dict(tiny=args.tiny, budget=args.budget, caps=CAPS, machine=machine(device), parts={})
    write(record, args.out)
    for name, function in PARTS.items():
        if name not in args.parts:
            record["parts"][name] = dict(status="skipped: not asked")
            continue
        if clock.left() <= 0:
            record["parts"][name] = dict(status="skipped: time")
            continue
        began = time.perf_counter()
        print(f"--- {name} ({clock.left():.0f} s left)", flush=True)

        def written_so_far(rows, name=name):
            record["parts"][name] = dict(status="running", seconds=time.perf_counter() - began, result=rows)
            write(record, args.out)

        options = {"on_row": written_so_far} if name == "training" else {}
        try:
            result, status = function(size, clock.part(CAPS[name]), **options), "ok"
        except Exception as error:  # one part's failure is recorded; the next parts still run
            import traceback

            result, status = traceback.format_exc().splitlines()[-12:], f"failed: {type(error).__name__}: {error}"
            free(device)
        record["parts"][name] = dict(status=status, seconds=time.perf_counter() - began, result=result)
        write(record, args.out)
    print(markdown(record))
    return record


# ----- finding 6 on the CPU: operations per decoded position ----------------------------------------------------------


MODES = {"plain": (False, True), "checkpointed": (True, True), "no_lora": (False, False)}  # checkpointing, LoRA


def count_ops(path: Path) -> dict:
    """The operations `OpCounter` sees (about one GPU kernel each) in one training micro-batch of 4 questions
    with every fed-back position the model's own (p = 1), on CPU stand-ins of Llama-3.1-8B's
    structure (its GQA ratio, LoRA r = 64 on the seven projections, bfloat16 autocast) at a tiny
    width, for 2 and 4 layers and 5 and 8 decoded positions, plain, checkpointed and without LoRA
    (only the projections trained: what the adapters add), and the optimizer step's at 2 and 4
    layers; fitted as a + b L + c n + d L n and extrapolated to 32 layers."""
    torch.set_num_threads(1)
    counts, names, optimizer_ops = {}, {}, {}
    for mode, (checkpointed, lora) in MODES.items():
        for layers in (2, 4):
            for n in (5, 8):
                size = shapes(True)
                config = {**size["backbones"]["llama8b"], "num_hidden_layers": layers}
                model = random_encoder(config, size["embedding_dim"], "cpu", lora=lora).train()
                if checkpointed:
                    checkpointing.enable(model.backbone)
                data = question_data({**size, "datasets": {"q": dict(questions=4, targets=(n, n))}}, "q", "cpu")
                train = TrainConfig(n_outputs=n, steps=10, batch_size=4, mixed_precision=True)
                params, optimizer, _ = _adamw(model, train)
                batch = draw_batch(data, torch.arange(4), negative_pool(size, "cpu"), train, 1.0, _step_generator(0, 0))
                accumulate_gradients(model, data, batch, train)  # warm-up
                counted = profiled(lambda: accumulate_gradients(model, data, batch, train), "cpu", everything=True)
                key = f"{mode} L={layers} n={n}"
                counts[key], names[key] = counted["kernels"], counted["all_names"]
                if n == 5:
                    step = lambda: (torch.nn.utils.clip_grad_norm_(params, 1.0), optimizer.step())
                    optimizer_ops[f"{mode} L={layers}"] = profiled(step, "cpu")["kernels"]
    record = dict(counts=counts, optimizer_step_ops=optimizer_ops, fits={}, at_8b={})
    for mode in MODES:
        a, b, per_n, d = fit({(layers, n): counts[f"{mode} L={layers} n={n}"] for layers in (2, 4) for n in (5, 8)})
        record["fits"][mode] = dict(a=a, b=b, c=per_n, d=d)
        position = per_n + 32 * d
        fixed = a + 32 * b
        two, four = optimizer_ops[f"{mode} L=2"], optimizer_ops[f"{mode} L=4"]
        optimizer_32 = two + (four - two) / 2 * 30
        qampari = 4 * (fixed + 8 * position) + optimizer_32
        by_layer_and_position = {
            op: (names[f"{mode} L=4 n=8"].get(op, 0) - names[f"{mode} L=2 n=8"].get(op, 0))
            - (names[f"{mode} L=4 n=5"].get(op, 0) - names[f"{mode} L=2 n=5"].get(op, 0))
            for op in names[f"{mode} L=4 n=8"]
        }
        record["at_8b"][mode] = dict(
            per_position_per_micro_batch=position,
            per_micro_batch_fixed=fixed,
            optimizer_step=optimizer_32,
            qampari_step_n8_4_micro_batches=qampari,
            launch_seconds_at_5_to_10_us=[qampari * 5e-6, qampari * 10e-6],
            per_layer_per_position_by_op=top_names_counted(by_layer_and_position, 6),
            arithmetic=(
                f"per position per micro-batch c + 32 d = {per_n:.1f} + 32 x {d:.2f}; fixed a + 32 b = {a:.0f} + 32 x "
                f"{b:.1f}; a QAMPARI step = 4 x (fixed + 8 x per position) + optimizer {optimizer_32:.0f}"
            ),
        )
    write_json(path, record)
    return record


def fit(counts: dict[tuple[int, int], float]) -> tuple[float, float, float, float]:
    """(a, b, c, d) of count = a + b L + c n + d L n through the four counts at L = 2, 4 layers and
    n = 5, 8 decoded positions."""
    d = ((counts[4, 8] - counts[2, 8]) - (counts[4, 5] - counts[2, 5])) / (2 * 3)
    b = (counts[4, 5] - counts[2, 5]) / 2 - 5 * d
    c = (counts[2, 8] - counts[2, 5]) / 3 - 2 * d
    a = counts[2, 5] - 2 * b - 5 * c - 10 * d
    return a, b, c, d


def top_names_counted(counts: dict[str, float], divisor: float, top: int = 12) -> dict[str, float]:
    """The largest of `counts` divided by `divisor` (the fit's L x n differences: 2 layers x 3 positions)."""
    return {op: value / divisor for op, value in sorted(counts.items(), key=lambda item: -item[1])[:top] if value}


def pins(names: tuple[str, ...] = CARRIED) -> list[str]:
    """`name==version` of each of `names` as constraints.txt pins it."""
    pinned = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==")
            pinned[name.lower()] = f"{name}=={version}"
    missing = [name for name in names if name not in pinned]
    if missing:
        raise ValueError(f"constraints.txt pins no version of {', '.join(missing)}; pin them there first")
    return [pinned[name] for name in names]


def pack(folder: Path) -> None:
    """The pinned wheels of `CARRIED` for the device machine's Python 3.12, into `folder`."""
    import subprocess

    platform_tags = ["--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64"]
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    command += ["--python-version", "3.12", "--implementation", "cp", *platform_tags, "-d", str(folder), *pins()]
    subprocess.run(command, check=True)
    sizes = {p.name: round(p.stat().st_size / 2**20, 1) for p in sorted(folder.glob("*.whl"))}
    print(f"{folder}: {sizes} MiB, {sum(sizes.values()):.1f} in all")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="the folder for paper_shapes.json and paper_shapes.md")
    parser.add_argument("--tiny", action="store_true", help="every part at tiny shapes on the CPU (the rehearsal)")
    parser.add_argument("--budget", type=float, default=BUDGET, help="seconds for all parts (default %(default)s)")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS), help="which parts to run")
    parser.add_argument(
        "--count-ops", type=Path, metavar="JSON", help="instead: finding 6's CPU operation count, written to JSON"
    )
    parser.add_argument("--pack", action="store_true", help="instead: the pinned wheels the device call carries, .whl/")
    args = parser.parse_args(argv)
    if args.pack:
        pack(ROOT / ".whl")
        return
    if args.count_ops:
        record = count_ops(args.count_ops)
        for mode, found in record["at_8b"].items():
            print(mode, found["arithmetic"], f"= {found['qampari_step_n8_4_micro_batches']:.0f} a step")
        return
    if args.out is None:
        parser.error("--out is required (or --count-ops JSON)")
    run(args)


if __name__ == "__main__":
    main()
