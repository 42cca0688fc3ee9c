"""What a saved notebook shows of long work: the library's text bars, not Hugging Face's widgets."""

import transformers.utils.logging as hf_logging

from amer_lib.core.backbones import load_backbone
from amer_lib.data.encoders import _load, get_encoder_spec


def test_loading_weights_draws_no_bar_of_transformers_and_leaves_its_setting_alone(capfd):
    """transformers' "Loading weights" bar is a widget that a saved notebook shows at 0% for good."""
    _load.cache_clear()
    load_backbone("minilm")
    _load(get_encoder_spec("minilm"), "cpu")
    captured = capfd.readouterr()
    assert "Loading weights" not in captured.err + captured.out
    assert hf_logging.is_progress_bar_enabled()  # put back for the caller
    hf_logging.disable_progress_bar()
    try:
        load_backbone("minilm")
        assert not hf_logging.is_progress_bar_enabled()  # a caller's own choice is kept
    finally:
        hf_logging.enable_progress_bar()
