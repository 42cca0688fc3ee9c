import pytest
import torch

from amer_lib.core.backbones import BackboneUnavailableError, add_lora, get_backbone, load_backbone
from amer_lib.core.model import sequence_layout


def test_generate_with_cache_equals_recomputing_the_prefix(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(4, 12))
    cached = tiny_encoder.generate(prompt, 5)
    recomputed = tiny_encoder.generate(prompt, 5, use_cache=False)
    assert cached.shape == (4, 5, 12)
    assert torch.allclose(cached, recomputed, atol=1e-5)


def test_generated_vectors_equal_a_teacher_forced_pass_fed_its_own_outputs(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(3, 12))
    generated = tiny_encoder.generate(prompt, 4)
    with torch.no_grad():
        teacher_forced = tiny_encoder(prompt, 4, teacher_inputs=generated[:, :3])
    assert torch.allclose(generated, teacher_forced, atol=1e-5)


def test_scheduled_sampling_at_p0_equals_teacher_forcing(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(3, 12))
    targets = torch.randn(3, 4, 12)
    with torch.no_grad():
        one_pass = tiny_encoder(prompt, 5, targets)
        step_by_step = tiny_encoder._decode(prompt, 5, targets, torch.zeros(3, 4, dtype=torch.bool))
    assert torch.allclose(one_pass, step_by_step, atol=1e-5)


def test_scheduled_sampling_feeds_back_own_outputs_where_sampled(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(2, 12))
    targets = torch.randn(2, 2, 12)
    mask = torch.tensor([[True, True], [False, False]])
    with torch.no_grad():
        mixed = tiny_encoder(prompt, 3, targets, mask)
        generated = tiny_encoder.generate(prompt, 3)
        forced = tiny_encoder(prompt, 3, targets)
    assert torch.allclose(mixed[0], generated[0], atol=1e-5)  # always fed its own outputs
    assert torch.allclose(mixed[1], forced[1], atol=1e-5)  # always fed the gold targets


def test_left_padded_text_prompt_gives_the_same_outputs_as_unpadded(tiny_encoder):
    ids = torch.tensor([[5, 6, 7]])
    alone = tiny_encoder.generate(tiny_encoder.prompt_from_tokens(ids, torch.ones_like(ids)), 3)
    padded_ids = torch.tensor([[0, 0, 5, 6, 7], [1, 2, 3, 4, 5]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    batch = tiny_encoder.generate(tiny_encoder.prompt_from_tokens(padded_ids, mask), 3)
    assert torch.allclose(alone[0], batch[0], atol=1e-5)


def test_a_left_padded_batch_decodes_with_its_cache_as_each_row_recomputed_alone(tiny_encoder):
    """The KV cache over a left-padded batch (rows of 5, 3 and 2 tokens) against recomputing the
    whole prefix at every step, for the batch and for each row alone without padding."""
    ids = torch.tensor([[1, 2, 3, 4, 5], [0, 0, 5, 6, 7], [0, 0, 0, 8, 9]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]])
    cached = tiny_encoder.generate(tiny_encoder.prompt_from_tokens(ids, mask), 4)
    recomputed = tiny_encoder.generate(tiny_encoder.prompt_from_tokens(ids, mask), 4, use_cache=False)
    assert torch.allclose(cached, recomputed, atol=1e-5)
    for row in range(3):
        alone = ids[row][mask[row].bool()][None]
        unpadded = tiny_encoder.generate(
            tiny_encoder.prompt_from_tokens(alone, torch.ones_like(alone)), 4, use_cache=False
        )
        assert torch.allclose(cached[row], unpadded[0], atol=1e-5), row


def test_single_query_is_the_n1_case(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(3, 12))
    with torch.no_grad():
        single = tiny_encoder(prompt, 1)
    assert torch.allclose(single, tiny_encoder.generate(prompt, 4)[:, :1], atol=1e-6)


def test_vectors_of_the_wrong_dimension_are_named(tiny_encoder):
    with pytest.raises(ValueError, match="input vectors have dimension 7, but the encoder's embedding dimension is 12"):
        tiny_encoder.prompt_from_vectors(torch.randn(2, 7))
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(2, 12))
    with pytest.raises(ValueError, match="teacher inputs have dimension 3"):
        tiny_encoder(prompt, 3, torch.randn(2, 2, 3))


def test_unknown_backbone_lists_the_valid_ones():
    with pytest.raises(
        KeyError,
        match="unknown backbone 'gpt5'; valid backbones: llama1b, llama3b, llama8b, minilm, qwen4b, smollm2, tiny",
    ):
        get_backbone("gpt5")


def test_pretrained_backbone_without_cache_or_network_says_what_to_fetch():
    with pytest.raises(BackboneUnavailableError, match="meta-llama/Llama-3.2-1B-Instruct.*hf download"):
        load_backbone("llama1b")


def test_registry_holds_the_papers_lora_recipe():
    lora = get_backbone("llama8b").lora
    assert (lora.r, lora.alpha, lora.dropout) == (64, 16, 0.1)
    assert set(lora.targets) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_lora_wraps_the_seven_projections_and_freezes_the_rest():
    model = add_lora(
        load_backbone("tiny", config_overrides=dict(hidden_size=32, intermediate_size=64)), get_backbone("tiny").lora
    )
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    wrapped = {n.split(".")[-4] for n in trainable if n.endswith("lora_A.default.weight")}
    assert wrapped == set(get_backbone("tiny").lora.targets)


def test_tiny_backbone_is_seeded():
    a = load_backbone("tiny", seed=3, config_overrides=dict(hidden_size=32, intermediate_size=64))
    b = load_backbone("tiny", seed=3, config_overrides=dict(hidden_size=32, intermediate_size=64))
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_sequence_layout_reads_output_j_after_the_jth_fed_back_vector():
    layout = sequence_layout(3, 4)
    assert [p.fed for p in layout] == ["prompt"] * 3 + ["output"] * 3
    assert [p.fed_output for p in layout] == [None, None, None, 0, 1, 2]
    assert [p.read_output for p in layout] == [None, None, 0, 1, 2, 3]
    assert [p.read_output for p in sequence_layout(1, 1)] == [0]
    with pytest.raises(ValueError, match="n_outputs >= 1"):
        sequence_layout(2, 0)


# ----- the stop head (beyond the paper, notebook 07) ------------------------------------------
def stop_encoder(seed=0):
    from amer_lib.core.backbones import load_backbone
    from amer_lib.core.model import AMERQueryEncoder

    torch.manual_seed(seed)
    backbone = load_backbone("tiny", config_overrides=dict(hidden_size=32, intermediate_size=64))
    return AMERQueryEncoder(backbone, 12, stop_head=True).eval()


def test_a_stop_head_leaves_the_other_weights_as_without_it(tiny_encoder):
    with_head = stop_encoder()
    for name, weight in tiny_encoder.state_dict().items():
        assert torch.equal(weight, with_head.state_dict()[name]), name
    assert set(with_head.state_dict()) - set(tiny_encoder.state_dict()) == {"stop_head.weight", "stop_head.bias"}


def test_generation_until_stop_is_generation_truncated_and_its_stops_a_teacher_forced_pass():
    encoder = stop_encoder()
    with torch.no_grad():
        encoder.stop_head.bias.fill_(-0.2)  # probabilities near 0.5: some rows stop, some do not
        encoder.stop_head.weight.normal_(0, 0.5)
    prompt = encoder.prompt_from_vectors(torch.randn(16, 12, generator=torch.Generator().manual_seed(1)))
    vectors, counts, stop = encoder.generate_until_stop(prompt, 5)
    assert torch.allclose(vectors, encoder.generate(prompt, 5), atol=1e-6)
    with torch.no_grad():
        forced, logits = encoder(prompt, 5, teacher_inputs=vectors[:, :4], with_stop=True)
    assert torch.allclose(forced, vectors, atol=1e-5)
    assert torch.allclose(torch.sigmoid(logits), stop, atol=1e-5)
    expected = [next((j + 1 for j in range(5) if p[j] > 0.5), 5) for p in stop.tolist()]
    assert counts.tolist() == expected
    assert 1 < len(set(expected))  # the case is not degenerate


def test_asking_an_encoder_without_a_stop_head_for_stops_is_an_error(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(2, 12))
    with pytest.raises(ValueError, match="stop_head=True"):
        tiny_encoder.generate_until_stop(prompt, 3)
    with pytest.raises(ValueError, match="stop_head=True"):
        tiny_encoder(prompt, 2, torch.randn(2, 1, 12), with_stop=True)


def test_figure2_draws_training_and_inference_from_the_layout(tmp_path):
    """Each panel has a box per position of the layout, fed as the paper's figure says: the query's
    tokens, then gold targets in a random order (or, with probability p, the previous output) in
    training and the previous output at inference; the outputs matched in training, merged at inference."""
    from amer_lib.report.plots import figure2

    fig = figure2(sequence_layout(3, 4), tmp_path / "figure2", prompt_labels=["which", "trees", "?"])
    training, inference = fig.axes
    assert (training.get_title(), inference.get_title()) == ("Training", "Inference")
    texts = {ax.get_title(): [t.get_text() for t in ax.texts] for ax in fig.axes}
    for panel in texts.values():
        assert panel[1:4] == ["which", "trees", "?"]  # the prompt's positions first, after the LM
        assert [t for t in panel if t.startswith("$e_")] == [f"$e_{{{j}}}=W_{{out}}h$" for j in (1, 2, 3, 4)]
    assert [t for t in texts["Training"] if "\\pi(" in t] == [
        f"$W_{{in}}\\,d_{{\\pi({j})}}$\nor $W_{{in}}\\,e_{{{j}}}$" for j in (1, 2, 3)
    ]
    assert [t for t in texts["Inference"] if t.startswith("$W_{in}")] == [f"$W_{{in}}\\,e_{{{j}}}$" for j in (1, 2, 3)]
    assert any("Hungarian" in t for t in texts["Training"]) and not any("Hungarian" in t for t in texts["Inference"])
    assert any("round-robin" in t for t in texts["Inference"])
    assert (tmp_path / "figure2.png").exists() and (tmp_path / "figure2.pdf").exists()
    with pytest.raises(ValueError, match="2 prompt labels for a layout with 3 prompt positions"):
        figure2(sequence_layout(3, 4), prompt_labels=["a", "b"])


def test_the_projections_have_no_bias_and_a_prefix_lm_is_read_from_its_backbone():
    from amer_lib.core.model import AMERQueryEncoder

    torch.manual_seed(0)
    backbone = load_backbone("tiny", config_overrides=dict(hidden_size=16, intermediate_size=32))
    encoder = AMERQueryEncoder(backbone, 8)
    assert encoder.input_projection.bias is None and encoder.output_projection.bias is None
    assert encoder.prefix_lm is False
    backbone.is_prefix_lm = True
    assert AMERQueryEncoder(backbone, 8).prefix_lm is True


def test_forward_refuses_what_it_cannot_run_with_the_fix(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(2, 12))
    with pytest.raises(ValueError, match=r"^n_outputs must be >= 1, got 0$"):
        tiny_encoder(prompt, 0)
    with pytest.raises(ValueError, match=r"^3 outputs need teacher_inputs with at least 2 vectors$"):
        tiny_encoder(prompt, 3, torch.randn(2, 1, 12))
    with pytest.raises(ValueError, match=r"^2 outputs need teacher_inputs with at least 1 vectors$"):
        tiny_encoder(prompt, 2)
    with pytest.raises(ValueError, match=r"^this encoder has no stop head: build it with stop_head=True$"):
        tiny_encoder(prompt, 1, with_stop=True)


def test_two_outputs_fed_their_own_first_output_are_the_generated_two(tiny_encoder):
    """n = 2 with the one fed position sampled (the model's own output) is generation; with a
    longer teacher only its first n - 1 vectors are read."""
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(3, 12))
    teacher = torch.randn(3, 4, 12)
    with torch.no_grad():
        sampled = tiny_encoder(prompt, 2, teacher, torch.ones(3, 4, dtype=torch.bool))
        forced = tiny_encoder(prompt, 2, teacher)
        forced_short = tiny_encoder(prompt, 2, teacher[:, :1])
    assert torch.allclose(sampled, tiny_encoder.generate(prompt, 2), atol=1e-5)
    assert torch.allclose(forced, forced_short, atol=1e-6) and not torch.allclose(forced, sampled, atol=1e-3)


def test_a_left_padded_teacher_forced_pass_equals_each_row_alone(tiny_encoder):
    ids = torch.tensor([[1, 2, 3, 4], [0, 0, 5, 6]])
    mask = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])
    teacher = torch.randn(2, 2, 12)
    with torch.no_grad():
        batch = tiny_encoder(tiny_encoder.prompt_from_tokens(ids, mask), 3, teacher)
        alone = tiny_encoder(
            tiny_encoder.prompt_from_tokens(ids[1:, 2:], torch.ones(1, 2, dtype=torch.long)), 3, teacher[1:]
        )
    assert torch.allclose(batch[1], alone[0], atol=1e-5)


def test_recomputed_scheduled_sampling_equals_the_cached_pass(tiny_encoder):
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(3, 12))
    teacher = torch.randn(3, 3, 12)
    sample_mask = torch.tensor([[True, False, True], [False, True, False], [True, True, False]])
    with torch.no_grad():
        cached = tiny_encoder._decode(prompt, 4, teacher, sample_mask)
        recomputed = tiny_encoder._decode(prompt, 4, teacher, sample_mask, use_cache=False)
        forced = tiny_encoder(prompt, 4, teacher)
    assert torch.allclose(cached, recomputed, atol=1e-5) and not torch.allclose(cached, forced, atol=1e-3)


def test_scheduled_sampling_feeds_the_own_output_exactly_where_the_mask_says(tiny_encoder):
    """Position 1 sampled, positions 2 and 3 gold: the same as a teacher-forced pass whose first
    fed vector is replaced by the model's own first output."""
    prompt = tiny_encoder.prompt_from_vectors(torch.randn(2, 12))
    teacher = torch.randn(2, 3, 12)
    with torch.no_grad():
        mixed = tiny_encoder(prompt, 4, teacher, torch.tensor([[True, False, False]] * 2))
        first = tiny_encoder(prompt, 1)
        expected = tiny_encoder(prompt, 4, torch.cat([first, teacher[:, 1:]], dim=1))
    assert torch.allclose(mixed, expected, atol=1e-5)


def test_the_stop_logits_of_a_sampled_pass_are_read_from_its_hidden_states():
    from amer_lib.core.model import AMERQueryEncoder

    torch.manual_seed(0)
    encoder = AMERQueryEncoder(load_backbone("tiny", config_overrides=dict(hidden_size=32)), 12, stop_head=True).eval()
    prompt = encoder.prompt_from_vectors(torch.randn(2, 12))
    with torch.no_grad():
        outputs, logits = encoder(prompt, 3, torch.randn(2, 2, 12), torch.ones(2, 2, dtype=torch.bool), with_stop=True)
        generated, hidden = encoder.generate_with_states(prompt, 3)
    assert torch.allclose(outputs, generated, atol=1e-5)
    assert torch.allclose(logits, encoder.stop_head(hidden).squeeze(-1), atol=1e-5)


@pytest.fixture(scope="module")
def tiny_prefix_encoder():
    """A two-layer BERT of random weights run as a prefix LM, as MiniLM is (the offline backbone)."""
    from transformers import BertConfig, BertModel

    from amer_lib.core.backbones import PrefixLMBert
    from amer_lib.core.model import AMERQueryEncoder

    torch.manual_seed(0)
    config = BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
    return AMERQueryEncoder(PrefixLMBert(BertModel(config, add_pooling_layer=False)), 12).eval()


def test_a_prefix_lm_sees_its_whole_prompt_and_decodes_as_it_is_teacher_forced(tiny_prefix_encoder):
    """On a left-padded batch of token prompts: generation with the KV cache equals recomputing
    everything at each step and each row decoded alone; a teacher-forced pass fed the generated
    vectors gives them back (no fed position sees a later one)."""
    encoder = tiny_prefix_encoder
    ids = torch.tensor([[1, 2, 3, 4, 5], [0, 0, 5, 6, 7]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    prompt = encoder.prompt_from_tokens(ids, mask)
    cached = encoder.generate(prompt, 4)
    assert torch.allclose(cached, encoder.generate(prompt, 4, use_cache=False), atol=1e-5)
    alone = encoder.generate(encoder.prompt_from_tokens(ids[1:, 2:], mask[1:, 2:]), 4)
    assert torch.allclose(cached[1], alone[0], atol=1e-5)
    with torch.no_grad():
        teacher_forced = encoder(prompt, 4, teacher_inputs=cached[:, :3])
    assert torch.allclose(cached, teacher_forced, atol=1e-5)
