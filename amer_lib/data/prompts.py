"""Text prompts for the query encoder.

The paper's prompt is the chat template's user turn holding the instruction and the query, then
the assistant header; outputs are read from the last prompt position on. The offline MiniLM,
which has neither a chat template nor instruction tuning, gets the query alone.
"""

from __future__ import annotations

import torch

from amer_lib.core.backbones import Backbone

INSTRUCTION = "Retrieve a diverse set of documents that covers multiple aspect of the query.\nQuery: {query}"


def prompt_text(tokenizer, question: str, backbone: Backbone) -> str:
    user = INSTRUCTION.format(query=question) if backbone.instruction else question
    if not backbone.chat_template:
        return user
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
    )


def tokenize_prompts(
    tokenizer, questions: list[str], backbone: Backbone, max_length: int = 128
) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded `input_ids` and `attention_mask` `[N, P]` of every question's prompt."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    texts = [prompt_text(tokenizer, q, backbone) for q in questions]
    encoded = tokenizer(
        texts,
        padding=True,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
        add_special_tokens=not backbone.chat_template,
    )  # a chat template holds its own
    return encoded["input_ids"], encoded["attention_mask"]
