"""What `-p backbone smollm2` costs on a CPU: one training step of notebook 04's offline recipe.

SmolLM2-135M-Instruct fully fine-tuned, batch 32, prompts of 60 tokens (the WordNet questions in
the chat template are 50-70), targets of 384 dimensions (MiniLM's); single-query (n = 1) and AMER
(n = 5), with one thread (what each of notebook 04's two workers gets) and with every thread.
Each time is the best of `--repeat` steps after a warm-up step; the step is what the training loop
does: the loss of one batch, its backward pass and an AdamW update. The peak resident memory is
the process's.

    python benchmarks/bench_smollm2_cpu.py --out benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import resource
import time

import torch
from results_file import machine, write_section

from amer_lib.core.backbones import load_backbone
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainConfig, example_loss
from amer_lib.data.datasets import TextData

BATCH, PROMPT, DIM, TARGETS = 32, 60, 384, 5
RUNS, STEPS = 12, 300  # notebook 04's defaults: 2 datasets x 2 systems x 3 seeds, 300 steps each


def step_seconds(n_outputs: int, threads: int, repeat: int) -> float:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = AMERQueryEncoder(load_backbone("smollm2"), DIM).train()
    ids = torch.randint(0, 49152, (BATCH, PROMPT))
    data = TextData(ids, torch.ones_like(ids), torch.randn(BATCH, TARGETS, DIM), torch.ones(BATCH, TARGETS, dtype=bool))
    config = TrainConfig(n_outputs=n_outputs, steps=STEPS, batch_size=BATCH)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    pool, indices = torch.randn(1000, DIM), torch.arange(BATCH)

    def step() -> float:
        began = time.perf_counter()
        loss = example_loss(model, data, indices, pool, config, 0.5, torch.Generator().manual_seed(0))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - began

    step()  # warm-up
    return min(step() for _ in range(repeat))


def report(rows: list[dict], threads: int) -> str:
    one = {r["n"]: r["seconds"] for r in rows if r["threads"] == 1}
    per_run = (one[1] + one[5]) / 2 * STEPS  # a single-query and an AMER run alike, on average
    hours = RUNS * per_run / 2 / 3600  # two workers side by side, one thread each
    lines = [
        "## SmolLM2 on the CPU (`bench_smollm2_cpu.py`)",
        "",
        f"Machine: {machine()}. One training step of notebook 04's offline recipe with `backbone = smollm2`",
        f"(full fine-tuning, batch {BATCH}, {PROMPT}-token prompts, {DIM}-d targets): loss, backward, AdamW.",
        "",
        "| n (query vectors) | threads | seconds per step |",
        "|---|---|---|",
        *[f"| {r['n']} | {r['threads']} | {r['seconds']:.1f} |" for r in rows],
        "",
        f"Peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GiB.",
        f"Notebook 04's defaults with `-p backbone smollm2` ({RUNS} runs x {STEPS} steps, two one-thread workers",
        f"on a {threads}-thread machine): about {hours:.1f} hours of training, validation not counted.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", help="also write the Markdown report here")
    args = parser.parse_args()
    threads = torch.get_num_threads()
    rows = [
        {"n": n, "threads": t, "seconds": step_seconds(n, t, args.repeat)}
        for t in dict.fromkeys((1, threads))
        for n in (1, TARGETS)
    ]
    text = report(rows, threads)
    print(text)
    if args.out:
        write_section(args.out, "bench_smollm2_cpu", text)


if __name__ == "__main__":
    main()
