"""`benchmarks/RESULTS.md` holds one section per benchmark script, each rewritten by its own script."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

import torch

from amer_lib.io import write_text

HEADER = (
    "# Benchmark results\n\nEach section is written by the script it names; all rows of a section come from one run.\n"
)


def machine() -> str:
    """One line: architecture, CPUs, memory, torch and its threads, and the GPU when there is one."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU only"
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs, {memory:.0f} GiB memory, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), {gpu}"
    )


def write_section(path: str | Path, name: str, markdown: str) -> None:
    """Replace (or append) the section between `<!-- begin NAME -->` and `<!-- end NAME -->`."""
    path = Path(path)
    text = path.read_text() if path.exists() else HEADER
    section = f"<!-- begin {name} -->\n{markdown.rstrip()}\n<!-- end {name} -->\n"
    pattern = re.compile(rf"<!-- begin {re.escape(name)} -->\n.*?<!-- end {re.escape(name)} -->\n", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section
    write_text(path, text)
