"""AMER: the Autoregressive Multi-Embedding Retriever (reference implementation).

The names below are imported on first use, so that importing a light module of the package (the
Jupyter save hook `amer_lib.clean_notebook`, which JupyterLab loads at start) does not load torch."""

from importlib import import_module

_HOMES = {
    "BACKBONES": "amer_lib.core.backbones",
    "get_backbone": "amer_lib.core.backbones",
    "load_backbone": "amer_lib.core.backbones",
    "info_nce": "amer_lib.core.loss",
    "matched_info_nce": "amer_lib.core.loss",
    "round_robin_merge": "amer_lib.core.merge",
    "mrecall_at_k": "amer_lib.core.metrics",
    "recall_at_k": "amer_lib.core.metrics",
    "AMERQueryEncoder": "amer_lib.core.model",
    "Prompt": "amer_lib.core.model",
    "VectorIndex": "amer_lib.core.index",
    "multi_vector_search": "amer_lib.core.index",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'amer_lib' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
