"""Atomic writes (a crash never leaves a half-written file under the final name), a notebook's
outputs published together at its end, TREC run and qrels files, and run metadata."""

from __future__ import annotations

import errno
import glob
import gzip
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch


class DiskFullError(OSError):
    """A write its disk could not hold, said in one line: the path, the bytes it needed, the bytes free."""


FULL_BYTES = 1 << 20  # a write that failed with less than this free on its disk failed for want of space


@contextmanager
def atomic_path(path: str | Path, size: int | None = None):
    """Yield a temporary path beside `path`; on success it replaces `path` in one rename. The
    temporary file names its writer's process (`.<name>.<pid>.<random>.tmp`); one left by a writer
    that is gone (a hard kill mid-write) is removed by the next write of `path`. `size`: the bytes
    the write needs at least, refused before writing when the disk has fewer free. A write that
    fails for want of space, however deep the library that hit it (torch's "iostream error" names no
    errno), is a `DiskFullError`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    if size is not None and shutil.disk_usage(path.parent).free < size:
        raise disk_full(path, size, 0) from None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except Exception as error:
        if not isinstance(error, DiskFullError) and _out_of_space(error, path.parent):
            written = os.path.getsize(tmp) if os.path.exists(tmp) else 0
            os.remove(tmp)
            raise disk_full(path, size, written) from None
        raise
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _out_of_space(error: BaseException, folder: Path) -> bool:
    """Whether a failed write failed for want of space: ENOSPC (or EDQUOT) anywhere in its chain, or
    (a library that hides the errno) less than `FULL_BYTES` left on the disk."""
    seen = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        seen = seen.__cause__ or seen.__context__
    try:
        return shutil.disk_usage(folder).free < FULL_BYTES
    except OSError:
        return False


def disk_full(path: Path, size: int | None, written: int) -> DiskFullError:
    """The one line a write that did not fit says."""
    free = shutil.disk_usage(path.parent).free
    needed = f"{size:,} bytes needed" if size is not None else f"more than the {written:,} bytes it wrote"
    return DiskFullError(
        errno.ENOSPC,
        f"no space left for {path}: {needed}, {free:,} free on its disk. Free space there (or choose another "
        "folder) and run the same command again: what was written before is kept",
    )


def tensor_bytes(payload) -> int:
    """The bytes of the tensors in `payload` (dicts, lists, tuples of them): the least a torch.save of it needs."""
    if isinstance(payload, torch.Tensor):
        return payload.untyped_storage().nbytes()
    if isinstance(payload, dict):
        return sum(tensor_bytes(value) for value in payload.values())
    if isinstance(payload, (list, tuple)):
        return sum(tensor_bytes(value) for value in payload)
    return 0


def _remove_stale_temporaries(path: Path) -> None:
    """Remove `atomic_path`'s temporary files for `path` whose writing process is gone (or that name
    none: left by a writer before they named one)."""
    ours = re.compile(rf"\.{re.escape(path.name)}\.(?:(\d+)\.)?[^.]+\.tmp")  # mkstemp's random part has no dot
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        match = ours.fullmatch(tmp.name)
        if match and not (match.group(1) and _process_alive(match.group(1))):
            tmp.unlink(missing_ok=True)


def _remove_stale_staging(path: Path) -> None:
    """Remove `atomic_folder`'s staging folders for `path` (`.<name>.<pid>.<random>`, and the
    `.old` copy beside one) whose writing process is gone: a hard kill mid-fill."""
    ours = re.compile(rf"\.{re.escape(path.name)}\.(\d+)\.[^.]+(?:\.old)?")
    for staging in path.parent.glob(f".{glob.escape(path.name)}.*"):
        match = ours.fullmatch(staging.name)
        if match and staging.is_dir() and not _process_alive(match.group(1)):
            shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def atomic_folder(path: str | Path):
    """Yield a fresh folder beside `path` to fill; on success it replaces `path` in one rename
    (readable as the umask allows, as a folder made with mkdir would be). A fill that fails for want
    of space is a `DiskFullError`, as in `atomic_path`. The staging folder names its writer's
    process; one left by a writer that is gone is removed by the next fill of `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(path)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}.", dir=path.parent))
    aside = staging.with_name(staging.name + ".old")  # the folder it replaces, until the new one is in place
    try:
        yield staging
        _readable_as_umask_allows(staging)  # mkdtemp's folder is private, and some writers (safetensors) too
        if path.exists():
            os.replace(path, aside)
        os.replace(staging, path)
    except Exception as error:
        if not isinstance(error, DiskFullError) and _out_of_space(error, path.parent):
            written = sum(f.stat().st_size for f in staging.rglob("*") if f.is_file())
            shutil.rmtree(staging, ignore_errors=True)
            raise disk_full(path, None, written) from None
        raise
    finally:
        if aside.exists() and not path.exists():  # the second rename failed: the old folder goes back
            os.replace(aside, path)
        shutil.rmtree(aside, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)


def require_writable(folder: str | Path, parameter: str) -> None:
    """Stop before any work when `folder` cannot be written (a run would fail there after its
    costly steps): its nearest existing folder must take a file. Nothing is left behind, not even
    the missing folders (made when first written). `parameter` is the setting that names it."""
    folder = Path(folder)
    existing = next(p for p in [folder, *folder.absolute().parents] if p.exists())
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is a file, not a folder")
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as error:
        reason = error.strerror or str(error)
        raise PermissionError(
            f"{parameter} {str(folder)!r} cannot be written ({reason} in {existing}): "
            f"set {parameter} to a folder you can write"
        ) from error


def _readable_as_umask_allows(folder: Path) -> None:
    """The modes open() and mkdir() would have given, for `folder` and everything in it."""
    mask = _umask()
    for item in [folder, *folder.rglob("*")]:
        if not item.is_symlink():
            item.chmod((0o777 if item.is_dir() else 0o666) & ~mask)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ----- a notebook's outputs, published together ----------------------------------------------------
# A notebook writes its figures and tables into a folder of its own inside `figures_dir` and moves
# them into place in its last cell: a run that fails or is killed changes nothing there (the
# committed figures stay as they were, with the parameters that made them), and leaves only a
# hidden folder that .gitignore names and the next run removes.

STAGE_PREFIX = ".unpublished-"

# Where a notebook's outputs go. A run by hand (JupyterLab, or papermill outside a Makefile target)
# leaves the tracked figures/ alone: its outputs go to results/figures/<notebook>, which git ignores,
# and so do those a parameter file sends to a folder under figures/ (params/02_synthetic/mlp_sweep.yaml's
# figures/02_synthetic_mlp_sweep goes to results/figures/02_synthetic_mlp_sweep). Only the Makefile's
# figure targets, which set COMMAND_VARIABLE, publish into figures/. A figures_dir elsewhere is used
# as it is.
FIGURES = "../figures"  # paths relative to notebooks/, where the kernel runs (`amer_lib.params.snapshot`)
UNPUBLISHED_FIGURES = "../results/figures"
FIGURES_HELP = '"": results/figures/<notebook> (git-ignored); the Makefile\'s figure targets: figures/<notebook>'


def figures_folder(figures_dir: str, notebook: str, echo: bool = True) -> Path:
    """The folder a notebook's outputs go to: `figures_dir`, or figures/<notebook> when it is "";
    a folder under figures/ only under a Makefile figure target, results/figures/<the same name>
    otherwise. `echo` prints where, and how to publish."""
    folder = Path(figures_dir) if figures_dir else Path(FIGURES) / notebook
    try:
        name = folder.resolve().relative_to(Path(FIGURES).resolve())
    except ValueError:  # a folder of the user's own
        name = None
    published = bool(os.environ.get(COMMAND_VARIABLE))
    if name is not None and not published:
        folder = Path(UNPUBLISHED_FIGURES) / name
    if echo:
        if name is None:
            print(f"outputs: {folder}")
        elif published:
            print(f"outputs: {folder} (published: this run's provenance.json names {_command()!r})")
        else:
            print(
                f"outputs: {folder} (git-ignored; figures/{name}, which git tracks, is written only by the "
                "Makefile's figure targets: make figures, make figures-compound, make figures-mlp-sweep)"
            )
    return folder


def _command() -> str:
    return os.environ.get(COMMAND_VARIABLE, NOT_A_TARGET)


def stage(folder: str | Path) -> Path:
    """A fresh folder inside `folder` for this process's outputs (`publish` moves them out); the
    folders of earlier runs whose process has ended are removed first."""
    folder = Path(folder)
    for old in folder.glob(f"{STAGE_PREFIX}*"):
        if not _process_alive(old.name.removeprefix(STAGE_PREFIX)):
            shutil.rmtree(old, ignore_errors=True)
    staged = folder / f"{STAGE_PREFIX}{os.getpid()}"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    _STAGED_AT[staged.resolve()] = time.time()
    return staged


_STAGED_AT: dict[Path, float] = {}  # when each stage of this process was made: the run's wall time
PROVENANCE = "provenance.json"
COMMAND_VARIABLE = "AMER_COMMAND"  # what started the run: the Makefile's figure targets set it
NOT_A_TARGET = "not a Makefile target (a notebook run by hand or by papermill)"
PROVENANCE_PACKAGES = ("torch", "transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu", "numpy", "scipy")

# The CPU kernels' instruction set and the notebook process's threads, held by the Makefile's figure
# targets (FIGURE_KERNELS) so that the figures do not depend on a CPU's own best set or its cores:
# the same run trained with AVX-512 and with AVX2 kernels ends one MRecall point apart
# (studies/instruction_sets/instruction_sets.md). Checked on one machine so far (make check-figures in a fresh
# clone); any x86-64 CPU with AVX2 should take the same paths. Each variable is read when its
# library loads.
KERNEL_VARIABLES = {
    "OMP_NUM_THREADS": "1",  # a notebook's own process (generation in 05-07, FAISS); trainings set `threads`
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (torch's mkldnn)
    "MKL_CBWR": "AVX2",  # MKL, torch's BLAS: conditional numerical reproducibility
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",  # OpenBLAS (numpy's, FAISS's BLAS)
    "FAISS_SIMD_LEVEL": "AVX2",  # FAISS's dynamically dispatched kernels
}


def cpu_kernels() -> dict:
    """The instruction sets this process's kernels run with, and the variables that hold them."""
    import faiss

    faiss_level = faiss.SIMDConfig.get_level_name() if hasattr(faiss, "SIMDConfig") else "unknown"
    return {
        "torch": torch.backends.cpu.get_cpu_capability(),
        "faiss": faiss_level,
        "environment": {name: os.environ.get(name) for name in KERNEL_VARIABLES},
    }


def end_with_parent(parent: int) -> None:
    """In a child process: a daemon thread that ends it once `parent` is gone, so that a killed
    notebook leaves no worker behind (training workers, forked BM25 searchers)."""

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


class StopRequest:
    """What `stop_requests` noted: `signal`, the name of the first SIGINT or SIGTERM received
    (None: none yet)."""

    def __init__(self):
        self.signal: str | None = None

    def __bool__(self) -> bool:
        return self.signal is not None


@contextmanager
def stop_requests():
    """Around a long loop in the main thread: the first SIGINT (Ctrl-C, a kernel's interrupt) or
    SIGTERM (`kill`, a pool ending its workers, a job scheduler, nbclient's shutdown) is noted, not
    raised, so the loop stops at its next safe point (after writing what resumes it, then raising a
    KeyboardInterrupt) when the yielded `StopRequest` is true. A second SIGINT raises
    KeyboardInterrupt at once. A request the loop did not act on (it ended first, or failed) is
    delivered again once the previous handlers are back: the process still stops as it was asked
    to. Off the main thread signals are left as they are."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def note(signum, frame):
        if request.signal == "SIGINT" and signum == signal.SIGINT:
            raise KeyboardInterrupt
        request.signal = request.signal or signal.Signals(signum).name

    previous = {signum: signal.signal(signum, note) for signum in (signal.SIGINT, signal.SIGTERM)}
    acted = False
    try:
        yield request
    except KeyboardInterrupt:
        acted = True
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if request and not acted:
            signal.raise_signal(signal.Signals[request.signal])


def _process_alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def publish(staged: str | Path) -> list[Path]:
    """Move every file of a `stage` folder into its parent folder (one rename each, replacing what
    is there), with the run's `provenance.json`, and remove the stage; the published paths, sorted."""
    staged = Path(staged)
    if not staged.name.startswith(STAGE_PREFIX):
        raise ValueError(f"{staged} is not a folder made by stage() (its name starts with {STAGE_PREFIX!r})")
    write_json(staged / PROVENANCE, provenance(staged))
    published = []
    for path in sorted(p for p in staged.rglob("*") if p.is_file()):
        target = staged.parent / path.relative_to(staged)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        published.append(target)
    shutil.rmtree(staged)
    return published


def provenance(staged: Path) -> dict:
    """What made a folder's outputs: the code's commit, the command, the threads, the versions of
    the packages that compute, the CPU and its kernels' instruction sets, the wall time since `stage`."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version()}
    for package in PROVENANCE_PACKAGES:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            pass
    began = _STAGED_AT.get(Path(staged).resolve())
    return {
        "commit": git_commit(),
        "command": _command(),
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "cpu": _cpu_model(),
        "kernels": cpu_kernels(),
        "versions": versions,
        "wall_seconds": None if began is None else round(time.time() - began, 1),
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def staged_or_published(folder: str | Path, pattern: str) -> list[Path]:
    """The files matching `pattern` a notebook sees while it writes into a `stage` folder: its own,
    and the published ones it has not written again (by name, sorted)."""
    folder = Path(folder)
    files = {p.name: p for p in folder.glob(pattern)}
    if folder.name.startswith(STAGE_PREFIX):
        files = {**{p.name: p for p in folder.parent.glob(pattern)}, **files}
    return [files[name] for name in sorted(files)]


def open_text(path: str | Path, newline: str | None = None):
    """Open a UTF-8 text file for reading, gunzipping `.gz` files."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline=newline)
    return open(path, encoding="utf-8", newline=newline)


def write_text(path: str | Path, text: str) -> None:
    data = text.encode()
    with atomic_path(path, size=len(data)) as tmp:
        tmp.write_bytes(data)


def write_json(path: str | Path, payload) -> None:
    write_text(path, json.dumps(payload, indent=2, sort_keys=True, default=_jsonable) + "\n")


def save_torch(path: str | Path, payload) -> None:
    """torch.save `payload` to `path` atomically, with its record beside it (`write_recorded`)."""
    write_recorded(path, lambda tmp: torch.save(payload, tmp), size=tensor_bytes(payload))


def write_recorded(path: str | Path, write: Callable[[Path], None], size: int | None = None) -> None:
    """`write(tmp)` a file that replaces `path` atomically (`atomic_path`, `size` its bytes at least),
    with its record beside it (`<name>.sha256`: the file's sha256 and size, and the sha256 of the
    file it replaces), which `recorded_damage` checks before the file is trusted: torch.load and
    np.load read a changed byte of a tensor without a word. The record is written before the file
    moves into place, so a crash between the two leaves the previous file, which it still names."""
    path = Path(path)
    with atomic_path(path, size=size) as tmp:
        write(tmp)
        record = digest_record(path)
        previous = json.loads(record.read_text()).get("sha256") if record.exists() else None
        write_json(record, {"sha256": file_sha256(tmp), "bytes": tmp.stat().st_size, "previous": previous})


def digest_record(path: Path) -> Path:
    """Where `write_recorded` keeps a file's record."""
    return path.with_name(path.name + ".sha256")


def recorded_damage(path: str | Path) -> str | None:
    """What is wrong with a file `write_recorded` wrote, or None when it holds the bytes its record
    says (or those of the file it replaced: a crash came between the record and the rename)."""
    path = Path(path)
    record_path = digest_record(path)
    if not record_path.exists():
        return f"it has no record of its sha256 ({record_path.name}): it was not written by this library"
    try:
        record = json.loads(record_path.read_text())
        sha256 = record["sha256"]
    except (ValueError, KeyError, TypeError):
        return f"its record {record_path.name} is garbled"
    now = file_sha256(path)
    if now not in (sha256, record.get("previous")):
        sizes = f"{path.stat().st_size:,} bytes now, {record['bytes']:,} then"
        return f"its sha256 is {now[:12]}, {sha256[:12]} when written ({sizes})"
    return None


def folder_files(folder: Path, manifest: str) -> dict[str, dict]:
    """Each file under `folder` but its manifest, by relative name: its size and sha256 (what a
    folder's manifest keeps of what it holds, for `folder_damage`)."""
    return {
        str(path.relative_to(folder)): {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != manifest
    }


def folder_damage(folder: Path, files: dict[str, dict] | None, manifest: Path) -> str | None:
    """What is wrong with a folder whose `manifest` records its `files` (`folder_files`), or None
    when each is there as `file_damage` checks it against the manifest's time (the manifest is then
    touched past any file read, so the next look is cheap). `files` None: a folder written before
    its files were recorded."""
    if files is None:
        return "its files were not recorded when it was written"
    written, read = manifest.stat().st_mtime_ns, 0
    for name, record in files.items():
        if not (folder / name).is_file():
            return f"{name} is gone"
        damage, checked = file_damage(folder / name, record, written, name)
        if damage is not None:
            return damage
        read = max(read, checked)
    if read:
        touch_past(manifest, read)
    return None


def file_damage(path: Path, record: dict, written_ns: int, name: str | None = None) -> tuple[str | None, int]:
    """How the file at `path` differs from its `record` (`bytes`, `sha256`) written at `written_ns`,
    or None, and the modification time at which it was read (0: not read). Its size is always
    compared; its bytes are read and their sha256 compared only when it was modified after the
    record. `name`: how the message names it (its file name by default)."""
    name = name or path.name
    stat = path.stat()
    if stat.st_size != record["bytes"]:
        return f"{name} is {stat.st_size:,} bytes, {record['bytes']:,} when written", 0
    if stat.st_mtime_ns <= written_ns:
        return None, 0
    if (now := file_sha256(path)) != record["sha256"]:
        return f"{name} has sha256 {now[:12]}, {record['sha256'][:12]} when written", 0
    return None, stat.st_mtime_ns


def touch_past(record: Path, mtime_ns: int) -> None:
    """Set `record`'s modification time to now or `mtime_ns`, whichever is later: the files it
    records, read and found sound, are then older than it."""
    touched = max(time.time_ns(), mtime_ns)
    os.utime(record, ns=(touched, touched))


def remove_recorded(path: Path) -> None:
    """Remove a file `write_recorded` wrote, and its record."""
    path.unlink(missing_ok=True)
    digest_record(path).unlink(missing_ok=True)


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


# what a figure target writes besides the code's outputs under figures/: the README's verdicts
# (`amer_lib.report.results_page`), rewritten at the end of each target, so a later target in the
# same checkout still names a clean commit
PUBLISHED = ("figures", "README.md")


def git_commit(root: Path | None = None) -> str | None:
    """The commit of the checkout this code runs from (or of `root`), with '+dirty' for local
    changes to anything but what the figure targets publish (`PUBLISHED`)."""
    root = root or Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        excluded = [f":(exclude){path}" for path in PUBLISHED]
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *excluded],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def trec_id(identifier: str) -> str:
    """An id as TREC files hold it: fields are split on whitespace, so whitespace (and `%`, to keep
    the encoding reversible) is percent-encoded: the WordNet qid `senses:samuel butler` becomes
    `senses:samuel%20butler`, in the run files and the qrels alike."""
    return re.sub(r"[\s%]", lambda m: f"%{ord(m.group()):02X}", identifier)


def write_trec_qrels(path: Path, relevant: dict[str, list[str]]) -> None:
    """`qid 0 docid 1` per relevant document: the qrels trec_eval, ir_measures and ranx read."""
    with atomic_path(path) as tmp, open(tmp, "w") as out:
        for qid, doc_ids in relevant.items():
            for doc_id in dict.fromkeys(doc_ids):
                out.write(f"{trec_id(qid)} 0 {trec_id(doc_id)} 1\n")


def write_trec_run(
    path: Path,
    qids: list[str],
    ranked_ids: list[list[str]],
    tag: str,
    depth: int,
    scores: Sequence[Sequence[float]] | None = None,
) -> str:
    """`qid Q0 docid rank score tag` per retrieved document of top-`depth` lists. A merged list
    has no native score, so by default score = depth - rank + 1; `scores` ([Q, depth] floats) writes
    those instead (six decimals), which trec_eval and ir_measures rank by, not by the rank column.
    Returns the file's sha256, which a cache of the run keeps to check the file before trusting it
    (`file_matches`)."""
    digest = hashlib.sha256()
    with atomic_path(path) as tmp, open(tmp, "w") as out:
        for q, (qid, ids) in enumerate(zip(qids, ranked_ids)):
            for rank, doc_id in enumerate(ids, 1):
                score = depth - rank + 1 if scores is None else f"{scores[q][rank - 1]:.6f}"
                line = f"{trec_id(qid)} Q0 {trec_id(doc_id)} {rank} {score} {trec_id(tag)}\n"
                out.write(line)
                digest.update(line.encode())
    return digest.hexdigest()


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, read a MiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_record(path: str | Path) -> dict:
    """What an output keeps of a file it was made from: its resolved path, size, modification time
    and sha256 (`changed_since` compares a file with it)."""
    path = Path(path).resolve()
    stat = path.stat()
    return {"path": str(path), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_sha256(path)}


def changed_since(path: str | Path, record: dict) -> str | None:
    """How the file at `path` differs from its `file_record`, or None when it holds the same bytes:
    one with the recorded size and modification time is taken as unchanged without reading it;
    another is read, and only a different sha256 is a change."""
    stat = Path(path).stat()
    if (stat.st_size, stat.st_mtime_ns) == (record["bytes"], record["mtime_ns"]):
        return None
    now = file_sha256(path)
    if now == record["sha256"]:
        return None
    return f"sha256 {record['sha256'][:12]} then, {now[:12]} now; {record['bytes']:,} bytes then, {stat.st_size:,} now"


def file_matches(path: str | Path, sha256: str) -> bool:
    """Whether the file at `path` is there and holds the bytes whose sha256 is `sha256`."""
    return Path(path).is_file() and file_sha256(path) == sha256
