"""The GPU's own numbers (issues 59 and 69): the paper's shapes on a lent GPU, in one device command
of at most 6 minutes, GPU numbers only, the most valuable first.

Run it first in any session lent a device, before any other use of it. The lent machine of this
workplace reaches no network and holds torch, transformers 5.17 and peft but no faiss; the
repository's gradient checkpointing needs the transformers constraints.txt pins (5.17 fails it with
an IndexError in `checkpointing._checkpointed`), so the pinned wheels of faiss-cpu, transformers and
peft travel in `.whl/` (git ignores it; 31.7 MiB), made here once by

    .venv/bin/python benchmarks/device/paper_shapes.py --pack

then the device call, from the repository root, with `carry: [".whl"]` and `timeout_s: 360` (the
record is rewritten atomically after every setting, so even a cut at the limit keeps all but the
setting in flight):

    start=$(date +%s.%N) && \
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && \
    PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 benchmarks/device/paper_shapes.py --out $OUT --started $start

(constraints.txt's faiss-gpu==1.15.1 is a 135 MB wheel that needs CUDA 12's runtime wheels beside
it, more than a call carries). On a GPU machine with network, the repository with its `gpu`
extra, pinned by constraints.txt:

    pip install -c constraints.txt -e ".[gpu]" && python benchmarks/device/paper_shapes.py --out OUT

The CPU rehearsal (the test runs it): `python benchmarks/device/paper_shapes.py --tiny --out DIR`,
every part at tiny shapes (2-layer stand-ins of the same configs, small corpora).

The budget. The device gives a session 15 minutes in all, the machine's start and every idle wait
included, and at most 10 minutes a command; a first command of at most 6 minutes (`WALL`, 360 s)
leaves time to read its record and run it again:

    installing the carried wheels (pip, --no-compile)              <= 25 s   SETUP["install"]
    Python, torch / transformers / peft imports, CUDA init, facts  <= 20 s   SETUP["imports_and_cuda"]
    the parts (BUDGET = the sum of CAPS)                              285 s
        smoke 20 + llama8b 130 + llama1b 40 + generation 40 + encoding 25 + ambigqa 30
    margin: the last record written, one prediction's error          30 s   MARGIN
    the command                                                       360 s   WALL

With `--started` (the command's own start, as above) the parts get at most what is left of
`WALL - MARGIN` once the script is up, so a slow install shortens the parts, not the rerun. Each
part's deadline is its start plus its cap (or what is left, if less); time a part leaves unused
goes to the parts after it, and AmbigQA's shape runs only on what is left. Inside a part nothing
starts that its forecast (`Forecast`: each setting's step time measured, times the steps it will
run, the profiled, counted and checkpointed steps' factors measured or bounded by `BOUNDS`, each
model build from the builds measured) says would end past the deadline: it is recorded
"skipped: time" beside its prediction. A started setting runs to its end, so what a prediction
may miss is bounded by the margin.

The parts, in order (the record rewritten atomically after each setting, batch and part:
`paper_shapes.json` and `paper_shapes.md` under --out):

smoke. Every part below at tiny shapes on the GPU (one 2-layer stand-in, two settings, a few
   questions): seconds, and it finds an API error (the profiler's CUDA path, OpCounter on CUDA,
   generation, export) before the big shapes spend minutes on it.
llama8b, llama1b. Random-weight Llama-3.1-8B, then Llama-3.2-1B (their published configs, no
   download) on QAMPARI's shape, with LoRA r = 64 and the two projections as notebook 04's paper
   files set them, bfloat16, through the project's training step (`train.optimizer_step`: batch
   128 cut into micro-batches of 32 and 64, scheduled sampling at p = 0.5, in-batch negatives, the
   matched loss) without and with gradient checkpointing: a warm-up step and the timed steps;
   torch's peak allocated and reserved memory and the device's own use (total less
   `torch.cuda.mem_get_info`'s free, its maximum sampled after each step) beside the preflight's
   projection; seconds a step beside the projected 0.67 s; then, in its own `try`, the CUDA kernels
   of one more step (torch.profiler, kineto's GPU buffer raised: `raise_kineto_buffer`) and the
   aten operations `OpCounter` sees in another.
generation. bfloat16 generation of n vectors for a batch of questions, export
   (`saved.save_pretrained`, what `python -m amer_lib.export` writes) and search of the generated
   vectors, each batch and stage under the deadline.
encoding. inf-retriever-v1-1.5b's shape (Qwen2-1.5B) encoding random passages of 128-160 tokens in
   bfloat16: passages a second at a few batch sizes, beside `benchmarks/projection.py`'s rate.
faiss. IVF-PQ training, adding and search on 1M tree vectors against exact search. Only where
   faiss sees a GPU, or when asked (`--parts faiss`): the carried CPU build returns no GPU number.
ambigqa. Both backbones on AmbigQA's shape, on what is left.

A failure never loses a measurement: a setting's profiler failing keeps its step times and peaks
(the error under `profiler_error`); an out-of-memory setting keeps the steps it timed; a part that
fails between settings keeps its rows and records the traceback beside them under `error`.

`--count-ops JSON` (CPU, 30 s) answers issue 59's finding 6 as far as a CPU can: operations per
decoded position per micro-batch at 8B's depth, counted (`OpCounter`) on stand-ins of 2 and 4
layers and extrapolated by layers (`paper_shapes_cpu_ops.json` beside this file).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # amer_lib from this checkout (not installed on the device machine)
sys.path.insert(0, str(ROOT / "benchmarks"))

from amer_lib.core import checkpointing  # noqa: E402
from amer_lib.core.backbones import LoraSettings, add_lora, backbone_config  # noqa: E402
from amer_lib.core.loss import MatchedLoss  # noqa: E402
from amer_lib.core.model import AMERQueryEncoder  # noqa: E402
from amer_lib.core.train import (  # noqa: E402
    MemoryLayout,
    Optimizer,
    TrainConfig,
    accumulate_gradients,
    adamw,
    draw_batch,
    optimizer_step,
    step_generator,
)
from amer_lib.data.datasets import TextData  # noqa: E402
from amer_lib.io import write_json, write_text  # noqa: E402
from amer_lib.runs import memory  # noqa: E402

GIB = 2**30
# the budget arithmetic of the module docstring (a test checks that it adds up)
WALL = 360.0  # the device command, seconds: 6 of the session's 15 minutes, a rerun left
SETUP = {"install": 25.0, "imports_and_cuda": 20.0}  # bounds on what runs before the parts
MARGIN = 30.0  # the last record written and one prediction's error
# each part's share, in the order they run; AmbigQA's shape last, on what is left
CAPS = {"smoke": 20.0, "llama8b": 130.0, "llama1b": 40.0, "generation": 40.0, "encoding": 25.0, "ambigqa": 30.0}
BUDGET = sum(CAPS.values())  # 285 s: WALL less SETUP and MARGIN
FAISS_CAP = 60.0  # only where faiss sees a GPU or when asked: it takes from the parts after it
ORDER = ("smoke", "llama8b", "llama1b", "generation", "encoding", "faiss", "ambigqa")
TRAINING_PARTS = {  # part: (datasets, backbones)
    "llama8b": (("qampari",), ("llama8b",)),
    "llama1b": (("qampari",), ("llama1b",)),
    "ambigqa": (("ambigqa",), ("llama8b", "llama1b")),
}
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
# What a part is predicted to take before the run has measured it: upper bounds, each factor replaced
# by the run's own measurement as soon as there is one (`Forecast`)
BOUNDS = dict(
    warmup=3.0,  # a setting's first step over a timed step (the allocator grows, cuBLAS picks its kernels)
    profiled=2.5,  # a step under torch.profiler over a timed step (kineto's records, then reading them back)
    counted=4.0,  # a step under OpCounter (one Python call per operation) over a timed step
    checkpointed=1.6,  # a checkpointed step over a plain one: the forward again (4/3 of the FLOPs; 377k/258k ops)
    launch=6.0,  # a first step over its projected seconds: launch-bound (issue 69: 1.3-3.8 s against 0.67 s)
    build_seconds_per_gib=2.0,  # a random-weight model built on the device, per GiB of bfloat16 weights (8B: 28 s)
    setting_seconds=2.0,  # a setting's own overhead: AdamW's state, free(), the record written
)
KINETO_BUFFER_MB = 1024  # kineto's GPU activity buffers, raised from its default 128 MB
KINETO_DEFAULT_MB = 128
RECORD_BYTES = 128  # a bound on one kineto activity record's bytes (kernel records are the largest)


class Clock:
    """The run's wall-clock budget and each part's cap within it, read on `now` (a parameter: the
    rehearsal's clock can run out on demand)."""

    def __init__(self, budget: float, now: Callable[[], float] = time.perf_counter):
        self.now = now
        self.end = now() + budget

    def left(self) -> float:
        return self.end - self.now()

    def part(self, cap: float) -> float:
        """The deadline (on `now`'s scale) of a part capped at `cap` seconds."""
        return self.now() + min(cap, max(0.0, self.left()))


# ----- shapes ---------------------------------------------------------------------------------------------------------


def shapes(tiny: bool, device: str | None = None) -> dict:
    """Every size the parts use: the paper's, or the CPU rehearsal's (on `device`, the CPU unless
    given: the smoke runs the rehearsal's shapes on the GPU)."""
    if not tiny:
        return dict(
            device=device or "cuda",
            backbones={name: backbone_config(name) for name in ("llama8b", "llama1b")},
            micro_batches=(32, 64),
            batch=BATCH,
            embedding_dim=EMBEDDING_DIM,
            prompt_tokens=PROMPT_TOKENS,
            datasets=DATASETS,
            negatives=NEGATIVES,
            timed_steps=3,
            questions=512,
            generate_batch=128,
            generated=5,
            search_corpus=250_000,
            # bounds, not measurements: saving an 8B model's adapters (0.6 GiB of float32) and the
            # corpus drawn, indexed and searched on the CPU
            export_seconds=20.0,
            search_seconds=25.0,
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
        device=device or "cpu",
        backbones=small,
        micro_batches=(2, 4),
        batch=4,
        embedding_dim=32,
        prompt_tokens=(6, 9),
        datasets={"qampari": dict(questions=64, targets=(2, 3)), "ambigqa": dict(questions=64, targets=(2, 4))},
        negatives=1000,
        timed_steps=2,
        questions=16,
        generate_batch=8,
        generated=3,
        search_corpus=2000,
        export_seconds=2.0,
        search_seconds=2.0,
        faiss_sizes=(20_000,),
        faiss_factory="IVF64,PQ8x4",  # faiss trains 8-bit PQ on 4 dimensions slowly (30 s on one thread)
        faiss_queries=50,
        cpu_build_seconds_per_million=0.0,
        encoder={**INF_RETRIEVER, **TINY, "num_attention_heads": 4, "head_dim": 16},
        encode_batches=(2, 4),
        encode_seconds=0.5,
        passage_tokens=(12, 16),
    )


def smoke_shapes(device: str) -> dict:
    """The smoke's shapes: the rehearsal's, cut to one stand-in, one dataset, two settings (plain
    and checkpointed, both profiled), one timed step, a few questions and one encoding batch."""
    size = shapes(True, device=device)
    return {
        **size,
        "backbones": {"llama8b": size["backbones"]["llama8b"]},
        "datasets": {"qampari": size["datasets"]["qampari"]},
        "micro_batches": (2,),
        "timed_steps": 1,
        "questions": 8,
        "generate_batch": 4,
        "search_corpus": 500,
        "faiss_sizes": (5000,),
        "encode_batches": (2,),
        "encode_seconds": 0.0,
    }


def parameter_count(config: dict) -> int:
    """The parameters of a decoder backbone of `config` without its language-model head (what
    `AutoModel` builds): the token embedding, each layer's attention (grouped-query: keys and
    values at `num_key_value_heads`) and gated MLP; norms and biases left out (under 0.1%)."""
    hidden, layers = config["hidden_size"], config["num_hidden_layers"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    queries, keys = config["num_attention_heads"] * head_dim, config["num_key_value_heads"] * head_dim
    attention = hidden * queries * 2 + hidden * keys * 2  # q and o, k and v
    mlp = 3 * hidden * config["intermediate_size"]
    return config["vocab_size"] * hidden + layers * (attention + mlp)


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
    on the GPU: `amer_lib.runs.memory.plan_for` of the backbone's config and a `Workload` of the
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
        function="amer_lib.runs.memory.plan_for",
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
    torch.profiler sees, flagged when there were none or kineto stopped collecting (`gpu_counts`);
    on the CPU the operations `OpCounter` sees, and the top of them by name."""
    if device != "cuda":
        with OpCounter() as counter:
            step()
        found = dict(
            kind="cpu aten ops (OpCounter)", status="ok", kernels=len(counter.names), by_name=top_names(counter.names)
        )
        return {**found, "all_names": top_names(counter.names, top=None)} if everything else found
    from torch.profiler import ProfilerActivity, profile

    stopped = getattr(torch.autograd, "_is_kineto_stopped", None)  # torch 2.13 has it; older builds do not
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        synchronize(device)
        halted = stopped() if stopped is not None else None
    halted = halted or (stopped() if stopped is not None else None)  # read again once the trace is stopped
    # kineto's raw events: parsing 10^5 of them into torch's FunctionEvents takes seconds more
    events = list(prof.profiler.kineto_results.events())
    gpu = [e.name() for e in events if e.device_type() == torch.autograd.DeviceType.CUDA]
    return gpu_counts(gpu, halted, len(events), kineto_buffer_mb())


def gpu_counts(names: list[str], stopped: bool | None, events: int, buffer_mb: int) -> dict:
    """Kernels and copies among kineto's GPU event `names`, with a status a reader can trust:
    "no GPU events" when there are none (a CPU build of torch or no CUPTI drops CUDA activity
    silently: not a count of 0), "truncated" when kineto stopped collecting (its GPU buffer
    filled: the counts are lower bounds), "may be truncated" when this torch cannot say and the
    `events` records could fill `buffer_mb`."""
    copies = [name for name in names if name.startswith(("Memcpy", "Memset"))]
    found = dict(kind="cuda kernels (torch.profiler)", events=events, buffer_mb=buffer_mb, kineto_stopped=stopped)
    if not names:
        return dict(found, status="no GPU events", kernels=None, copies=None)
    found.update(kernels=len(names) - len(copies), copies=len(copies), status="ok")
    if stopped:
        found["status"] = "truncated: kineto stopped collecting (its GPU buffer filled); the counts are lower bounds"
    elif stopped is None and events * RECORD_BYTES > buffer_mb * 2**20:
        found["status"] = (
            f"may be truncated: {events} records at up to {RECORD_BYTES} B each could fill {buffer_mb} MB, "
            "and this torch cannot say whether kineto stopped"
        )
    return found


def kineto_buffer_mb() -> int:
    """Kineto's GPU buffer as the file `KINETO_CONFIG` names sets it (its default without one)."""
    path = os.environ.get("KINETO_CONFIG")
    if path and Path(path).is_file():
        found = re.search(r"ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB\s*=\s*(\d+)", Path(path).read_text())
        if found:
            return int(found.group(1))
    return KINETO_DEFAULT_MB


def raise_kineto_buffer(folder: Path, megabytes: int = KINETO_BUFFER_MB) -> dict:
    """Raise kineto's GPU activity buffer to `megabytes` before the first profile, and say what was
    set. Kineto keeps CUDA activity records in 4 MB buffers up to ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB
    (128 MB by default, within 2x of an 8B checkpointed step's records: issue 69) and stops
    collecting when they are full. torch's `_ExperimentalConfig(custom_profiler_config=...)` does
    not reach that key (torch wraps the string as CUSTOM_CONFIG=..., which kineto's parser
    rejects), but kineto reads the file `KINETO_CONFIG` names each time a trace is prepared
    (`ActivityProfilerProxy::prepareTrace`), reading the variable itself once, at the first: so the
    file is written and the variable set here, before any profile. A `KINETO_CONFIG` the user set
    is left as it is and recorded."""
    if os.environ.get("KINETO_CONFIG"):
        return dict(set_here=False, KINETO_CONFIG=os.environ["KINETO_CONFIG"], buffer_mb=kineto_buffer_mb())
    path = Path(folder) / "libkineto.conf"
    write_text(path, f"ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB = {megabytes}\n")
    os.environ["KINETO_CONFIG"] = str(path)
    return dict(
        set_here=True,
        KINETO_CONFIG=str(path),
        ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=megabytes,
        default_mb=KINETO_DEFAULT_MB,
        buffer_mb=kineto_buffer_mb(),
    )


class DeviceUse:
    """The device's own memory in use: its total less what the driver reports free
    (`torch.cuda.mem_get_info`), which counts the CUDA context, every allocation outside torch's
    caching allocator and other processes, and its maximum over the samples taken. This is what
    must stay inside the projected peak: the real run fills the rest of the GPU with resident
    index shards (`real_data.run_index`: up to the total less the projection). Nothing on the CPU."""

    def __init__(self, device: str):
        self.device, self.peak, self.total = device, None, None

    def sample(self) -> int | None:
        if self.device != "cuda":
            return None
        free_bytes, total = torch.cuda.mem_get_info()
        self.total, used = total, total - free_bytes
        self.peak = used if self.peak is None else max(self.peak, used)
        return used

    def facts(self) -> dict:
        return dict(device_used_peak=self.peak, device_total=self.total)


def guarded(record: dict, key: str, function: Callable[[], dict | None]) -> None:
    """`record.update(function())`, or the error it raised under `key` (a CUDA error after an
    out-of-memory or a failed kernel can make the allocator's own statistics raise)."""
    try:
        record.update(function() or {})
    except Exception as error:
        record[key] = f"{type(error).__name__}: {str(error)[:300]}"


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


# ----- the deadline: each next setting, build and batch predicted from what was measured ------------------------------


class Forecast:
    """Predicted seconds of what a part may start next, from what the run has measured: a training
    setting's step time (of the same backbone and checkpointing; else its other checkpointing by
    the checkpointed factor; else another backbone's step scaled by layers or parameters, whichever
    is the larger ratio; else the projected step times the launch bound) times the steps it will
    run, its warm-up, profiled and counted steps at their factors (measured once a setting has run
    them, `BOUNDS` until then); a model build at the seconds per GiB of weights last measured."""

    def __init__(self, bounds: dict | None = None):
        self.factors = {**BOUNDS, **(bounds or {})}
        self.measured: set[str] = set()
        self.steps: dict[tuple[str, bool], dict] = {}  # (backbone, checkpointed): step, layers, projected

    def observe_build(self, seconds: float, weight_bytes: int) -> None:
        self.factors["build_seconds_per_gib"] = seconds / (weight_bytes / GIB)
        self.measured.add("build_seconds_per_gib")

    def observe_setting(self, row: dict, layers: int) -> None:
        """A measured training row: its median step, and the factors its warm-up, profiled and counted steps give."""
        step = row.get("median_step_seconds")
        if not step:
            return
        name, checkpointed = row["backbone"], row["checkpointing"]
        projected = row["projected_step"]["seconds"]
        self.steps[name, checkpointed] = dict(step=step, layers=layers, projected=projected)
        timings = {
            "warmup": row.get("warmup_seconds"),
            "profiled": (row.get("kernels") or {}).get("seconds"),
            "counted": (row.get("ops") or {}).get("seconds"),
        }
        for factor, seconds in timings.items():
            if seconds:
                self.factors[factor] = seconds / step
                self.measured.add(factor)
        if row.get("wall_seconds"):  # the setting's own overhead: its wall time less its steps
            stepped = sum(row.get("step_seconds") or []) + sum(seconds or 0.0 for seconds in timings.values())
            self.factors["setting_seconds"] = max(0.0, row["wall_seconds"] - stepped)
            self.measured.add("setting_seconds")
        plain, checkpointing = self.steps.get((name, False)), self.steps.get((name, True))
        if plain and checkpointing:
            self.factors["checkpointed"] = checkpointing["step"] / plain["step"]
            self.measured.add("checkpointed")

    def step(self, name: str, checkpointed: bool, layers: int, projected: float) -> float:
        """One timed step's predicted seconds."""
        if (name, checkpointed) in self.steps:
            return self.steps[name, checkpointed]["step"]
        by = self.factors["checkpointed"] if checkpointed else 1 / self.factors["checkpointed"]
        if (name, not checkpointed) in self.steps:
            return self.steps[name, not checkpointed]["step"] * by
        others = [(key, got) for key, got in self.steps.items() if key[0] != name]
        if others:
            (_, other_checkpointed), got = max(others, key=lambda item: item[0][1] == checkpointed)
            scale = max(layers / got["layers"], projected / got["projected"])
            return got["step"] * scale * (1.0 if other_checkpointed == checkpointed else by)
        return projected * self.factors["launch"] * (self.factors["checkpointed"] if checkpointed else 1.0)

    def setting(
        self,
        name: str,
        checkpointed: bool,
        layers: int,
        projected: float,
        timed_steps: int,
        profiled: bool,
        counted: bool,
    ) -> float:
        """A training setting's predicted seconds: its overhead, and its steps at the predicted step time."""
        steps = self.factors["warmup"] + timed_steps
        steps += self.factors["profiled"] * profiled + self.factors["counted"] * counted
        return self.factors["setting_seconds"] + steps * self.step(name, checkpointed, layers, projected)

    def build(self, weight_bytes: int) -> float:
        """A model build's predicted seconds."""
        return self.factors["build_seconds_per_gib"] * weight_bytes / GIB


@dataclass
class Run:
    """What every part shares: the clock its deadlines are read on, the forecast, the profiler of
    the kernel counts (a parameter: the rehearsal injects one that fails), the record's writer, and
    the question data the training parts share."""

    clock: Clock = field(default_factory=lambda: Clock(BUDGET))
    forecast: Forecast = field(default_factory=Forecast)
    profiler: Callable[..., dict] | None = None
    written: Callable[[], None] = lambda: None
    data: dict = field(default_factory=dict)

    def now(self) -> float:
        return self.clock.now()

    def skip(self, predicted: float, deadline: float) -> dict | None:
        """None when `predicted` seconds end by `deadline`; else a "skipped: time" record with the prediction."""
        left = deadline - self.now()
        if predicted <= left:
            return None
        return dict(
            status="skipped: time", predicted_seconds=round(predicted, 3), seconds_left=round(max(0.0, left), 3)
        )

    def questions(self, size: dict, dataset: str) -> TextData:
        """`question_data` of a dataset, made once for the training parts that share it."""
        key = (dataset, size["device"], size["datasets"][dataset]["questions"])
        if key not in self.data:
            self.data.clear()  # one dataset on the device at a time
            self.data[key] = question_data(size, dataset, size["device"])
        return self.data[key]


# ----- training -------------------------------------------------------------------------------------------------------


def training(
    size: dict,
    deadline: float,
    on_row=None,
    *,
    rows: list | None = None,
    datasets: tuple[str, ...] | None = None,
    backbones: tuple[str, ...] | None = None,
    run: Run | None = None,
) -> list[dict]:
    """Every (dataset, backbone, micro-batch, checkpointing) setting of `datasets` and `backbones`
    (all of the size's by default) that its forecast fits before `deadline`: peaks beside the
    projection, seconds a step (median of the timed steps after a warm-up step), kernels a step
    at the smaller micro-batch. A model is built for each dataset and backbone (only if the build
    and its first setting fit), and its plain settings run before its checkpointed ones
    (checkpointing is switched on once and stays on). Each row is appended to `rows` (the caller's
    list: a failure between settings loses none) and `on_row(rows)` called after it."""
    run = run or Run()
    device = size["device"]
    rows = [] if rows is None else rows
    free(device)
    pool = negative_pool(size, device)
    for dataset in datasets or tuple(size["datasets"]):
        for name in backbones or tuple(size["backbones"]):
            config = size["backbones"][name]
            layers, weights = config["num_hidden_layers"], 2 * parameter_count(config)
            settings = [(m, c) for c in (False, True) for m in size["micro_batches"]]
            heads = [dict(backbone=name, dataset=dataset, micro_batch=m, checkpointing=c) for m, c in settings]
            for head in heads:
                head["projected"] = projection(name, config, size, dataset, head["micro_batch"], head["checkpointing"])
                head["projected_step"] = projected_step_seconds(name, size["batch"])
                head["profiled"] = head["micro_batch"] == size["micro_batches"][0]
                head["counted"] = head["profiled"] and device == "cuda" and not head["checkpointing"]

            def predicted(head: dict) -> float:
                return run.forecast.setting(
                    name,
                    head["checkpointing"],
                    layers,
                    head["projected_step"]["seconds"],
                    size["timed_steps"],
                    head["profiled"],
                    head["counted"],
                )

            build = run.forecast.build(weights)
            skipped = run.skip(build + predicted(heads[0]), deadline)
            if skipped:
                rows += [{**head, **skipped} for head in heads]
                if on_row is not None:
                    on_row(rows)
                continue
            data = run.questions(size, dataset)
            began = time.perf_counter()
            model = random_encoder(config, size["embedding_dim"], device)
            built = time.perf_counter() - began
            run.forecast.observe_build(built, weights)
            for head in heads:
                forecast = predicted(head)
                skipped = run.skip(forecast, deadline)
                if skipped:
                    rows.append({**head, **skipped})
                    continue
                if head["checkpointing"] and not getattr(model, "_checkpointed", False):
                    checkpointing.enable(model.backbone)
                    model._checkpointed = True
                began = time.perf_counter()
                row = {**head, "build_seconds": built, "predicted_seconds": forecast}
                row.update(
                    training_setting(
                        model,
                        data,
                        pool,
                        size,
                        head["micro_batch"],
                        head["checkpointing"],
                        head["profiled"],
                        profiler=run.profiler,
                        count=head["counted"],
                    )
                )
                row["wall_seconds"] = time.perf_counter() - began
                row.update(ratios(row))
                rows.append(row)
                run.forecast.observe_setting(row, layers)
                print(summary_line(row), flush=True)
                if on_row is not None:
                    on_row(rows)
                if "cleanup_error" in row:  # the device is in doubt: the part stops, its rows kept
                    raise RuntimeError(f"cleaning up after a setting failed: {row['cleanup_error']}")
            model = None
            free(device)
    return rows


def training_setting(
    model,
    data,
    pool,
    size: dict,
    micro: int,
    checkpointed: bool,
    profile: bool,
    profiler: Callable[..., dict] | None = None,
    count: bool | None = None,
) -> dict:
    """One setting with a fresh AdamW: a warm-up step and the timed steps; then, each in its own
    `try` so that a failure keeps the step times and peaks, with `profile` a step whose kernels
    `profiler` counts (`profiled` by default) and with `count` (on a GPU, unless checkpointed) one
    more whose operations `OpCounter` counts, the CPU's measure of the same step. An out-of-memory
    step keeps the steps timed before it."""
    device = size["device"]
    profiler = profiler or profiled
    count = (device == "cuda" and not checkpointed) if count is None else count
    config = TrainConfig(
        n_outputs=int(data.mask.sum(-1).max()),
        steps=1000,
        batch_size=size["batch"],
        optimizer=Optimizer(lr=5e-5),
        loss=MatchedLoss(temperature=0.05, reduction="sum"),
        mixed_precision=True,
        memory=MemoryLayout(micro_batch_size=micro, gradient_checkpointing=checkpointed),
    )
    params, optimizer, _ = adamw(model, config)
    model.train()
    free(device)
    used = DeviceUse(device)
    record, seconds, draws, failure = dict(resident=resident(device)), [], [], None
    used.sample()

    def step(number: int) -> None:
        generator = step_generator(0, number)
        indices = torch.randperm(len(data), generator=generator)[: size["batch"]]
        batch = draw_batch(data, indices, pool, config, P_SAMPLING, generator)
        draws.append(int(batch.targets.shape[1]))
        optimizer_step(model, data, batch, config, params, optimizer)

    def timed(number: int) -> float:
        synchronize(device)
        began = time.perf_counter()
        step(number)
        synchronize(device)
        return time.perf_counter() - began

    try:
        for number in range(1 + size["timed_steps"]):
            elapsed = timed(number)
            if number:
                seconds.append(elapsed)
            else:
                record["warmup_seconds"] = elapsed
            used.sample()
    except torch.OutOfMemoryError as error:
        failure = out_of_memory(error)
    except Exception as error:  # recorded, and the next setting runs
        failure = dict(status=f"failed: {type(error).__name__}: {str(error)[:300]}")
    guarded(record, "peaks_error", lambda: peaks(device))
    micro_batches = -(-size["batch"] // micro)
    if failure is None and profile:
        for key, counter in (("kernels", lambda run: profiler(run, device)), ("ops", lambda run: profiled(run, "cpu"))):
            if key == "ops" and not count:
                continue
            number = 1 + size["timed_steps"] + (key == "ops")
            try:
                began = time.perf_counter()
                counted = counter(lambda number=number: step(number))
                counted["seconds"] = time.perf_counter() - began
                counted["positions"] = draws[-1]  # the backbone's calls a micro-batch: the prompt and n - 1 fed back
                if counted.get("kernels") is not None:
                    counted["per_position_per_micro_batch"] = counted["kernels"] / (
                        micro_batches * counted["positions"]
                    )
                record[key] = counted  # the device's use is sampled over the timed steps only
            except Exception as error:  # the step times and peaks above stay
                record["profiler_error" if key == "kernels" else "ops_error"] = (
                    f"{type(error).__name__}: {str(error)[:300]}"
                )
    guarded(record, "device_error", used.facts)

    def cleanup() -> None:
        optimizer.zero_grad(set_to_none=True)
        optimizer.state.clear()  # AdamW's moments: the next setting starts its own
        free(device)

    guarded(record, "cleanup_error", cleanup)
    record.update(
        status="ok",
        step_seconds=seconds,
        median_step_seconds=statistics.median(seconds) if seconds else None,
        decoded_positions=draws,
        micro_batches=micro_batches,
        sampling_p=P_SAMPLING,
    )
    if failure is not None:
        record.update(failure, median_step_seconds=None)  # an incomplete setting gives the forecast nothing
    return record


def ratios(row: dict) -> dict:
    """Measured over projected: the device's own use against the whole projected peak (what must
    hold beside the real run's resident index shards), torch's reserved against it too (the CUDA
    reserve counted), allocated against the peak less the reserve; the step's seconds against the
    projection's."""
    projected = row.get("projected") or {}
    found = {}
    if row.get("device_used_peak") and projected:
        found["device_over_projected"] = row["device_used_peak"] / projected["gpu_peak"]
        found["device_within_projection"] = row["device_used_peak"] <= projected["gpu_peak"]
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
    kernels = row.get("kernels") or {}
    return head + (
        f"allocated {gib(row.get('max_memory_allocated'))} reserved {gib(row.get('max_memory_reserved'))} "
        f"device {gib(row.get('device_used_peak'))} projected {gib(row['projected']['gpu_peak'])}; "
        f"step {row['median_step_seconds']:.3f} s (projected {row['projected_step']['seconds']:.2f}, "
        f"predicted setting {row['predicted_seconds']:.1f} s, took {row['wall_seconds']:.1f}); "
        f"{kernels.get('kernels', '-')} kernels ({kernels.get('status', row.get('profiler_error', '-'))})"
    )


# ----- generation, export, search -------------------------------------------------------------------------------------


def generation(size: dict, deadline: float, *, result: dict | None = None, run: Run | None = None) -> dict:
    """The first backbone's encoder generating `generated` vectors for `questions` questions in
    bfloat16 (`runs.query_encoders.generated_vectors`, `generate_batch` at a time), written as a
    model folder (`saved.save_pretrained`), and its vectors searched round-robin in an exact index.
    Under the deadline: the build and the warm-up batch predicted from the training parts (a
    training step of the backbone bounds a generation batch), each next batch from the warm-up's
    time, export and search from `export_seconds` and `search_seconds`; what does not fit is
    recorded under `stages`. `result` (the caller's dict) fills as it goes."""
    from amer_lib.core.index import VectorIndex, multi_vector_search, searches_on_gpu, unit_norm
    from amer_lib.runs.query_encoders import generated_vectors, token_prompts
    from amer_lib.runs.saved import save_pretrained

    run = run or Run()
    result = {} if result is None else result
    device = size["device"]
    name, config = next(iter(size["backbones"].items()))
    n, batch = size["generated"], size["generate_batch"]
    weights = 2 * parameter_count(config)
    projected = projected_step_seconds(name, size["batch"])["seconds"]
    bound = run.forecast.step(name, False, config["num_hidden_layers"], projected)
    stages = result.setdefault("stages", {})
    result.update(backbone=name, n=n, batch=batch, predicted_batch_seconds=bound)
    skipped = run.skip(run.forecast.build(weights) + bound, deadline)
    if skipped:
        stages["generate"] = skipped
        result["status"] = "skipped: time"
        return result
    free(device)
    began = time.perf_counter()
    model = random_encoder(config, size["embedding_dim"], device).eval()
    result["build_seconds"] = time.perf_counter() - began
    run.forecast.observe_build(result["build_seconds"], weights)
    data = question_data(size, "qampari", device, count=size["questions"])
    chunks = [slice(start, start + batch) for start in range(0, len(data), batch)]
    prompts = lambda rows: token_prompts(model, data.input_ids[rows], data.attention_mask[rows], batch_size=batch)
    began = time.perf_counter()
    generated_vectors(model, prompts(chunks[0]), n)  # warm-up
    result["warmup_seconds"] = time.perf_counter() - began
    vectors, seconds = [], 0.0
    for rows in chunks:
        skipped = run.skip(result["warmup_seconds"], deadline)  # a warm batch takes at most the warm-up's time
        if skipped:
            stages["generate"] = {**skipped, "questions_done": sum(len(v) for v in vectors)}
            break
        began = time.perf_counter()
        vectors.append(generated_vectors(model, prompts(rows), n))
        seconds += time.perf_counter() - began
    vectors = np.concatenate(vectors) if vectors else np.zeros((0, n, size["embedding_dim"]), np.float32)
    stages.setdefault("generate", dict(status="ok"))
    result.update(
        questions=len(vectors),
        generate_seconds=seconds,
        questions_per_second=len(vectors) / seconds if seconds else None,
        dtype=str(next(model.backbone.parameters()).dtype),
        **peaks(device),
    )
    run.written()
    skipped = run.skip(size["export_seconds"], deadline)
    stages["export"] = skipped or dict(status="ok")
    if not skipped:
        with tempfile.TemporaryDirectory() as scratch:
            began = time.perf_counter()
            folder = save_pretrained(model, Path(scratch) / "model", backbone=name, n_queries=n)
            result["export_seconds"] = time.perf_counter() - began
            result["export_bytes"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        run.written()
    model = None
    free(device)
    skipped = run.skip(size["search_seconds"], deadline) or (
        None if len(vectors) else dict(status="skipped: no vectors")
    )
    stages["search"] = skipped or dict(status="ok")
    if not skipped:
        rng = np.random.default_rng(0)
        corpus = unit_norm(rng.standard_normal((size["search_corpus"], size["embedding_dim"]), dtype=np.float32))
        began = time.perf_counter()
        index = VectorIndex(corpus)
        result["index_seconds"] = time.perf_counter() - began
        k, depth = min(100, len(corpus) // 10), min(500, len(corpus) // 4)
        began = time.perf_counter()
        ranked = multi_vector_search(index, vectors, k=k, depth=depth)
        result.update(
            search_corpus=len(corpus),
            search_on_gpu=searches_on_gpu(None),
            k=k,
            depth=depth,
            search_seconds=time.perf_counter() - began,
            ranked_shape=list(np.shape(ranked)),
        )
    result["status"] = "ok"
    return result


# ----- faiss IVF-PQ on the GPU against the CPU build ------------------------------------------------------------------


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


def faiss_gpus() -> int | None:
    """The GPUs faiss sees here (0 for its CPU build; None without faiss)."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


def faiss_part(size: dict, deadline: float, *, result: dict | None = None, run: Run | None = None) -> dict:
    """IVF-PQ (`core.index.IVFPQIndex`) trained, added and searched on the GPU and with the CPU
    build on the same vectors, recall@100 of both against exact search (`ShardedFlatIndex`).
    `result` (the caller's dict) fills as it goes."""
    import faiss
    from bench_scale import held_out_queries

    from amer_lib.core.index import IVFPQIndex, ShardedFlatIndex, recall_against_exact

    run = run or Run()
    result = {} if result is None else result
    gpus = faiss_gpus() or 0
    result.update(faiss=faiss.__version__, faiss_gpus=gpus, factory=size["faiss_factory"], nprobe=32, sizes=[])
    dim, k, last = size["embedding_dim"], 100, 0.0
    for n in size["faiss_sizes"]:
        if run.now() + 4.5 * last > deadline:  # the next size: about four times the last one
            result["sizes"].append(dict(n=n, status="skipped: time", predicted_seconds=4.5 * last))
            continue
        began = time.perf_counter()
        shards = InMemoryShards(tree_vectors(n, dim))
        queries = held_out_queries(n, dim, size["faiss_queries"])
        entry = dict(n=n, dim=dim, queries=len(queries), vectors_seconds=time.perf_counter() - began, builds={})
        result["sizes"].append(entry)
        exact_began = time.perf_counter()
        _, exact = ShardedFlatIndex(shards, use_gpu=gpus > 0).search(queries, min(k, n // 10))
        entry["exact_seconds"], entry["exact_on_gpu"] = time.perf_counter() - exact_began, gpus > 0
        for build in ("gpu", "cpu"):
            if build == "gpu" and gpus == 0:
                reason = f"skipped: faiss {faiss.__version__} here has no GPU (the CPU build)"
                entry["builds"][build] = dict(status=reason)
                continue
            estimate = size["cpu_build_seconds_per_million"] * n / 1e6 if build == "cpu" else 0.0
            skipped = run.skip(estimate, deadline)
            if skipped:
                entry["builds"][build] = skipped
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
            run.written()
        del shards
        gc.collect()
        last = time.perf_counter() - began
        entry["wall_seconds"] = last
    result["status"] = "ok"
    return result


# ----- inf-retriever's shape encoding passages ------------------------------------------------------------------------


def encoding(size: dict, deadline: float, *, result: dict | None = None, run: Run | None = None) -> dict:
    """A random-weight model of inf-retriever-v1-1.5b's shape encoding random passages of 128-160
    tokens (right-padded to the batch's longest) in bfloat16, last-token pooling: passages a
    second at each batch size, beside `benchmarks/projection.py`'s assumed rate. The build is
    predicted from the builds measured; each batch size from the last rate measured (half the
    projected rate before any), a warm-up batch and at least two timed ones or `encode_seconds`.
    `result` (the caller's dict) fills as it goes."""
    from transformers import AutoConfig, AutoModel

    run = run or Run()
    result = {} if result is None else result
    device = size["device"]
    shortest, longest = size["passage_tokens"]
    mean_tokens = (shortest + longest) / 2
    projected = MFU * PEAK_FLOPS / (2 * ENCODER_PARAMETERS * mean_tokens)
    weights = 2 * parameter_count(size["encoder"])
    result.update(
        passage_tokens=[shortest, longest],
        projected_passages_per_second=projected,
        projection=f"{MFU:.0%} of 989 TFLOPS / (2 x 1.54e9 x {mean_tokens:.0f} tokens)",
        batches=[],
    )
    rate = projected / 2

    def predicted(batch: int) -> float:
        each = batch / rate
        return each * (run.forecast.factors["warmup"] + max(2.0, size["encode_seconds"] / each))

    skipped = run.skip(run.forecast.build(weights) + predicted(size["encode_batches"][0]), deadline)
    if skipped:
        result.update(status="skipped: time", build=skipped)
        return result
    free(device)
    torch.manual_seed(0)
    began = time.perf_counter()
    with torch.device(device):
        model = AutoModel.from_config(AutoConfig.for_model(**size["encoder"]), dtype=torch.bfloat16).eval()
    result["build_seconds"] = time.perf_counter() - began
    run.forecast.observe_build(result["build_seconds"], weights)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    generator = torch.Generator().manual_seed(0)
    for batch in size["encode_batches"]:
        forecast = predicted(batch)
        skipped = run.skip(forecast, deadline)
        if skipped:
            result["batches"].append(dict(batch=batch, **skipped))
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
                if run.now() + (time.perf_counter() - began) / done > deadline:
                    break
            synchronize(device)
            seconds = time.perf_counter() - began
            rate = done * batch / seconds
            entry = dict(batch=batch, status="ok", batches=done, seconds=seconds, passages_per_second=rate)
            result["batches"].append({**entry, **peaks(device), "predicted_seconds": forecast})
        except torch.OutOfMemoryError as error:
            result["batches"].append(dict(batch=batch, **out_of_memory(error)))
        run.written()
    model = None
    free(device)
    result["status"] = "ok"
    return result


# ----- the smoke: every part at tiny shapes on the run's device -------------------------------------------------------


def smoke(size: dict, deadline: float, *, result: dict | None = None, run: Run | None = None, parts=ORDER) -> dict:
    """Every part of `parts` at `smoke_shapes` on the run's device, each in its own `try`, with a
    forecast of its own (tiny timings say nothing of the paper's shapes): seconds that find an API
    error on the device before the big shapes spend minutes on it. `result` fills as it goes."""
    run = run or Run()
    result = {} if result is None else result
    device = size["device"]
    tiny = smoke_shapes(device)
    inner = Run(clock=run.clock, forecast=Forecast(), profiler=run.profiler, written=run.written)
    jobs = {}
    if any(name in TRAINING_PARTS for name in parts):
        jobs["training"] = lambda entry: training(tiny, deadline, rows=entry.setdefault("rows", []), run=inner)
    for name, function in (("generation", generation), ("encoding", encoding), ("faiss", faiss_part)):
        if name in parts:
            jobs[name] = lambda entry, function=function: function(tiny, deadline, result=entry, run=inner)
    if not jobs:
        result["status"] = "skipped: none of the parts asked has a smoke"
        return result
    failed = []
    for name, job in jobs.items():
        entry = result[name] = dict(status="running")
        began = time.perf_counter()
        try:
            job(entry)
            entry["status"] = "ok" if entry["status"] == "running" else entry["status"]
        except Exception as error:  # recorded; the next job and the big shapes still run
            entry.update(
                status=f"failed: {type(error).__name__}: {str(error)[:300]}", error=tail(traceback.format_exc())
            )
            guarded(entry, "free_error", lambda: free(device))
            failed.append(name)
        entry["seconds"] = time.perf_counter() - began
        run.written()
    result["status"] = f"failed: {', '.join(failed)} (each one's error beside it)" if failed else "ok"
    return result


# ----- the record -----------------------------------------------------------------------------------------------------

PARTS = {"smoke": smoke, "generation": generation, "encoding": encoding, "faiss": faiss_part}


def tail(text: str, lines: int = 12) -> list[str]:
    """A traceback's last lines (what says where and why)."""
    return text.splitlines()[-lines:]


def chosen_parts(asked: list[str] | None, gpus: int | None) -> tuple[list[str], dict[str, str]]:
    """The parts to run in `ORDER` ("training" asks for every training part), and why each other
    one does not: by default every part but faiss, and faiss only where it sees a GPU (the CPU
    build returns no GPU number)."""
    if asked is None:
        chosen = set(ORDER) - ({"faiss"} if not gpus else set())
    else:
        chosen = {part for name in asked for part in (TRAINING_PARTS if name == "training" else (name,))}
        unknown = chosen - set(ORDER)
        if unknown:
            raise ValueError(f"no part {', '.join(sorted(unknown))}; the parts are {', '.join(ORDER)} (or training)")
    reasons = {name: "skipped: not asked" for name in ORDER if name not in chosen}
    if asked is None and not gpus:
        found = "no faiss" if gpus is None else "faiss's CPU build"
        reasons["faiss"] = f"skipped: {found} here, no GPU number to give (`--parts ... faiss` runs it on the CPU)"
    return [name for name in ORDER if name in chosen], reasons


def budget_arithmetic() -> dict:
    """The module docstring's budget: the setup bounds, the parts' caps and the margin, against `WALL`."""
    total = sum(SETUP.values()) + BUDGET + MARGIN
    return dict(wall=WALL, setup=SETUP, caps=CAPS, parts=BUDGET, margin=MARGIN, total=total, faiss_cap=FAISS_CAP)


def process_age() -> float | None:
    """Seconds since this process started (Linux's /proc; None elsewhere)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in clock ticks
    except (OSError, ValueError, IndexError):
        return None


def setup_facts(device: str, started: float | None) -> dict:
    """What ran before the parts: the process's age (imports), the command's (with the install, when
    `started` is given), CUDA's initialisation and the device memory in use after it."""
    facts = dict(process_seconds=process_age())
    if started is not None:
        facts["command_seconds"] = time.time() - started
    if device == "cuda":
        began = time.perf_counter()
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        synchronize(device)
        facts["cuda_init_seconds"] = time.perf_counter() - began
        facts["device_used_at_start"] = DeviceUse(device).sample()
    return facts


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


def kernels_cell(row: dict) -> str:
    """A row's kernel count, or what stands in its place (its status, the profiler's failure)."""
    if "profiler_error" in row:
        return "profiler failed"
    kernels = row.get("kernels")
    if not kernels:
        return "-"
    if kernels.get("status") == "no GPU events":
        return "no GPU events"
    flag = "" if kernels.get("status") == "ok" else " (truncated?)"
    return f"{kernels['kernels']}{flag}"


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
        f"Budget: {record['budget']:.0f} s for the parts of a {WALL:.0f} s command; setup {record['setup']}; "
        f"kineto {record['kineto']}.",
        "",
        "| part | status | seconds |",
        "|---|---|---|",
    ]
    parts = record["parts"]
    lines += [f"| {name} | {part.get('status')} | {number(part.get('seconds'))} |" for name, part in parts.items()]
    lines.append("")
    rows = [(name, row) for name, part in parts.items() if name in TRAINING_PARTS for row in part.get("rows", [])]
    smoke_rows = (parts.get("smoke", {}).get("result") or {}).get("training", {}).get("rows", [])
    rows += [("smoke", row) for row in smoke_rows]
    if rows:
        lines += [
            "## training",
            "",
            f"Batch {BATCH} (4 in the rehearsal), LoRA r = 64, bfloat16; projected: `amer_lib.runs.memory.plan_for`; "
            "device: total less `torch.cuda.mem_get_info`'s free, its maximum over the steps.",
            "",
            "| part | backbone | data | micro-batch | checkpointing | status | allocated GiB | reserved GiB | "
            "device GiB | projected GiB | device / projected | step s | projected s | predicted s | took s | "
            "kernels a step | per position per micro-batch |",
            "|---" * 17 + "|",
        ]
        for part, row in rows:
            kernels = row.get("kernels") or {}
            lines.append(
                f"| {part} | {row['backbone']} | {row['dataset']} | {row['micro_batch']} | {row['checkpointing']} | "
                f"{row['status']} | {gib(row.get('max_memory_allocated'))} | {gib(row.get('max_memory_reserved'))} | "
                f"{gib(row.get('device_used_peak'))} | {gib((row.get('projected') or {}).get('gpu_peak'))} | "
                f"{number(row.get('device_over_projected'))} | {number(row.get('median_step_seconds'))} | "
                f"{number((row.get('projected_step') or {}).get('seconds'))} | "
                f"{number(row.get('predicted_seconds'))} | "
                f"{number(row.get('wall_seconds'))} | {kernels_cell(row)} | "
                f"{number(kernels.get('per_position_per_micro_batch'), 4)} |"
            )
        lines.append("")
    for name, part in parts.items():
        result = part.get("result")
        if name == "faiss" and isinstance(result, dict) and result.get("sizes"):
            lines += ["## faiss", "", "| n | build | status | train s | add s | search s | recall@100 |"]
            lines.append("|---" * 7 + "|")
            for entry in result["sizes"]:
                for build, got in entry.get("builds", {"-": {"status": entry.get("status")}}).items():
                    lines.append(
                        f"| {entry['n']} | {build} | {got['status']} | {number(got.get('train_seconds'))} | "
                        f"{number(got.get('add_seconds'))} | {number(got.get('search_seconds'))} | "
                        f"{number(got.get('recall_at_100'))} |"
                    )
            lines.append("")
        elif name == "encoding" and isinstance(result, dict) and "projected_passages_per_second" in result:
            lines += [
                "## encoding",
                "",
                f"projected: {result['projected_passages_per_second']:.0f} passages a second ({result['projection']})",
                "",
                "| batch | status | passages a second | reserved GiB | predicted s |",
                "|---|---|---|---|---|",
            ]
            lines += [
                f"| {b['batch']} | {b['status']} | {number(b.get('passages_per_second'), 4)} | "
                f"{gib(b.get('max_memory_reserved'))} | {number(b.get('predicted_seconds'))} |"
                for b in result["batches"]
            ]
            lines.append("")
        elif name == "generation" and isinstance(result, dict):
            lines += ["## generation", "", *[f"- {key}: {value}" for key, value in result.items()], ""]
        elif name == "smoke" and isinstance(result, dict):
            lines += ["## smoke", ""]
            lines += [f"- {job}: {got.get('status')}" for job, got in result.items() if isinstance(got, dict)]
            lines.append("")
            for job, got in result.items():
                if isinstance(got, dict) and "error" in got:
                    lines += [f"smoke {job}:", "```", *got["error"], "```", ""]
        if "error" in part:
            lines += [f"{name} failed after what it measured above:", "```", *part["error"], "```", ""]
    return "\n".join(lines)


def write(record: dict, out: Path) -> None:
    write_json(out / "paper_shapes.json", record)
    write_text(out / "paper_shapes.md", markdown(record))


def start_part(name: str, size: dict, deadline: float, entry: dict, context: Run, parts: list[str]) -> None:
    """Run part `name` into `entry`: its rows or result fill the record as they are measured."""
    if name in TRAINING_PARTS:
        datasets, backbones = TRAINING_PARTS[name]
        rows = entry.setdefault("rows", [])
        training(
            size, deadline, lambda _: context.written(), rows=rows, datasets=datasets, backbones=backbones, run=context
        )
        entry["status"] = "ok"
        return
    options = {"parts": parts} if name == "smoke" else {}
    result = PARTS[name](size, deadline, result=entry.setdefault("result", {}), run=context, **options)
    entry["status"] = result.get("status", "ok")


def run(args: argparse.Namespace, *, context: Run | None = None, size: dict | None = None) -> dict:
    """The parts of `args.parts` (`chosen_parts`) in `ORDER`, each under its deadline, the record
    written after each setting, batch and part. A part that fails keeps what it measured, its
    traceback beside it under `error`. `context` (its clock, profiler) and `size` are the
    rehearsal's levers; by default the run's own."""
    size = size or shapes(args.tiny)
    device = size["device"]
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: torch sees no GPU here; rehearse on the CPU with --tiny")
    if args.tiny:  # tiny operations on a shared CPU: threads cost more than they give
        torch.set_num_threads(1)
        import faiss

        faiss.omp_set_num_threads(1)
    started = getattr(args, "started", None)
    setup = setup_facts(device, started)
    budget = args.budget
    if started is not None:  # what is left of the command's WALL once the script is up
        budget = max(0.0, min(budget, WALL - MARGIN - (time.time() - started)))
    if device == "cuda":
        kineto = raise_kineto_buffer(Path(tempfile.mkdtemp(prefix="kineto-")))
    else:
        kineto = dict(set_here=False, note="the CPU's counts are OpCounter's: kineto is not used")
    context = context or Run(clock=Clock(budget))
    parts, reasons = chosen_parts(getattr(args, "parts", None), faiss_gpus())
    record = dict(
        tiny=args.tiny,
        budget=budget,
        arithmetic=budget_arithmetic(),
        setup=setup,
        kineto=kineto,
        machine=machine(device),
        parts={name: dict(status=reasons.get(name, "waiting")) for name in ORDER},
    )
    context.written = lambda: write(record, args.out)
    context.written()
    for name in parts:
        entry = record["parts"][name] = dict(status="running")
        if context.clock.left() <= 0:
            entry["status"] = "skipped: time"
            continue
        last = name == parts[-1]  # the last part (AmbigQA's shape by default) has whatever is left
        cap = context.clock.left() if last else CAPS.get(name, FAISS_CAP)
        deadline = context.clock.part(cap)
        entry.update(cap=cap, seconds_left=context.clock.left())
        print(f"--- {name} ({context.clock.left():.0f} s left, cap {cap:.0f} s)", flush=True)
        if name not in TRAINING_PARTS:
            context.data.clear()  # the training parts' questions leave the device
        began = time.perf_counter()
        try:
            start_part(name, size, deadline, entry, context, parts)
        except Exception as error:  # what the part measured stays; the next parts still run
            entry.update(
                status=f"failed: {type(error).__name__}: {str(error)[:300]}", error=tail(traceback.format_exc())
            )
            guarded(entry, "free_error", lambda: free(device))
        entry["seconds"] = time.perf_counter() - began
        context.written()
    record["parts_seconds"] = sum(part.get("seconds", 0.0) for part in record["parts"].values())
    if started is not None:
        record["command_seconds"] = time.time() - started
    context.written()
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
                params, optimizer, _ = adamw(model, train)
                batch = draw_batch(data, torch.arange(4), negative_pool(size, "cpu"), train, 1.0, step_generator(0, 0))
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
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=[*ORDER, "training"],
        help="which parts to run (default: all but faiss, and faiss where it sees a GPU; training: each training part)",
    )
    parser.add_argument(
        "--started",
        type=float,
        metavar="EPOCH",
        help="the device command's start ($(date +%%s.%%N)): the parts get what is left of its 360 s",
    )
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
