"""Text prompts for the query encoder and the text dataset the training loop reads.

The paper's prompt is the chat template's user turn holding the instruction and the query, then
the assistant header; outputs are read from the last prompt position on. The offline MiniLM,
which has neither a chat template nor instruction tuning, gets the query alone.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .backbones import Backbone
from .data.questions import MultiAnswerQuestion
from .model import AMERQueryEncoder, Prompt
from .train import PaddedTargetData

INSTRUCTION = "Retrieve a diverse set of documents that covers multiple aspect of the query.\nQuery: {query}"


def prompt_text(tokenizer, question: str, backbone: Backbone) -> str:
    user = INSTRUCTION.format(query=question) if backbone.instruction else question
    if not backbone.chat_template:
        return user
    return tokenizer.apply_chat_template([{"role": "user", "content": user}], tokenize=False,
                                         add_generation_prompt=True)


def tokenize_prompts(tokenizer, questions: list[str], backbone: Backbone,
                     max_length: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded `input_ids` and `attention_mask` `[N, P]` of every question's prompt."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    texts = [prompt_text(tokenizer, q, backbone) for q in questions]
    encoded = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt",
                        add_special_tokens=not backbone.chat_template)  # a chat template holds its own
    return encoded["input_ids"], encoded["attention_mask"]


@dataclass
class TextData(PaddedTargetData):
    """Tokenised prompts `[N, P]` (left-padded) and padded target embeddings `[N, M, d]`."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    target_vectors: torch.Tensor
    mask: torch.Tensor

    def prompt(self, model: AMERQueryEncoder, indices: torch.Tensor) -> Prompt:
        ids, mask = self.input_ids[indices], self.attention_mask[indices]
        first = int(mask.any(0).long().argmax())  # drop the columns that are padding in every row
        return model.prompt_from_tokens(ids[:, first:], mask[:, first:])


def target_tensor(questions: list[MultiAnswerQuestion], embedding_of) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded targets `[N, M, d]` and mask: the first gold document of each answer cluster,
    embedded by `embedding_of(list_of_doc_ids) -> [n, d]`."""
    width = max(len(q.targets) for q in questions)
    firsts = [[docs[0] for docs in q.targets] for q in questions]
    vectors = embedding_of([d for ids in firsts for d in ids])
    out = np.zeros((len(questions), width, vectors.shape[1]), dtype=np.float32)
    mask = np.zeros((len(questions), width), dtype=bool)
    cursor = 0
    for i, ids in enumerate(firsts):
        out[i, : len(ids)] = vectors[cursor : cursor + len(ids)]
        mask[i, : len(ids)] = True
        cursor += len(ids)
    return torch.from_numpy(out), torch.from_numpy(mask)
