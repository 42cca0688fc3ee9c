"""FAISS's two builds: the CPU one by default, the GPU one as the `gpu` extra, and a GPU run that
stops at once while its FAISS sees no GPU."""

import faiss
import pytest
import torch
from conftest import ROOT

from amer_lib.core.device import FAISS_GPU_INSTALL, resolve_device


def test_a_cuda_run_with_the_cpu_build_of_faiss_stops_with_the_command_that_fixes_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0)
    with pytest.raises(RuntimeError, match="FAISS .* sees no GPU") as error:
        resolve_device("cuda")
    assert FAISS_GPU_INSTALL in str(error.value)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    assert resolve_device("cuda") == torch.device("cuda")
    assert resolve_device("cpu") == torch.device("cpu")  # a CPU run never asks


def test_faiss_comes_as_one_extra_or_the_other_pinned_to_one_version():
    pyproject = (ROOT / "pyproject.toml").read_text()  # read as text: tomllib is Python 3.11's
    dependencies = pyproject[
        pyproject.index("dependencies = [") : pyproject.index("]", pyproject.index("dependencies"))
    ]
    assert "faiss" not in dependencies  # both builds install the module `faiss`: one extra or the other
    assert 'cpu = ["faiss-cpu>=1.8"]' in pyproject and 'gpu = ["faiss-gpu>=1.8"]' in pyproject
    pins = dict(
        line.split("#")[0].strip().split("==")
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line.startswith("faiss")
    )
    assert pins == {"faiss-cpu": faiss.__version__, "faiss-gpu": faiss.__version__}
    assert FAISS_GPU_INSTALL.endswith(f'"faiss-gpu=={pins["faiss-gpu"]}"')
    assert '-e ".[$*,cpu]"' in (ROOT / "Makefile").read_text()
    assert "-e .[test,notebooks,cpu]" in (ROOT / "environment.yml").read_text()
