"""The torch device a run's `device` parameter names."""

from __future__ import annotations

import torch

DEVICES = ("auto", "cpu", "cuda")  # auto: the GPU when torch sees one


def resolve_device(name: str) -> torch.device:
    if name not in DEVICES:
        raise ValueError(f"unknown device {name!r}; valid: {', '.join(DEVICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for, but torch sees no GPU; use device='auto' or 'cpu'")
    return torch.device(name)
