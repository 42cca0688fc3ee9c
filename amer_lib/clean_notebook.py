"""Saved notebooks keep no outputs in git's view: a Jupyter save hook and git's clean filter.

JupyterLab saves a run's outputs, execution counts and its own metadata into the .ipynb. Both
give the notebook as committed instead: every code cell without outputs and execution count, cell
metadata reduced to its tags, the notebook's metadata to its kernel and language, in the JSON
layout Jupyter writes (nbformat: one-space indent, sorted keys); a committed notebook passes
through unchanged. `make install` sets both up (`--install`):

- a Jupyter server extension (this module, enabled in the virtual environment's Jupyter config)
  whose save hook writes a notebook of this repository's notebooks/ folder without its outputs, so
  `git status` stays clean (the open tab keeps them on screen). A JupyterLab started with
  AMER_KEEP_OUTPUTS=1 saves them; `jupyter server extension disable amer_lib.clean_notebook`
  turns the hook off. The extension also serves those notebooks with the kernel metadata their
  kernel will report (`as_the_kernel_reports`): JupyterLab writes it in when the kernel starts and
  would otherwise mark every notebook modified on opening it.
- git's clean filter (`.gitattributes`) stores any notebook without its outputs, whatever saved
  it, so `git diff` shows source edits only (git status still lists a notebook whose file size
  changed, until `git add`). `git config filter.notebook-outputs.clean cat` turns it off in a
  checkout; git skips a filter it has no command for (a checkout without make install, CI).

    python3 amer_lib/clean_notebook.py < notebook.ipynb   # the notebook as git stores it
    python3 amer_lib/clean_notebook.py --install          # both, for this checkout and environment

Standard library only, and run as a file by git (at every `git status` of a saved notebook),
without the virtual environment and without importing amer_lib (and torch).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

FILTER = "notebook-outputs"  # the name .gitattributes gives the filter
COMMAND = "python3 amer_lib/clean_notebook.py"  # git runs it from the checkout's top folder
ROOT = Path(__file__).resolve().parent.parent
EXTENSION = "amer_lib.clean_notebook"  # this module, as a Jupyter server extension
HOOK_CONFIG = Path("jupyter_server_config.d", "amer_lib_clean_notebook.json")  # in a Jupyter config folder
KEEP_OUTPUTS = "AMER_KEEP_OUTPUTS"  # set (to anything but "" or 0): the save hook keeps the outputs
KERNEL_NAMES = {"python3": "Python 3"}  # nbformat's name of the kernel, where JupyterLab shows another


def clean(notebook: dict) -> dict:
    """`notebook` (nbformat 4 JSON) without outputs, execution counts or any metadata but cell
    tags, the kernel and the language's name; the cells' sources, ids and attachments as they are."""
    cells = []
    for cell in notebook["cells"]:
        cell = dict(cell)
        tags = cell.get("metadata", {}).get("tags")
        cell["metadata"] = {"tags": tags} if tags else {}
        if isinstance(cell.get("source"), str):  # nbformat writes a source as its lines
            cell["source"] = cell["source"].splitlines(keepends=True)
        if cell.get("attachments"):  # and an attachment's text as its lines (nbformat.v4.rwbase.split_lines)
            cell["attachments"] = {name: _split_text(bundle) for name, bundle in cell["attachments"].items()}
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cells.append(cell)
    metadata = {}
    kernel = notebook.get("metadata", {}).get("kernelspec")
    if kernel:
        shown = KERNEL_NAMES.get(kernel.get("name"), kernel.get("display_name"))
        metadata["kernelspec"] = {**kernel, "display_name": shown}
    language = notebook.get("metadata", {}).get("language_info", {}).get("name")
    if language:
        metadata["language_info"] = {"name": language}
    return {**notebook, "cells": cells, "metadata": metadata}


SPLIT_TYPES = ("application/javascript", "image/svg+xml")  # besides text/*: the types nbformat writes as lines


def _split_text(bundle: dict) -> dict:
    """A mime bundle with each text value as its lines, as nbformat writes it (base64 data stays one string)."""
    split = lambda kind, value: isinstance(value, str) and (kind.startswith("text/") or kind in SPLIT_TYPES)
    return {kind: value.splitlines(keepends=True) if split(kind, value) else value for kind, value in bundle.items()}


def dumps(notebook: dict) -> str:
    """A notebook as Jupyter writes it, and as the committed notebooks are: nbformat's JSON layout
    (one-space indent, sorted keys, `": "` and `","`, non-ASCII as it is), and the newline its
    `nbformat.write` ends a file with (Jupyter server saves through it); tests/test_clean_notebook.py
    checks that nbformat writes the same bytes."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False, separators=(",", ": ")) + "\n"


def _ours(path: str, contents_manager) -> bool:
    """Whether `path` (the contents manager's) is a notebook of the repository's notebooks/ folder
    (a folder beside an amer_lib holding this file, in any checkout)."""
    file = Path(contents_manager.root_dir, path.lstrip("/")).resolve()
    return file.parent.name == "notebooks" and (file.parent.parent / "amer_lib" / Path(__file__).name).is_file()


def jupyter_hook(model: dict, path: str, contents_manager, **kwargs) -> None:
    """Jupyter server's pre-save hook: a notebook of the repository's notebooks/ folder is saved
    without its outputs."""
    if model.get("type") != "notebook" or os.environ.get(KEEP_OUTPUTS, "0") not in ("", "0"):
        return
    if _ours(path, contents_manager):
        model["content"] = clean(model["content"])


def as_the_kernel_reports(notebook: dict, kernel_specs) -> dict:
    """`notebook` (changed in place) with the metadata JupyterLab writes into a notebook when its
    kernel starts: the kernel's name, display name and language (its kernel spec, from
    `kernel_specs`, a KernelSpecManager), and, for an ipykernel that runs this Python, the
    `language_info` it replies with. JupyterLab's notebook panel sets both (`_updateSpec`,
    `_updateLanguage`) and marks the notebook modified when either differs from what the file held;
    the committed form (`clean`) cannot hold them, as they are the machine's (its ipykernel's display
    name, its Python's version). Served filled in, the notebook opens unmodified, and the save hook
    gives the committed form back. A kernel this machine has no spec for, or one that runs another
    Python, is left as it is."""
    metadata = notebook.get("metadata", {})
    name = metadata.get("kernelspec", {}).get("name")
    try:
        spec = kernel_specs.get_kernel_spec(name) if name else None
    except KeyError:  # jupyter_client's NoSuchKernel: JupyterLab asks which kernel, a change anyway
        spec = None
    if spec is None:
        return notebook
    metadata["kernelspec"] = {"name": name, "display_name": spec.display_name, "language": spec.language}
    if _runs_this_python(spec.argv):
        from ipykernel.ipkernel import IPythonKernel

        metadata["language_info"] = json.loads(json.dumps(IPythonKernel.language_info))
    return notebook


def _runs_this_python(argv: list[str]) -> bool:
    """Whether a kernel spec's command is an ipykernel run by this Python (jupyter_client runs a
    spec's `python`, `python3` or `python3.X` as the server's own interpreter)."""
    if len(argv) < 3 or not any("ipykernel" in word for word in argv[1:3]):
        return False
    names = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}
    return argv[0] in names or Path(argv[0]).resolve() == Path(sys.executable).resolve()


def _serve_as_the_kernel_reports(contents_manager, kernel_specs) -> None:
    """The contents manager's `get` gives a notebook of the repository's notebooks/ folder with the
    metadata its kernel will report (`as_the_kernel_reports`); Jupyter server has no hook for that."""
    get = contents_manager.get

    def filled(model: dict, path: str) -> dict:
        if model.get("type") == "notebook" and model.get("content") and _ours(path, contents_manager):
            as_the_kernel_reports(model["content"], kernel_specs)
        return model

    if inspect.iscoroutinefunction(get):  # jupyter server's default manager is asynchronous

        async def served(path: str, *args, **kwargs) -> dict:
            return filled(await get(path, *args, **kwargs), path)

    else:

        def served(path: str, *args, **kwargs) -> dict:
            return filled(get(path, *args, **kwargs), path)

    contents_manager.get = served


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": EXTENSION}]


def _load_jupyter_server_extension(server_app) -> None:
    """Jupyter server loads the extension: the save hook joins any others, and this repository's
    notebooks are served with their kernel's metadata (so JupyterLab opens them unmodified)."""
    server_app.contents_manager.register_pre_save_hook(jupyter_hook)
    kernel_specs = getattr(server_app, "kernel_spec_manager", None)
    if kernel_specs is None:  # a server without one (a test's stand-in): this environment's
        from jupyter_client.kernelspec import KernelSpecManager

        kernel_specs = KernelSpecManager()
    _serve_as_the_kernel_reports(server_app.contents_manager, kernel_specs)


def install(root: Path = ROOT, jupyter_config: Path | None = None) -> list[str]:
    """Enable the save hook's extension in this environment's Jupyter config folder (or
    `jupyter_config`), and set the filter up in the git checkout at `root` unless it has a command
    for it already (so one turned off stays off); a folder that is not a git checkout of its own (a
    tarball) gets no filter. What was done, a line each."""
    enabling = (jupyter_config or Path(sys.prefix, "etc", "jupyter")) / HOOK_CONFIG
    enabling.parent.mkdir(parents=True, exist_ok=True)
    enabling.write_text(json.dumps({"ServerApp": {"jpserver_extensions": {EXTENSION: True}}}, indent=2) + "\n")
    done = [f"{enabling}: JupyterLab saves notebooks/*.ipynb without outputs ({KEEP_OUTPUTS}=1: with them)"]
    git = lambda *args: subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    try:
        top = git("rev-parse", "--show-toplevel")
    except OSError:
        return [*done, "no git here: the notebooks' output filter is not set up"]
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root.resolve():
        return [*done, f"{root} is not a git checkout: the notebooks' output filter is not set up"]
    current = git("config", "--local", f"filter.{FILTER}.clean").stdout.strip()
    if current:
        return [*done, f"filter.{FILTER}.clean is {current!r} already (left as it is)"]
    git("config", "--local", f"filter.{FILTER}.clean", COMMAND)
    return [*done, f"git config filter.{FILTER}.clean {COMMAND!r}: git stores notebooks without outputs"]


def main() -> None:
    if sys.argv[1:] == ["--install"]:
        print("\n".join(install()))
        return
    if sys.argv[1:]:
        sys.exit(f"usage: {COMMAND} < notebook.ipynb, or {COMMAND} --install")
    data = sys.stdin.buffer.read()
    try:
        notebook = json.loads(data)
        notebook["cells"]
    except (ValueError, KeyError, TypeError):  # half-written, or not a notebook: git stores it as it is
        print(f"{COMMAND}: not a notebook's JSON, stored with its outputs", file=sys.stderr)
        sys.stdout.buffer.write(data)
        return
    sys.stdout.buffer.write(dumps(clean(notebook)).encode("utf-8"))


if __name__ == "__main__":
    main()
