"""Side-by-side timings of the three hot spots named in the foundation issue, in one run.

(a) autoregressive generation: KV cache vs recomputing the prefix at every step;
(b) the round-robin merge's share of a multi-vector search over a 200k x d corpus;
(c) the Hungarian matching's (and the whole matched loss's) share of an AMER training step
    at batch 512 and m = 5;
(d) one AdamW step, PyTorch's default implementation vs the fused kernel the training loop uses,
    over as many parameters as the offline MiniLM backbone (22.7M) and the tiny Llama.

    python benchmarks/bench_core.py --out benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from results_file import machine, write_section

from amer_lib.core.backbones import load_backbone
from amer_lib.core.index import VectorIndex, unit_norm
from amer_lib.core.loss import candidate_log_probs, hungarian_assignment, matched_info_nce, own_positive_block
from amer_lib.core.merge import round_robin_merge
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import TrainConfig, example_loss
from amer_lib.data.datasets import VectorData


def best_of(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def bench_generation(hidden: int, layers: int, prompt_len: int, n: int, batch: int, repeat: int) -> dict:
    torch.manual_seed(0)
    backbone = load_backbone(
        "tiny",
        config_overrides=dict(
            hidden_size=hidden,
            intermediate_size=4 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=8,
            num_key_value_heads=8,
        ),
    )
    model = AMERQueryEncoder(backbone, 128).eval()
    ids = torch.randint(0, 256, (batch, prompt_len))
    prompt = model.prompt_from_tokens(ids, torch.ones_like(ids))
    cached = best_of(lambda: model.generate(prompt, n), repeat)
    recomputed = best_of(lambda: model.generate(prompt, n, use_cache=False), repeat)
    return dict(
        case=f"H={hidden}, {layers} layers, prompt {prompt_len} tokens, n={n}, batch {batch}",
        cache_s=cached,
        recompute_s=recomputed,
        speedup=recomputed / cached,
    )


def bench_search(corpus_size: int, dim: int, n_queries: int, n_vectors: int, depth: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    index = VectorIndex(unit_norm(rng.standard_normal((corpus_size, dim), dtype=np.float32)), use_gpu=False)
    queries = rng.standard_normal((n_queries, n_vectors, dim), dtype=np.float32)
    _, ids = index.search(queries, depth)
    search_s = best_of(lambda: index.search(queries, depth), repeat)
    merge_s = best_of(lambda: round_robin_merge(ids, depth), repeat)
    return dict(
        case=f"{corpus_size:,} x {dim} corpus, {n_queries} queries x {n_vectors} vectors, top-{depth}",
        search_s=search_s,
        merge_s=merge_s,
        merge_share=merge_s / (search_s + merge_s),
    )


def bench_loss(dim: int, hidden: int, batch: int, m: int, repeat: int) -> dict:
    torch.manual_seed(0)
    model = AMERQueryEncoder(
        load_backbone("tiny", config_overrides=dict(hidden_size=hidden, intermediate_size=4 * hidden)), dim
    )
    data = VectorData(torch.randn(batch, dim), torch.randn(batch, m, dim), torch.ones(batch, m, dtype=torch.bool))
    pool = torch.randn(20_000, dim)
    config = TrainConfig(n_outputs=m, steps=100, batch_size=batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    indices = torch.arange(batch)

    def step():
        loss = example_loss(model, data, indices, pool, config, 0.5, torch.Generator().manual_seed(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    queries = torch.randn(batch, m, dim, requires_grad=True)
    positives, negatives = torch.randn(batch, m, dim), torch.randn(batch, m, dim)
    mask = torch.ones(batch, m, dtype=torch.bool)

    def loss_only():
        matched_info_nce(queries, positives, negatives, mask).backward()

    block = own_positive_block(candidate_log_probs(queries, positives, negatives, mask), m).detach().numpy()
    counts = np.full(batch, m)
    step_s = best_of(step, repeat)
    loss_s = best_of(loss_only, repeat)
    matching_s = best_of(lambda: hungarian_assignment(block, counts), repeat)
    return dict(
        case=f"batch {batch}, m={m}, d={dim}, tiny backbone H={hidden}, p=0.5",
        step_s=step_s,
        loss_s=loss_s,
        matching_s=matching_s,
        loss_share=loss_s / step_s,
        matching_share=matching_s / step_s,
    )


def bench_optimizer(n_params: int, repeat: int) -> dict:
    parameter = torch.nn.Parameter(torch.randn(n_params))
    parameter.grad = torch.randn(n_params)
    default = torch.optim.AdamW([parameter], lr=1e-4)
    fused = torch.optim.AdamW([parameter], lr=1e-4, fused=True)
    default_s, fused_s = best_of(default.step, repeat), best_of(fused.step, repeat)
    return dict(
        case=f"{n_params / 1e6:.1f}M parameters", default_s=default_s, fused_s=fused_s, speedup=default_s / fused_s
    )


def report(rows_a, rows_b, rows_c, rows_d) -> str:
    lines = [
        "## Core hot spots (`bench_core.py`)",
        "",
        "Command: `python benchmarks/bench_core.py --out benchmarks/RESULTS.md`",
        "",
        f"Machine: {machine()}. Best of repeated runs; all rows measured in one invocation.",
        "",
        "(a) Generation: KV cache vs recomputing the prefix",
        "",
        "| case | KV cache (s) | recompute (s) | recompute / cache |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r['case']} | {r['cache_s']:.4f} | {r['recompute_s']:.4f} | {r['speedup']:.2f}x |" for r in rows_a]
    lines += [
        "",
        "(b) Round-robin merge inside a multi-vector search (exact FAISS flat IP)",
        "",
        "| case | search (s) | merge (s) | merge share |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['case']} | {r['search_s']:.3f} | {r['merge_s']:.4f} | {100 * r['merge_share']:.2f}% |" for r in rows_b
    ]
    lines += [
        "",
        "(c) Matched loss inside one AMER training step (forward + backward + AdamW)",
        "",
        "| case | step (s) | matched loss fwd+bwd (s) | Hungarian matching (s) | loss share | matching share |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['case']} | {r['step_s']:.3f} | {r['loss_s']:.3f} | {r['matching_s']:.4f} | "
        f"{100 * r['loss_share']:.1f}% | {100 * r['matching_share']:.2f}% |"
        for r in rows_c
    ]
    lines += [
        "",
        "(d) One AdamW step: default implementation vs fused kernel",
        "",
        "| case | default (s) | fused (s) | default / fused |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r['case']} | {r['default_s']:.4f} | {r['fused_s']:.4f} | {r['speedup']:.2f}x |" for r in rows_d]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="also write the Markdown report here")
    args = parser.parse_args()
    rows_a = [
        bench_generation(128, 2, 32, 5, 64, args.repeat),
        bench_generation(512, 4, 32, 5, 64, args.repeat),
        bench_generation(512, 4, 32, 8, 64, args.repeat),
    ]
    rows_b = [
        bench_search(200_000, 128, 1000, 5, 100, args.repeat),
        bench_search(200_000, 1024, 1000, 5, 100, args.repeat),
    ]
    rows_c = [bench_loss(128, 128, 512, 5, args.repeat), bench_loss(1024, 128, 512, 5, args.repeat)]
    rows_d = [bench_optimizer(22_700_000, args.repeat), bench_optimizer(1_000_000, args.repeat)]
    text = report(rows_a, rows_b, rows_c, rows_d)
    print(text)
    if args.out:
        write_section(args.out, "bench_core", text)


if __name__ == "__main__":
    main()
