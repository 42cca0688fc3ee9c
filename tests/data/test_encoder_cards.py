"""Every registry document encoder against its published model card and config.json, and the
loading path of inf-retriever-v1-1.5b on a tiny randomly initialised Qwen2 built from its
config (no download): bidirectional attention, last-token pooling, padding left out."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer import modules as models
from transformers import Qwen2Config, Qwen2Model

from amer_lib.core.backbones import load_tokenizer
from amer_lib.data.encoders import ENCODERS, _load, get_encoder_spec

GTE_INSTRUCTION = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "

# What each model card (and the files beside it) says the published model computes. "remote code":
# what the card's loading line passes as trust_remote_code.
CARDS = {
    # https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2: BERT (attends both ways),
    # mean pooling then Normalize (modules.json), no instruction, max_seq_length 256
    "minilm": dict(dim=384, attention="bidirectional", pooling="mean", normalize=True, prompt="", remote_code=False),
    # https://huggingface.co/infly/inf-retriever-v1-1.5b: built on gte-Qwen2-1.5B-instruct, loaded
    # with SentenceTransformer(..., trust_remote_code=True); its config.json: "architectures":
    # ["Qwen2Model"], "auto_map" to its own modeling_qwen.Qwen2Model, "is_causal": false,
    # "hidden_size": 1536; gte-Qwen2's recipe: last-token pooling, unit-normalised; the query
    # prompt of the family's config_sentence_transformers.json (documents get none)
    "inf-retriever-v1-1.5b": dict(
        dim=1536,
        attention="bidirectional",
        pooling="lasttoken",
        normalize=True,
        prompt=GTE_INSTRUCTION,
        remote_code=True,
    ),
    # https://huggingface.co/facebook/contriever-msmarco: BERT, mean pooling over the tokens, scored
    # by dot product (no normalisation), no instruction
    "contriever-msmarco": dict(
        dim=768, attention="bidirectional", pooling="mean", normalize=False, prompt="", remote_code=False
    ),
    # https://huggingface.co/NovaSearch/stella_en_400M_v5: trust_remote_code=True, its s2p_query
    # prompt, mean pooling then the 1024-d Dense layer (2_Dense_1024), normalised
    "stella-400m": dict(
        dim=1024,
        attention="bidirectional",
        pooling="mean",
        normalize=True,
        prompt="Instruct: Given a web search query, retrieve relevant passages that answer the query.\nQuery: ",
        remote_code=True,
    ),
    # https://huggingface.co/nvidia/NV-Embed-v2: trust_remote_code=True; config.json "mask_type":
    # "b" (bidirectional), "hidden_size": 4096; latent-attention pooling in its own code, normalised
    "nv-embed-v2": dict(
        dim=4096,
        attention="bidirectional",
        pooling="mean",
        normalize=True,
        prompt="Instruct: Given a question, retrieve passages that answer the question\nQuery: ",
        remote_code=True,
    ),
}
# inf-retriever's remote code is not run: its attention is made bidirectional in transformers' own
# Qwen2 instead (encoders.attend_both_ways), which the tests below check.
REPRODUCED_WITHOUT_REMOTE_CODE = {"inf-retriever-v1-1.5b"}


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_each_registry_encoder_is_configured_as_its_model_card_says(name):
    card, spec = CARDS[name], get_encoder_spec(name)
    assert (spec.dim, spec.attention, spec.pooling, spec.normalize, spec.query_prompt) == (
        card["dim"],
        card["attention"],
        card["pooling"],
        card["normalize"],
        card["prompt"],
    )
    assert spec.trust_remote_code == (card["remote_code"] and name not in REPRODUCED_WITHOUT_REMOTE_CODE)


def test_every_registry_encoder_has_its_card_here():
    assert set(CARDS) == set(ENCODERS)


def tiny_qwen2_encoder(root, **attention) -> object:
    """A sentence-transformers folder in inf-retriever's layout: a randomly initialised Qwen2Model
    at a tiny size with the given config attention settings, SmolLM2's tokenizer, last-token
    pooling and Normalize; returned as inf-retriever's registry entry pointing at it."""
    tokenizer = load_tokenizer("smollm2")
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        use_sliding_window=False,
        **attention,
    )
    torch.manual_seed(0)
    Qwen2Model(config).save_pretrained(root / "hf")
    tokenizer.save_pretrained(root / "hf")
    modules = [models.Transformer(str(root / "hf")), models.Pooling(64, pooling_mode="lasttoken"), models.Normalize()]
    SentenceTransformer(modules=modules).save(str(root / "st"))
    return replace(get_encoder_spec("inf-retriever-v1-1.5b"), model_id=str(root / "st"), dim=64, dtype="float32")


@pytest.fixture(scope="module")
def tiny_inf_retriever(tmp_path_factory):
    """With the attention setting of inf-retriever's config.json: `"is_causal": false`."""
    return tiny_qwen2_encoder(tmp_path_factory.mktemp("card_config"), is_causal=False)


@pytest.fixture(scope="module")
def tiny_causal_qwen2(tmp_path_factory):
    """A plain Qwen2 config (no `is_causal`): transformers attends causally."""
    return tiny_qwen2_encoder(tmp_path_factory.mktemp("plain_config"))


def first_token_states(spec, last_tokens: list[int]) -> list[torch.Tensor]:
    """The first token's output state of `[5, 6, 7, t]` for each t, as the loader's model computes it."""
    model = _load(spec, "cpu")[0].model
    ids = torch.tensor([[5, 6, 7, t] for t in last_tokens])
    with torch.no_grad():
        states = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
    return [s[0] for s in states]


def test_inf_retriever_loads_attending_both_ways_as_its_config_says(tiny_inf_retriever):
    first, changed = first_token_states(tiny_inf_retriever, [8, 9])
    assert (first - changed).abs().max() > 1e-3  # a later token changes an earlier token's output


def test_the_loader_makes_the_attention_bidirectional_whatever_transformers_reads_of_the_config(tiny_causal_qwen2):
    """The pinned transformers (5.24.0) reads `is_causal: false` itself where it builds a mask;
    releases that do not would load inf-retriever causally, so the loader's switch must not depend
    on it. On a config without the flag, loaded as causal a later token changes nothing; loaded as
    the registry says, it does."""
    first, changed = first_token_states(replace(tiny_causal_qwen2, attention="causal"), [8, 9])
    assert torch.equal(first, changed)
    first, changed = first_token_states(tiny_causal_qwen2, [8, 9])
    assert (first - changed).abs().max() > 1e-3


def test_bidirectional_inf_retriever_leaves_padding_out(tiny_inf_retriever):
    """A text encoded alone and in a batch beside a longer one (so padded) gives the same vector:
    pad tokens are masked for every token, the earlier ones too."""
    encoder = _load(tiny_inf_retriever, "cpu")
    alone = encoder.encode(["a short text"], convert_to_numpy=True)
    batched = encoder.encode(["a short text", "a much longer text than the one before it"], convert_to_numpy=True)
    assert np.allclose(alone[0], batched[0], atol=1e-5)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(batched[0], batched[1], atol=1e-2)


def test_a_model_that_pools_otherwise_than_its_card_stops_with_the_difference(tiny_inf_retriever):
    with pytest.raises(ValueError, match="loaded with pooling 'lasttoken', but its model card pools by 'mean'"):
        _load(replace(tiny_inf_retriever, pooling="mean"), "cpu")


def test_an_unknown_attention_names_the_valid_ones(tiny_inf_retriever):
    with pytest.raises(ValueError, match="valid: bidirectional, causal"):
        _load(replace(tiny_inf_retriever, attention="sideways"), "cpu")


def test_inf_retriever_pools_the_end_of_text_token_its_own_tokenizer_appends(tiny_inf_retriever):
    """gte-Qwen2's tokenizer (which inf-retriever is built on) appends its end-of-text token: its
    tokenizer_config.json says `"add_eos_token": true` and maps AutoTokenizer to its own code (seen
    in a copy of gte-Qwen2-7B-instruct's, huggingface.co/FINGU-AI/FingU7b), so last-token pooling
    reads that token. transformers' Qwen2 tokenizer does not read the flag; the loader appends it.
    The text is encoded as it is: the tiny model's tokenizer has a chat template (SmolLM2's), which
    sentence-transformers 6 would otherwise wrap every text in. Brute force: the token states of
    transformers' own bidirectional Qwen2 (which reads the config's `is_causal: false`) on the
    text's tokens and the end-of-text token, the last one unit-normalised."""
    assert load_tokenizer("smollm2").chat_template  # the stand-in has one to leave out
    encoder = _load(tiny_inf_retriever, "cpu")
    tokenizer = encoder.tokenizer
    text = "a short text"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    assert tokenizer(text)["input_ids"] == ids
    reference = Qwen2Model.from_pretrained(
        str(Path(tiny_inf_retriever.model_id).parent / "hf"), attn_implementation="eager"
    )
    with torch.no_grad():
        last = reference(input_ids=torch.tensor([ids])).last_hidden_state[0, -1]
    expected = (last / last.norm()).numpy()
    assert np.allclose(encoder.encode([text], convert_to_numpy=True)[0], expected, atol=1e-5)


def test_a_tokenizer_without_an_end_of_text_token_stops_the_loader(tiny_inf_retriever):
    # SmolLM2's tokenizer has one; a registry entry asking for it on a model without one must stop
    from amer_lib.data.encoders import _append_eos

    class NoEos:
        eos_token, eos_token_id = None, None

    with pytest.raises(ValueError, match="does not end a text with an end-of-text token"):
        _append_eos(tiny_inf_retriever, NoEos())


def test_minilm_loads_with_its_cards_length_and_reads_plain_text():
    """all-MiniLM-L6-v2's card: input longer than 256 word pieces is truncated; no chat template."""
    encoder = _load(get_encoder_spec("minilm"), "cpu")
    assert encoder.max_seq_length == 256
    assert all("message" not in getattr(m, "modality_config", {}) for m in encoder)
