"""AMER: the Autoregressive Multi-Embedding Retriever (reference implementation)."""

from amer_lib.core.backbones import BACKBONES, get_backbone, load_backbone
from amer_lib.core.loss import info_nce, matched_info_nce
from amer_lib.core.merge import round_robin_merge
from amer_lib.core.metrics import mrecall_at_k, recall_at_k
from amer_lib.core.model import AMERQueryEncoder, Prompt
from amer_lib.core.search import VectorIndex, multi_vector_search

__all__ = [
    "BACKBONES",
    "AMERQueryEncoder",
    "Prompt",
    "VectorIndex",
    "get_backbone",
    "info_nce",
    "load_backbone",
    "matched_info_nce",
    "mrecall_at_k",
    "multi_vector_search",
    "recall_at_k",
    "round_robin_merge",
]
