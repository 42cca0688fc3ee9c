"""How many of its generated vectors an input keeps (notebook 07's n = "auto", up to a maximum).

Two rules, each giving a count per input; the vectors kept are the first count, which is what
a generation of that many would give (each vector depends only on those before it):

- the stop head's (`AMERQueryEncoder.stop_head`): up to and including the first vector whose
  stop probability passes a threshold, the head trained to mark an input's last target;
- the similarity rule: up to, not including, the first vector whose cosine to a vector already
  kept passes a threshold, a vector that would search near a list already searched.
"""

from __future__ import annotations

import numpy as np
import torch


def stop_counts(stop_probability: torch.Tensor, threshold: float) -> torch.Tensor:
    """`[B]` vectors kept per row: up to and including the first position whose stop probability
    `[B, n]` exceeds `threshold`, all n when none does."""
    stops = stop_probability > threshold
    stops[:, -1] = True  # the last position ends every row
    return stops.float().argmax(1) + 1  # argmax: the first True


def repeat_cosine(vectors: np.ndarray) -> np.ndarray:
    """`[B, n]` each vector's highest cosine to an earlier vector of its row `vectors [B, n, d]`
    (-inf for the first)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
    cosine = np.einsum("bid,bjd->bij", unit, unit)
    earlier = np.tril(np.ones(cosine.shape[1:], dtype=bool), k=-1)  # j < i
    return np.where(earlier, cosine, -np.inf).max(-1)


def similarity_counts(vectors: np.ndarray, max_cosine: float) -> np.ndarray:
    """`[B]` vectors kept per row of `vectors [B, n, d]`: those before the first whose cosine to an
    earlier vector exceeds `max_cosine` (at least the first, all n when none does)."""
    repeats = repeat_cosine(vectors) > max_cosine  # position 0 never repeats
    repeats = np.concatenate([repeats, np.ones((len(vectors), 1), dtype=bool)], axis=1)
    return repeats.argmax(1)  # the first repeat's position = the count before it; n when none
