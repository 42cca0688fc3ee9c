"""Data-parallel training over several processes (torch.distributed, started by torchrun).

Every rank holds the whole training set (prompts and the fixed target embeddings) and draws the
same global batch; it runs the query encoder on its share of the examples only, but scores them
against the candidates of the whole batch (every positive and negative), so the loss is the
one-process loss and only the gradients cross processes (DistributedDataParallel averages them).
A run on N ranks therefore trains the same model as one process on the same global batch, up to
floating-point rounding, and its batch size means the same thing on any number of GPUs.

The ranks are started by `amer_lib.runs.torchrun`, one run at a time.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist


def rank_and_size() -> tuple[int, int]:
    """(rank, number of ranks); (0, 1) outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main() -> bool:
    return rank_and_size()[0] == 0


def local_share(batch: int) -> slice:
    """The positions of this rank's contiguous share of a batch of `batch` examples (shares
    differ by at most one example; the whole batch outside a group)."""
    rank, size = rank_and_size()
    base, extra = divmod(batch, size)
    first = rank * base + min(rank, extra)
    return slice(first, first + base + (rank < extra))


def barrier() -> None:
    """Wait for every rank (nothing outside a group)."""
    if rank_and_size()[1] > 1:
        dist.barrier()


def sum_over_ranks(values: list[float], device: torch.device) -> list[float]:
    """Element-wise sum of `values` over the ranks (the values themselves outside a group)."""
    if rank_and_size()[1] == 1:
        return values
    total = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(total)
    return total.tolist()


def gathered(value) -> list:
    """Every rank's `value` (any picklable object, tensors included), in rank order, on every rank;
    `[value]` outside a group. Every rank must call it at the same point."""
    if rank_and_size()[1] == 1:
        return [value]
    values = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def setup(timeout: timedelta | None = None) -> torch.device:
    """Join the process group torchrun describes (NCCL on GPUs, gloo on CPUs); each rank's device.
    `timeout`: how long a collective waits for the slowest rank (torch's default when None)."""
    if "LOCAL_RANK" not in os.environ:
        raise RuntimeError(
            "the ranks must be started by torchrun "
            "(python -m torch.distributed.run --nproc_per_node N -m amer_lib.runs.torchrun ...)"
        )
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        if local_rank >= torch.cuda.device_count():
            raise RuntimeError(
                f"rank {local_rank} has no GPU: torch sees {torch.cuda.device_count()}; "
                "use --nproc_per_node <= the number of GPUs"
            )
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", timeout=timeout)
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo", timeout=timeout)
    return torch.device("cpu")


def check_processes(nproc_per_node: int, batch_size: int, workers: int, device: str) -> int:
    """The worker processes runs of `nproc_per_node` processes each can use: `workers` for runs of
    one process, 1 for runs of several, which torchrun trains one after the other (a message says
    so when `workers` asked for more: capped, not refused, as `runs.dispatch.training_workers` caps
    the workers on GPUs, so that notebook 04's offline default `workers = 2` runs as written with
    `-p nproc_per_node 4`). Combinations a distributed run cannot honour are refused, naming the
    parameter to change."""
    if nproc_per_node == 1:
        return workers
    if batch_size % nproc_per_node:
        raise ValueError(
            f"batch_size {batch_size} is the global batch and must divide evenly among "
            f"nproc_per_node = {nproc_per_node} processes"
        )
    gpus = torch.cuda.device_count()
    if device != "cpu" and gpus and nproc_per_node > gpus:
        raise ValueError(f"nproc_per_node = {nproc_per_node} but torch sees {gpus} GPU(s)")
    if workers != 1:
        print(
            f"workers = {workers} and nproc_per_node = {nproc_per_node}: each run is trained by "
            f"{nproc_per_node} processes together, one run at a time, so 1 worker (set -p workers 1 to say so)",
            flush=True,
        )
    return 1
