"""The memory preflight of a notebook-04 run: its projected peak memory on the machine it trains on,
before any weight is loaded (`amer_lib.runs.memory`'s plan), and, where the backbone's weights are
not here yet, what they will need on the machine they are for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from amer_lib.core.backbones import describe, get_backbone, load_tokenizer
from amer_lib.core.device import DeviceUnavailableError, resolve_device
from amer_lib.data.benchmark import Benchmark
from amer_lib.data.encoders import get_encoder_spec
from amer_lib.data.preparation import PrepConfig, offline_sizes
from amer_lib.data.prompts import PromptTemplate
from amer_lib.data.questions import MultiAnswerQuestion
from amer_lib.runs import memory
from amer_lib.runs.activation_memory import PROMPT_TOKENS
from amer_lib.runs.configs import RealConfig
from amer_lib.runs.memory import MemoryPlan
from amer_lib.runs.run_context import NEGATIVE_POOL


def memory_preflight(params: RealConfig, benchmark: Benchmark, dataset: str, progress: bool = True) -> MemoryPlan:
    """Project one training process's peak memory for AMER on `dataset` (the larger of the two
    systems: it decodes up to a batch's largest target set) before any weight is loaded, from the
    backbone described once (`backbones.describe`), on the machine the run trains on (this one:
    `preflight_machine`); print it, and on a GPU stop with the settings that fit when it exceeds
    the GPU's memory (`amer_lib.runs.memory`). A GPU holds one training at a time
    (`runs.dispatch.training_workers`), so one process a GPU is projected."""
    spec, tokenizer = get_backbone(params.backbone), load_tokenizer(params.backbone)
    questions = benchmark.questions(dataset, "train")
    prompts = PromptTemplate.of(spec, tokenizer).tokenize(tokenizer, [q.question for q in questions])[0]
    corpus = benchmark.manifest.get("corpus_size", 0)
    return _projection(params, dataset, prompts.shape[1], questions, corpus, progress)


@dataclass(frozen=True)
class PreflightMachine:
    """The machine a memory preflight projects a run for: the run's config there (`finetune` and
    `mixed_precision` as they resolve there), whether it trains on a GPU, the GPU here to check the
    projection against (None: the run is not for a GPU of this machine), and its words."""

    config: RealConfig
    gpu: bool
    device: torch.device | None
    where: str  # "for a GPU", "for this machine's CPU (...)"
    resolved: str  # how "auto" was resolved: "as device auto resolves there"
    note: str = ""  # what the reader should know besides: "this machine has no GPU (...)"

    def words(self, params: RealConfig) -> str:
        """'projected for a GPU: finetune lora and mixed_precision true, as device auto resolves
        there; ...': what the projection is of, the values `params` asked for explicitly said so."""
        value = lambda name: f"{name} {str(getattr(self.config, name)).lower()}"  # noqa: E731
        auto = [value(name) for name, asked in params.asked.items() if asked == "auto"]
        given = [value(name) for name, asked in params.asked.items() if asked != "auto"]
        parts = [f"{' and '.join(auto)}, {self.resolved}"] if auto else []
        parts += [f"{' and '.join(given)}, as asked"] if given else []
        return f"projected {self.where}: {'; '.join(parts + ([self.note] if self.note else []))}"


def preflight_machine(params: RealConfig, weights_here: bool = True) -> PreflightMachine:
    """The machine the memory preflight projects the run for. With the backbone's weights here the
    run trains here, on the device `params.device` resolves to, with the config as resolved here.
    Without them it trains where they will be: on this machine's GPU if it has one; else, with
    device "auto" (the default) or "cuda", on a GPU elsewhere, `finetune` and `mixed_precision`
    resolved as "auto" resolves there (`RealConfig.on_machine`: LoRA and bfloat16 for a
    billion-parameter backbone, an explicit value kept); only device "cpu" projects a CPU run."""
    try:
        here = resolve_device(params.device)
    except DeviceUnavailableError:
        if weights_here:
            raise
        here = None  # device cuda asked for on a machine without one: the run is for a GPU elsewhere
    if here is not None and here.type == "cuda":
        name = torch.cuda.get_device_properties(here).name
        return PreflightMachine(params, True, here, f"for this machine's GPU ({name})", "as auto resolves on a GPU")
    if params.device == "cpu":
        return PreflightMachine(params, False, None, "for the CPU (device cpu)", "as auto resolves on a CPU")
    if weights_here:
        where = "for this machine's CPU (device auto: this machine has no GPU)"
        return PreflightMachine(params, False, None, where, "as auto resolves on a CPU")
    return PreflightMachine(
        params.on_machine(gpu=True),
        True,
        None,
        "for a GPU",
        f"as device {params.device} resolves there",
        "this machine has no GPU (-p device cpu projects the run on a CPU)",
    )


def _projection(
    params: RealConfig,
    dataset: str,
    prompt_tokens: int,
    questions: list[MultiAnswerQuestion],
    corpus: int,
    progress: bool,
    machine: PreflightMachine | None = None,
) -> MemoryPlan:
    """`memory_preflight`'s plan of AMER's training on `questions` (the training split) with
    prompts of `prompt_tokens` over a corpus of `corpus` documents, on `machine` (this one where
    None). The plan is `memory.plan_for`'s, the function the device script compares its
    measurements with (`benchmarks/device/paper_shapes.py`)."""
    machine = machine or preflight_machine(params)
    run, embedding_dim = machine.config, get_encoder_spec(params.encoder).dim
    work = memory.workload_of(
        run,
        prompt_tokens=prompt_tokens,
        training_questions=len(questions),
        max_targets=max(len(q.targets) for q in questions),
        embedding_dim=embedding_dim,
        negatives=min(NEGATIVE_POOL, corpus),
        corpus_size=corpus,
        processes_per_gpu=1,  # runs.dispatch.training_workers: one training per GPU
    )
    if machine.device is not None:  # this machine's GPU: stop with the settings that fit when it does not
        properties = torch.cuda.get_device_properties(machine.device)
        projected = memory.check(describe(run.backbone), work, properties.total_memory, properties.name)
    else:
        projected = memory.plan_for(run.backbone, work)
    if progress:
        print(f"memory preflight, {dataset}:", *projected.lines(machine.gpu), sep="\n  ")
    return projected


def preflight_without_weights(params: RealConfig, offline_recipe: PrepConfig) -> str:
    """The memory preflight of each dataset where the backbone's weights are not here yet (what
    they will need, before they are fetched): the backbone from its published config
    (`backbones.describe`), prompts taken at the paper's `PROMPT_TOKENS` (their tokenizer comes
    with the weights), the data of the prepared benchmark, or where none is prepared yet of the
    offline benchmark `ready_benchmark` would prepare (`preparation.offline_sizes`, nothing
    written); on a GPU it does not fit, the settings that fit. It projects the run on the machine
    it is for (`preflight_machine`): on a machine without a GPU, with device "auto", the GPU's run,
    and says so. Its text, for the error that asks for the weights (papermill shows a failed
    notebook's error, not what its cells printed)."""
    directory = Path(params.prepared_dir)
    try:
        if (directory / "manifest.json").exists():
            benchmark = Benchmark(directory)
            benchmark.check(params.datasets)
            train = {dataset: benchmark.questions(dataset, "train") for dataset in params.datasets}
            corpus = benchmark.manifest.get("corpus_size", 0)
        else:
            train, corpus = offline_sizes(directory, params.datasets, offline_recipe)
    except (FileNotFoundError, ValueError) as error:
        return f"The memory preflight needs the prepared datasets: {error}"
    machine = preflight_machine(params, weights_here=False)
    lines = [
        f"The memory preflight of {params.backbone} from its published config (prompts taken at the paper's "
        f"{PROMPT_TOKENS} tokens: the tokenizer comes with the weights), {machine.words(params)}:"
    ]
    for dataset in params.datasets:
        try:
            projected = _projection(params, dataset, PROMPT_TOKENS, train[dataset], corpus, False, machine)
            lines += [f"memory preflight, {dataset}:", *["  " + line for line in projected.lines(machine.gpu)]]
        except memory.MemoryPreflightError as error:
            lines.append(f"memory preflight, {dataset}: {error}")
    return "\n".join(lines)
