"""The AMER query encoder: a decoder LM that emits a sequence of query embeddings.

Sequence layout (paper, Section 4): the prompt (text tokens, or one input vector projected by
`input_projection` in the synthetic task), then one position per fed-back embedding. Output j is
the last hidden state read at position `prompt_len - 1 + j`, passed through `output_projection`.
During training position j > 0 holds `input_projection(y_j)` for the j-th gold target, or, with
scheduled sampling, `input_projection(output_{j-1})`, the model's own previous output.
The single-query baseline is the same class asked for one output.

Beyond the paper (notebook 07), an optional stop head reads a logit from the same hidden state as
each output: "this is the last vector this prompt needs". Generation then runs to a maximum and
each prompt keeps its vectors up to the first one whose stop probability passes a threshold; the
vectors before it are what a fixed-n generation would give, since each depends only on those
before it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel

from amer_lib.core.backbones import adapter_input_casts, adapter_layers, cache_keyword
from amer_lib.core.checkpointing import ReplayCache
from amer_lib.core.stopping import stop_counts


@dataclass
class Prompt:
    """Prompt embeddings `[B, P, H]` with a left-padded attention mask `[B, P]`."""

    embeds: torch.Tensor
    mask: torch.Tensor

    @property
    def positions(self) -> torch.Tensor:
        return (self.mask.long().cumsum(-1) - 1).clamp(min=0)

    @property
    def last_position(self) -> torch.Tensor:
        return self.mask.long().sum(-1) - 1


@dataclass(frozen=True)
class Position:
    """One position of the sequence: what is fed there, and which output (if any) is read there."""

    index: int
    fed: str  # "prompt" (a token, or the projected input vector) or "output" (a fed-back embedding)
    fed_output: int | None  # for fed == "output": which output j is fed back
    read_output: int | None  # the output read from this position's last hidden state


def sequence_layout(prompt_length: int, n_outputs: int) -> list[Position]:
    """The sequence the model runs: `prompt_length` prompt positions, then outputs 0..n-2 fed
    back; output j is read at position `prompt_length - 1 + j`. `_teacher_forced` reads its
    outputs from exactly these positions, and Figure 2 is drawn from this list."""
    if prompt_length < 1 or n_outputs < 1:
        raise ValueError(f"a sequence needs prompt_length >= 1 and n_outputs >= 1, got {prompt_length}, {n_outputs}")
    read = {prompt_length - 1 + j: j for j in range(n_outputs)}
    positions = [Position(i, "prompt", None, read.get(i)) for i in range(prompt_length)]
    positions += [Position(prompt_length + j, "output", j, read.get(prompt_length + j)) for j in range(n_outputs - 1)]
    return positions


class AMERQueryEncoder(nn.Module):
    """Backbone + input/output projections (no bias) between embedding and hidden space."""

    def __init__(self, backbone: PreTrainedModel, embedding_dim: int, stop_head: bool = False):
        super().__init__()
        hidden = backbone.config.hidden_size
        self.backbone = backbone
        self.embedding_dim = embedding_dim
        self.input_projection = nn.Linear(embedding_dim, hidden, bias=False)
        self.output_projection = nn.Linear(hidden, embedding_dim, bias=False)
        # created last, so the weights above draw the same random numbers with or without it
        self.stop_head = nn.Linear(hidden, 1) if stop_head else None
        # a prefix LM (bidirectional over the prompt) is told the prompt length
        self.prefix_lm = bool(getattr(backbone, "is_prefix_lm", False))
        self.cache_keyword = cache_keyword(backbone)
        # bfloat16 autocast wherever it runs (training sets its own from its config): a model whose
        # frozen weights are bfloat16 generates as it was trained
        self.mixed_precision = False
        # peft's adapter layers; under autocast they take the bfloat16 activations as they come
        # (`backbones.adapter_input_casts`). True: peft's own float32 round trip under autocast too, which the
        # equivalence test and the operation count (benchmarks/bench_step_ops.py) compare against
        self._adapters = adapter_layers(backbone)
        self.peft_input_casts = False

    def autocast(self) -> torch.autocast:
        """bfloat16 autocast on the model's device for a mixed-precision encoder, a no-op otherwise."""
        device = next(self.parameters()).device.type
        return torch.autocast(device, dtype=torch.bfloat16, enabled=self.mixed_precision)

    def _backbone_input(self, embeds: torch.Tensor) -> torch.Tensor:
        """Embeddings in the backbone's own dtype (a bfloat16 backbone meets float32 projections here)."""
        return embeds.to(self.backbone.get_input_embeddings().weight.dtype)

    def _project_out(self, hidden: torch.Tensor) -> torch.Tensor:
        """`output_projection` of hidden states of any dtype."""
        return self.output_projection(_for(hidden, self.output_projection.weight))

    def _project_in(self, vectors: torch.Tensor) -> torch.Tensor:
        """`input_projection` of vectors of any dtype (a bfloat16 output fed back)."""
        return self.input_projection(_for(vectors, self.input_projection.weight))

    def _adapter_casts(self):
        """The adapters' input casts for a pass: peft's outside autocast (float32 weights meet bfloat16
        activations there), none under it unless `peft_input_casts` (`backbones.adapter_input_casts`)."""
        device = next(self.parameters()).device.type
        return adapter_input_casts(self._adapters, self.peft_input_casts or not torch.is_autocast_enabled(device))

    @torch.no_grad()
    def identity_projections(self) -> None:
        """Start both projections as the identity (embedding size == hidden size only), so that
        output 0 is the backbone's own last hidden state: for a pretrained sentence encoder used
        as the backbone, training starts near the off-the-shelf retriever."""
        if self.embedding_dim != self.backbone.config.hidden_size:
            raise ValueError(
                f"identity projections need embedding dimension == hidden size, got "
                f"{self.embedding_dim} and {self.backbone.config.hidden_size}"
            )
        eye = torch.eye(self.embedding_dim, dtype=self.input_projection.weight.dtype)
        self.input_projection.weight.copy_(eye)
        self.output_projection.weight.copy_(eye)

    # ----- prompts -------------------------------------------------------------------------
    def prompt_from_vectors(self, vectors: torch.Tensor) -> Prompt:
        """Synthetic task: the prompt is one input vector `[B, d]`."""
        self._check_dim(vectors, "input vectors")
        embeds = self.input_projection(vectors).unsqueeze(1)
        return Prompt(embeds, torch.ones(embeds.shape[:2], dtype=torch.long, device=embeds.device))

    def prompt_from_tokens(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Prompt:
        """Text task: left-padded token ids `[B, P]`."""
        embeds = self.backbone.get_input_embeddings()(input_ids)
        return Prompt(embeds, attention_mask)

    # ----- training-time pass --------------------------------------------------------------
    def forward(
        self,
        prompt: Prompt,
        n_outputs: int,
        teacher_inputs: torch.Tensor | None = None,
        sample_mask: torch.Tensor | None = None,
        with_stop: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Outputs `[B, n_outputs, d]` with the gold targets `teacher_inputs [B, >= n-1, d]` fed in.

        `sample_mask [B, n-1]` (bool) marks the positions where the model's own previous output
        is fed instead of the gold one (scheduled sampling). Without any such position the whole
        sequence runs in one teacher-forced pass. `with_stop`: also the stop head's logits `[B, n]`.
        """
        if with_stop and self.stop_head is None:
            raise ValueError("this encoder has no stop head: build it with stop_head=True")
        if n_outputs < 1:
            raise ValueError(f"n_outputs must be >= 1, got {n_outputs}")
        if n_outputs > 1:
            if teacher_inputs is None or teacher_inputs.shape[1] < n_outputs - 1:
                raise ValueError(f"{n_outputs} outputs need teacher_inputs with at least {n_outputs - 1} vectors")
            self._check_dim(teacher_inputs, "teacher inputs")
        teacher = None if teacher_inputs is None else teacher_inputs[:, : n_outputs - 1]
        with self._adapter_casts():
            if n_outputs == 1 or sample_mask is None or not bool(sample_mask.any()):
                result = self._teacher_forced(prompt, teacher, n_outputs, keep_hidden=with_stop)
            else:
                mask = sample_mask[:, : n_outputs - 1]
                result = self._decode(prompt, n_outputs, teacher, mask, keep_hidden=with_stop)
        if not with_stop:
            return result
        outputs, hidden = result
        return outputs, self.stop_head(hidden).squeeze(-1)

    def _teacher_forced(
        self, prompt: Prompt, teacher: torch.Tensor | None, n_outputs: int, keep_hidden: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        embeds, mask, positions = prompt.embeds, prompt.mask, prompt.positions
        if n_outputs > 1:
            steps = torch.arange(1, n_outputs, device=mask.device)
            embeds = torch.cat([embeds, self._project_in(teacher)], dim=1)
            mask = torch.cat([mask, mask.new_ones(mask.shape[0], n_outputs - 1)], dim=1)
            positions = torch.cat([positions, prompt.last_position[:, None] + steps], dim=1)
        hidden = self.backbone(
            inputs_embeds=self._backbone_input(embeds),
            attention_mask=_padding_mask(mask),
            position_ids=positions,
            use_cache=False,
            **self._prefix(prompt),
        ).last_hidden_state
        read = [p.index for p in sequence_layout(prompt.embeds.shape[1], n_outputs) if p.read_output is not None]
        outputs = self._project_out(hidden[:, read])
        return (outputs, hidden[:, read]) if keep_hidden else outputs

    # ----- autoregressive decoding ---------------------------------------------------------
    @torch.no_grad()
    def generate(self, prompt: Prompt, n: int, use_cache: bool = True) -> torch.Tensor:
        """`n` query embeddings `[B, n, d]`, each output fed back as the next input.

        `use_cache=False` recomputes the whole prefix at every step (the authors' approach); it is
        kept for the benchmark and the equivalence test.
        """
        with self.autocast(), self._adapter_casts():
            return self._decode(prompt, n, None, None, use_cache)

    @torch.no_grad()
    def generate_until_stop(
        self, prompt: Prompt, max_n: int, threshold: float = 0.5
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Up to `max_n` embeddings per prompt, stopping at the first whose stop probability
        exceeds `threshold`: the `[B, max_n, d]` generated vectors, each prompt's count `[B]` (the
        vectors to use are the first count), and the stop probabilities `[B, max_n]`."""
        if self.stop_head is None:
            raise ValueError("this encoder has no stop head: build it with stop_head=True or fit one (fit_stop_head)")
        outputs, hidden = self.generate_with_states(prompt, max_n)
        stop = self.stop_probability(hidden)
        return outputs, stop_counts(stop, threshold), stop

    @torch.no_grad()
    def generate_with_states(self, prompt: Prompt, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """`generate`'s `[B, n, d]` embeddings and the hidden states `[B, n, H]` they were read
        from (what a stop head reads; `amer_lib.core.train.fit_stop_head` fits one on them)."""
        with self.autocast(), self._adapter_casts():
            return self._decode(prompt, n, None, None, keep_hidden=True)

    def stop_probability(self, hidden: torch.Tensor) -> torch.Tensor:
        """The stop head's probabilities `[B, n]` of hidden states `[B, n, H]`."""
        return torch.sigmoid(self.stop_head(hidden.to(self.stop_head.weight.dtype)).squeeze(-1).float())

    def _decode(
        self,
        prompt: Prompt,
        n: int,
        teacher: torch.Tensor | None,
        sample_mask: torch.Tensor | None,
        use_cache: bool = True,
        keep_hidden: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Step-by-step pass; feeds back own outputs where `sample_mask` is True (everywhere when
        `teacher` is None). `keep_hidden`: also the hidden states the outputs were read from.

        What every step shares is made once before the loop (each step's operations run once per layer
        and decoded position, forward and backward, and are a GPU step's kernel launches): the
        attention mask of the whole sequence and whether it pads at all (asking at each step waited for
        the device), the fed-back positions, and under autocast the gold vectors in its dtype (the input
        projection casts them so anyway). A step slices these."""
        if not use_cache:
            return self._decode_recomputing(prompt, n, teacher, sample_mask)
        cache = ReplayCache(config=self.backbone.config)
        prefix = self._prefix(prompt)
        padded = not bool(prompt.mask.all())
        length = prompt.mask.shape[1]
        masks = torch.cat([prompt.mask, prompt.mask.new_ones(prompt.mask.shape[0], n - 1)], dim=1) if padded else None
        positions = prompt.last_position[:, None] + torch.arange(1, n, device=prompt.mask.device)
        if teacher is not None and torch.is_autocast_enabled(teacher.device.type):
            teacher = teacher.to(torch.get_autocast_dtype(teacher.device.type))
        hidden = self.backbone(
            inputs_embeds=self._backbone_input(prompt.embeds),
            attention_mask=masks[:, :length] if padded else None,
            position_ids=prompt.positions,
            use_cache=True,
            **{self.cache_keyword: cache},
            **prefix,
        ).last_hidden_state[:, -1:]
        hiddens = [hidden]
        outputs = [self._project_out(hidden)]
        for step in range(1, n):
            fed = _next_input(outputs[-1], teacher, sample_mask, step)
            hidden = self.backbone(
                inputs_embeds=self._backbone_input(self._project_in(fed)),
                attention_mask=masks[:, : length + step] if padded else None,
                position_ids=positions[:, step - 1 : step],
                use_cache=True,
                **{self.cache_keyword: cache},
                **prefix,
            ).last_hidden_state
            hiddens.append(hidden)
            outputs.append(self._project_out(hidden))
        return (torch.cat(outputs, dim=1), torch.cat(hiddens, dim=1)) if keep_hidden else torch.cat(outputs, dim=1)

    def _decode_recomputing(
        self, prompt: Prompt, n: int, teacher: torch.Tensor | None, sample_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """The same as `_decode` without a KV cache: every step runs the whole prefix again."""
        outputs = self._teacher_forced(prompt, None, 1)
        fed = outputs[:, :0]
        for step in range(1, n):
            fed = torch.cat([fed, _next_input(outputs[:, -1:], teacher, sample_mask, step)], dim=1)
            outputs = torch.cat([outputs, self._teacher_forced(prompt, fed, step + 1)[:, -1:]], dim=1)
        return outputs

    def _prefix(self, prompt: Prompt) -> dict:
        return {"prefix_length": prompt.embeds.shape[1]} if self.prefix_lm else {}

    def _check_dim(self, vectors: torch.Tensor, what: str) -> None:
        if vectors.shape[-1] != self.embedding_dim:
            raise ValueError(
                f"{what} have dimension {vectors.shape[-1]}, but the encoder's embedding "
                f"dimension is {self.embedding_dim}"
            )


def _next_input(
    previous: torch.Tensor, teacher: torch.Tensor | None, sample_mask: torch.Tensor | None, step: int
) -> torch.Tensor:
    """The vector fed at `step`: the previous output, or the gold one where not sampled."""
    if teacher is None:
        return previous
    return torch.where(sample_mask[:, step - 1, None, None], previous, teacher[:, step - 1 : step])


def _for(inputs: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`inputs` for a product with `weight`: as they are under autocast (which casts both to its dtype, so
    that a bfloat16 hidden state made float32 first would be cast straight back, a copy each way forward and
    backward at every decoded position), else in the weight's dtype."""
    return inputs if torch.is_autocast_enabled(inputs.device.type) else inputs.to(weight.dtype)


def _padding_mask(mask: torch.Tensor) -> torch.Tensor | None:
    """The attention mask, or None when nothing is padded (lets the backbone take its fast
    causal path)."""
    return None if bool(mask.all()) else mask
