"""One run trained by several processes that torchrun starts on this machine (one GPU each).

`launch(runner, params, job)` writes the run's spec (the runner as `module:function`, the
notebook's config as its class and fields, and the run's arguments) and starts
`python -m torch.distributed.run --nproc_per_node N -m amer_lib.runs.torchrun SPEC`; every rank
calls the runner, and rank 0 writes the run's results as a one-process run would
(`amer_lib.core.distributed` holds the rank helpers).
"""

from __future__ import annotations

import argparse
import codecs
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from importlib import import_module
from pathlib import Path

import torch.distributed as dist

from amer_lib.config import Config
from amer_lib.core.device import with_threads
from amer_lib.core.distributed import is_main, setup
from amer_lib.io import write_json


def launch(runner: Callable, params: Config, job: tuple, progress: bool = True) -> None:
    """Train one run (`runner(params, *job, progress=, device=)`) on `params.nproc_per_node`
    processes."""
    name = "_".join(map(str, job))
    target = _qualified_name(runner)
    spec = Path(params.results_dir) / "launch" / f"{name}.json"
    write_json(
        spec, {"runner": target, "config": _qualified_name(type(params)), "params": params.as_dict(), "job": list(job)}
    )
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={params.nproc_per_node}",
        "-m",
        __name__,
        str(spec),
    ]
    command += [] if progress else ["--quiet"]
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as child:
        while chunk := child.stdout.read1(4096):  # rank 0's progress bar, shown where ours would be
            sys.stderr.write(decoder.decode(chunk))
            sys.stderr.flush()
    if child.returncode != 0:
        raise RuntimeError(
            f"distributed run {name} of {target} failed (exit {child.returncode}); command: {' '.join(command)}"
        )


def _qualified_name(obj) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _imported(path: str):
    """The function or class named `module:name`."""
    module, _, name = path.partition(":")
    return getattr(import_module(module), name)


# How long a rank waits at a collective for the slowest. Rank 0 alone runs each validation's
# retrieval (`train(evaluate=...)`) while the others wait at the next collective (the checkpoint's
# random states or its clock, or the next step's gradient all-reduce):
# an exact search streams the whole corpus once, 76.8 GB of float16 shards at 25M x 1536, 13
# minutes where the shards come from a 100 MB/s network filesystem (seconds from the page cache),
# past torch's default of 10 minutes. Two hours leaves ten times that.
RANK_TIMEOUT = timedelta(hours=2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one run, trained by every rank torchrun starts")
    parser.add_argument("spec", help='JSON {"runner": "module:function", "config": "module:Class", "params", "job"}')
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    spec = json.loads(Path(args.spec).read_text())
    device = setup(RANK_TIMEOUT)
    try:
        params = _imported(spec["config"]).from_dict(spec["params"])
        runner = _imported(spec["runner"])
        with_threads(runner, params, *spec["job"], progress=not args.quiet and is_main(), device=device)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
