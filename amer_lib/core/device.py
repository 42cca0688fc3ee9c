"""The torch device a run's `device` parameter names, and the FAISS build it needs."""

from __future__ import annotations

from contextlib import contextmanager

import torch

DEVICES = ("auto", "cpu", "cuda")  # auto: the GPU when torch sees one
# the GPU build of FAISS from PyPI, pinned in constraints.txt (the `gpu` extra of amer_lib)
FAISS_GPU_INSTALL = 'pip uninstall -y faiss-cpu && pip install -c constraints.txt "faiss-gpu==1.15.1"'


class DeviceUnavailableError(RuntimeError):
    """The device asked for is not on this machine (or its FAISS cannot use it)."""


def available_devices() -> list[str]:
    """The devices a run can name here: cpu, and cuda (with each GPU) when torch sees one."""
    if not torch.cuda.is_available():
        return ["cpu"]
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return ["cpu", f"cuda ({len(gpus)} GPU: {', '.join(gpus)})"]


def resolve_device(name: str) -> torch.device:
    """The device of `name`; "cuda" also needs a FAISS that sees the GPUs (`require_gpu_faiss`)."""
    if name not in DEVICES:
        raise ValueError(f"unknown device {name!r}; valid: {', '.join(DEVICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            raise DeviceUnavailableError(
                f"device 'cuda' was asked for, but torch {torch.__version__} ({build}) sees no GPU here; "
                f"devices available here: {', '.join(available_devices())}: use device 'auto' or 'cpu'"
            )
        require_gpu_faiss()
    return torch.device(name)


def require_gpu_faiss() -> None:
    """Stop a GPU run at once when its FAISS is the CPU build: every search of a 25M-passage corpus
    would run on the CPU (hours instead of seconds), the command that fixes it in the message."""
    import faiss

    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if gpus == 0:
        raise DeviceUnavailableError(
            f"device 'cuda' was asked for, but FAISS {faiss.__version__} here sees no GPU (the CPU build, "
            f"faiss-cpu, or a GPU build without a driver): every search would run on the CPU. Install the GPU "
            f'build: {FAISS_GPU_INSTALL} (a fresh environment: pip install -c constraints.txt -e ".[notebooks,gpu]")'
        )


@contextmanager
def cpu_threads(threads: int):
    """torch's CPU threads set to `threads` inside the block and put back after: float sums split
    over threads round by their number, so whatever feeds a result runs on a fixed count, not on
    the machine's cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def with_threads(runner, config, *arguments, **options):
    """`runner(config, *arguments, **options)` on `config.threads` CPU threads (a training run, in
    a worker process or in this one): the same run gives the same numbers whichever machine and
    however many workers."""
    with cpu_threads(config.threads):
        return runner(config, *arguments, **options)
