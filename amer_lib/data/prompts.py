"""Text prompts for the query encoder.

The paper states no prompt. This one is the AMER authors' code's: the chat template's user turn
holding their instruction and the query, then the assistant header; outputs are read from the
last prompt position on. The offline MiniLM, which has neither a chat template nor instruction
tuning, gets the query alone.

Llama-3.x chat templates write today's date into the system turn (`strftime_now`) unless the
caller gives `date_string`: the date is pinned, so a prompt is the same on every day (training,
resuming and the reloads of notebooks 05-07 see one prompt).

A `PromptTemplate` holds all of it, the chat template's own text included, so a saved model
(`amer_lib.runs.saved`) builds its prompts as it was trained even where the tokenizer's template
has changed since.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from amer_lib.core.backbones import Backbone

# the AMER authors' instruction (their code's, verbatim; "aspect" sic)
INSTRUCTION = "Retrieve a diverse set of documents that covers multiple aspect of the query.\nQuery: {query}"
INSTRUCTION_SOURCE = "the AMER authors' code (instruction verbatim); the paper states no prompt"
QUESTION_ALONE_SOURCE = "the question alone: the backbone is not instruction-tuned (amer_lib.core.backbones)"

# the Llama-3.2 template's own fallback date, used where `strftime_now` is not defined
PINNED_DATE = "26 Jul 2024"


@dataclass(frozen=True)
class PromptTemplate:
    """How a question becomes the query encoder's prompt text."""

    instruction: str | None  # with `{query}`; None: the question alone
    chat_template: str | None  # the tokenizer's Jinja chat template the text is wrapped in; None: none
    date_string: str = PINNED_DATE  # what a chat template's date reads
    max_length: int = 128  # tokens; longer prompts are truncated
    source: str = INSTRUCTION_SOURCE  # where the prompt comes from

    @classmethod
    def of(cls, backbone: Backbone, tokenizer) -> PromptTemplate:
        """The prompt of `backbone`'s registry entry, with its tokenizer's chat template."""
        if backbone.chat_template and tokenizer.chat_template is None:
            raise ValueError(f"{backbone.name}'s prompts go through a chat template, but its tokenizer has none")
        return cls(
            instruction=INSTRUCTION if backbone.instruction else None,
            chat_template=tokenizer.chat_template if backbone.chat_template else None,
            source=INSTRUCTION_SOURCE if backbone.instruction else QUESTION_ALONE_SOURCE,
        )

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, record: dict) -> PromptTemplate:
        return cls(**record)

    def text(self, tokenizer, question: str) -> str:
        user = self.instruction.format(query=question) if self.instruction else question
        if self.chat_template is None:
            return user
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": user}],
            chat_template=self.chat_template,
            tokenize=False,
            add_generation_prompt=True,
            date_string=self.date_string,
        )

    def tokenize(self, tokenizer, questions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded `input_ids` and `attention_mask` `[N, P]` of every question's prompt."""
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        encoded = tokenizer(
            [self.text(tokenizer, q) for q in questions],
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
            add_special_tokens=self.chat_template is None,  # a chat template holds its own
        )
        return encoded["input_ids"], encoded["attention_mask"]
