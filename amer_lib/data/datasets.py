"""The datasets the training loop reads (`amer_lib.core.train.MultiTargetData`): row-aligned
tensors of prompts (input vectors or tokenised questions) and padded target embeddings."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from amer_lib.core.model import AMERQueryEncoder, Prompt
from amer_lib.data.questions import MultiAnswerQuestion


class PaddedTargetData:
    """Base of the datasets: dataclasses of row-aligned tensors holding padded targets
    `target_vectors [N, M, d]` and their `mask [N, M]`; the first field sets the length."""

    target_vectors: torch.Tensor
    mask: torch.Tensor

    def __post_init__(self):
        empty = torch.nonzero(self.mask.sum(-1) == 0).flatten()
        if len(empty):
            raise ValueError(f"examples {empty[:10].tolist()} have no targets")

    def _tensors(self) -> list[torch.Tensor]:
        return [getattr(self, f.name) for f in fields(self)]

    def __len__(self) -> int:
        return len(self._tensors()[0])

    def targets(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.target_vectors[indices], self.mask[indices]

    def hard_negatives(self, indices: torch.Tensor) -> torch.Tensor:
        """Each example's mined hard negatives `[B, H, d]` (`MinedTextData`)."""
        raise ValueError(
            f"{type(self).__name__} holds no mined hard negatives: hard_negative_share > 0 needs MinedTextData "
            "(amer_lib.data.hard_negatives)"
        )

    def components(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each example's component vectors `[B, C, d]` and mask `[B, C]` (`ComponentTextData`)."""
        raise ValueError(
            f"{type(self).__name__} holds no component vectors: component_weight > 0 needs ComponentTextData "
            "(amer_lib.runs.run_context.RunContext.component_text_data)"
        )

    def subset(self, indices: torch.Tensor):
        return type(self)(*(t[indices] for t in self._tensors()))

    def to(self, device: torch.device | str):
        return type(self)(*(t.to(device) for t in self._tensors()))


@dataclass
class VectorData(PaddedTargetData):
    """Synthetic data: one input vector per example, `targets [N, M, d]`, `mask [N, M]`."""

    inputs: torch.Tensor
    target_vectors: torch.Tensor
    mask: torch.Tensor

    def prompt(self, model: AMERQueryEncoder, indices: torch.Tensor) -> Prompt:
        return model.prompt_from_vectors(self.inputs[indices])


@dataclass
class TextData(PaddedTargetData):
    """Tokenised prompts `[N, P]` (left-padded) and padded target embeddings `[N, M, d]`."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    target_vectors: torch.Tensor
    mask: torch.Tensor

    def prompt(self, model: AMERQueryEncoder, indices: torch.Tensor) -> Prompt:
        return token_prompt(model, self.input_ids[indices], self.attention_mask[indices])


@dataclass
class MinedTextData(TextData):
    """`TextData` with each question's mined hard negatives `hard_vectors [N, H, d]`
    (`amer_lib.data.hard_negatives`), beyond the paper."""

    hard_vectors: torch.Tensor

    def hard_negatives(self, indices: torch.Tensor) -> torch.Tensor:
        return self.hard_vectors[indices]


@dataclass
class ComponentTextData(TextData):
    """`TextData` with the off-the-shelf encoder's vectors of the questions each example is made
    of, `component_vectors [N, C, d]` and `component_mask [N, C]` (valid first): a compound
    question's components, a plain question itself (`amer_lib.beyond.component`), beyond the paper."""

    component_vectors: torch.Tensor
    component_mask: torch.Tensor

    def components(self, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.component_vectors[indices], self.component_mask[indices]


def token_prompt(model: AMERQueryEncoder, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Prompt:
    """The prompt of left-padded token rows, without the columns that are padding in every row."""
    first = int(attention_mask.any(0).long().argmax())
    return model.prompt_from_tokens(input_ids[:, first:], attention_mask[:, first:])


def target_tensor(questions: list[MultiAnswerQuestion], embedding_of) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded targets `[N, M, d]` and mask: the first gold document of each answer cluster,
    embedded by `embedding_of(list_of_doc_ids) -> [n, d]`."""
    return padded_vectors([[docs[0] for docs in q.targets] for q in questions], embedding_of)


def padded_vectors(rows: list[list], embedding_of) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's items embedded by `embedding_of(list_of_items) -> [n, d]` (one call for all),
    padded to `[N, M, d]` with the mask `[N, M]` of the real ones (first)."""
    width = max(len(row) for row in rows)
    vectors = embedding_of([item for row in rows for item in row])
    out = np.zeros((len(rows), width, vectors.shape[1]), dtype=np.float32)
    mask = np.zeros((len(rows), width), dtype=bool)
    cursor = 0
    for i, row in enumerate(rows):
        out[i, : len(row)] = vectors[cursor : cursor + len(row)]
        mask[i, : len(row)] = True
        cursor += len(row)
    return torch.from_numpy(out), torch.from_numpy(mask)
