"""Text prompts for the query encoder.

The paper states no prompt. This one is the AMER authors' code's: the chat template's user turn
holding their instruction and the query, then the assistant header; outputs are read from the
last prompt position on. The offline MiniLM, which has neither a chat template nor instruction
tuning, gets the query alone.

Llama-3.x chat templates write today's date into the system turn (`strftime_now`) unless the
caller gives `date_string`: the date is pinned, so a prompt is the same on every day (training,
resuming and the reloads of notebooks 05-07 see one prompt).
"""

from __future__ import annotations

import torch

from amer_lib.core.backbones import Backbone

# the AMER authors' instruction (their code's, verbatim; "aspect" sic)
INSTRUCTION = "Retrieve a diverse set of documents that covers multiple aspect of the query.\nQuery: {query}"

# the Llama-3.2 template's own fallback date, used where `strftime_now` is not defined
PINNED_DATE = "26 Jul 2024"


def prompt_text(tokenizer, question: str, backbone: Backbone) -> str:
    user = INSTRUCTION.format(query=question) if backbone.instruction else question
    if not backbone.chat_template:
        return user
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True, date_string=PINNED_DATE
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
