"""Gradient checkpointing that keeps the KV cache of scheduled sampling.

Under scheduled sampling a training step decodes step by step with a KV cache
(`AMERQueryEncoder._decode`): each fed-back position attends to the cached keys and values of the
prompt and of the positions before it. Hugging Face's own gradient checkpointing drops the cache
in training (`GradientCheckpointingLayer` sets `cache=None`), which would let each fed-back
position see only itself. Here each decoder layer is checkpointed with torch's non-reentrant
checkpoint, the cache kept: the forward pass appends to the cache as usual, and when the backward
pass recomputes a layer, `ReplayCache` answers that layer's cache update with the keys and values
it held at the original call (the cached prefix of that length, then the recomputed new ones),
so the recomputation sees exactly what the forward pass saw. The recomputation also runs peft's adapters
with the input casts they had in the forward pass (`backbones.adapter_input_casts`: the encoder sets them
for its pass, and the backward pass runs after it has returned).
"""

from __future__ import annotations

import contextlib
import weakref
from functools import partial

import torch
from torch.utils.checkpoint import checkpoint
from transformers import DynamicCache

from amer_lib.core.backbones import adapter_input_casts, adapter_layers


class ReplayCache(DynamicCache):
    """A `DynamicCache` whose update, while a layer is recomputed, returns the keys and values the
    layer saw in its forward pass instead of appending again."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._replaying: dict[int, int] = {}  # layer index -> cached length at its original call

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        past = self._replaying.get(layer_idx)
        if past is None:
            return super().update(key_states, value_states, layer_idx, *args, **kwargs)
        layer = self.layers[layer_idx]
        if past == 0:
            return key_states, value_states
        keys = torch.cat([layer.keys[..., :past, :], key_states], dim=-2)
        return keys, torch.cat([layer.values[..., :past, :], value_states], dim=-2)

    def cached_length(self, layer_idx: int) -> int:
        return self.layers[layer_idx].get_seq_length() if layer_idx < len(self.layers) else 0

    @contextlib.contextmanager
    def replaying(self, layer_idx: int, past: int):
        """While inside, layer `layer_idx`'s updates are answered as when `past` positions were cached."""
        self._replaying[layer_idx] = past
        try:
            yield
        finally:
            del self._replaying[layer_idx]


def _layer_of(function: partial) -> torch.nn.Module:
    """The decoder layer a checkpointed partial runs: transformers 5.24 passes `partial(forward,
    layer, **kwargs)`, earlier 5.x releases `partial(layer.__call__, **kwargs)` (a bound method)."""
    return function.args[0] if function.args else function.func.__self__


def _layer_index(layer: torch.nn.Module) -> int:
    return next(module.layer_idx for module in layer.modules() if isinstance(getattr(module, "layer_idx", None), int))


_ADAPTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a layer's peft adapters, found once


def _adapters_of(layer: torch.nn.Module) -> list[torch.nn.Module]:
    """`adapter_layers(layer)`, looked up once a layer: `_checkpointed` runs at every layer and decoded
    position, where walking the layer's modules each time is Python work on the step's launch path."""
    if layer not in _ADAPTERS:
        _ADAPTERS[layer] = adapter_layers(layer)
    return _ADAPTERS[layer]


def _checkpointed(function: partial, *args):
    """A decoder layer's forward (`function`, Hugging Face's partial of it with its keyword
    arguments) run under torch's non-reentrant checkpoint; a `ReplayCache` among the arguments is
    replayed at the length it had when the layer ran, and the layer's adapters recompute with the input casts
    they have now."""
    cache = function.keywords.get("cache", function.keywords.get("past_key_values"))
    layer = _layer_of(function)
    adapters = _adapters_of(layer)
    casts = [adapter.cast_input_dtype_enabled for adapter in adapters]
    if not isinstance(cache, ReplayCache):
        contexts = lambda: (contextlib.nullcontext(), adapter_input_casts(adapters, casts))
        return checkpoint(function, *args, use_reentrant=False, context_fn=contexts)
    layer_idx = _layer_index(layer)
    past = cache.cached_length(layer_idx)

    @contextlib.contextmanager
    def recomputing():
        with cache.replaying(layer_idx, past), adapter_input_casts(adapters, casts):
            yield

    contexts = lambda: (contextlib.nullcontext(), recomputing())
    return checkpoint(function, *args, use_reentrant=False, context_fn=contexts)


def enable(backbone: torch.nn.Module) -> None:
    """Checkpoint every decoder layer of `backbone` (a Hugging Face model, under peft's wrapper or
    `PrefixLMBert` too), keeping the KV cache. A backbone without Hugging Face's checkpointing
    layers is refused by name."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    layers = [m for m in backbone.modules() if isinstance(m, GradientCheckpointingLayer)]
    if not layers:
        raise ValueError(
            f"{type(backbone).__name__} has no layers that support gradient checkpointing; "
            "set gradient_checkpointing: false"
        )
    for layer in layers:
        layer.gradient_checkpointing = True
        layer._gradient_checkpointing_func = _checkpointed
        layer._can_checkpoint_with_cache = True  # ReplayCache makes the replay read what the forward read
