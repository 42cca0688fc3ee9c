"""Checks made before any work: the folders a run writes can be written (a path under a file
stands for a read-only folder, and fails for root too), its device is here, a mistyped parameter
is named with the closest valid ones, a parameter file's error names the file; and a folder
replaced by `atomic_folder` is the old one until the new one is complete."""

import pytest
import torch
from conftest import ROOT

from amer_lib.config import read_parameter_file
from amer_lib.core.device import DeviceUnavailableError, resolve_device
from amer_lib.io import atomic_folder, require_writable
from amer_lib.params import cell_defaults, collect, from_files, main


def test_a_folder_that_cannot_be_written_is_named_with_its_parameter(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(PermissionError, match=r"runs_dir '.*a_file/runs' cannot be written .*set runs_dir to a folder"):
        require_writable(blocker / "runs", "runs_dir")
    require_writable(tmp_path / "new" / "deeper", "runs_dir")  # missing folders under a writable one are fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # and nothing was made to check it


def test_a_read_only_folder_is_refused_where_permissions_hold(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder; the path under a file above stands for it")
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match="results_dir .* cannot be written"):
            require_writable(tmp_path / "results", "results_dir")
    finally:
        tmp_path.chmod(0o755)


def real_defaults(tmp_path, **changes):
    return {
        **cell_defaults("04_real_data"),
        "device": "cpu",
        "results_dir": str(tmp_path / "results"),
        "runs_dir": str(tmp_path / "runs"),
        **changes,
    }


@pytest.mark.parametrize("name", ["results_dir", "runs_dir"])
def test_the_notebooks_stop_at_their_parameters_when_an_output_folder_cannot_be_written(tmp_path, name):
    (tmp_path / "file").write_text("")
    collect("04_real_data", real_defaults(tmp_path), set())  # writable: the config
    with pytest.raises(PermissionError, match=f"^{name} '.*file/out' cannot be written"):
        collect("04_real_data", real_defaults(tmp_path, **{name: str(tmp_path / "file" / "out")}), set())


def test_a_mistyped_parameter_is_named_with_the_closest_valid_ones(tmp_path):
    with pytest.raises(KeyError) as error:
        collect("04_real_data", real_defaults(tmp_path, backbon="llama8b", zzz=1), set())
    message = error.value.args[0]
    assert "unknown parameter(s) ['backbon', 'zzz'] for notebook 04_real_data" in message
    assert "('backbon': did you mean 'backbone'?)" in message  # none is guessed for 'zzz'
    assert "valid keys: datasets, systems," in message and "runs_dir" in message


def test_cuda_without_a_gpu_names_the_devices_here(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DeviceUnavailableError, match=r"sees no GPU here; devices available here: cpu: use device"):
        resolve_device("cuda")
    with pytest.raises(DeviceUnavailableError, match="devices available here: cpu") as error:
        collect("04_real_data", real_defaults(tmp_path, device="cuda"), set())
    assert "Besides" not in str(error.value)  # MiniLM's weights come with the environment
    assert resolve_device("auto") == torch.device("cpu")


def test_cuda_without_a_gpu_also_names_the_weights_to_fetch(tmp_path, monkeypatch):
    """params/02_synthetic/paper_scale.yaml on a CPU machine without Llama's weights: both fixes at once."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    with pytest.raises(DeviceUnavailableError) as error:
        collect("04_real_data", real_defaults(tmp_path, device="cuda", backbone="llama1b"), set())
    message = str(error.value)
    assert "sees no GPU here" in message and "Besides, backbone 'llama1b' needs meta-llama/Llama-3.2-1B" in message
    assert "`hf download meta-llama/Llama-3.2-1B-Instruct`" in message


def test_a_parameter_files_syntax_error_names_the_file_and_line(tmp_path):
    unclosed = tmp_path / "unclosed.yaml"
    unclosed.write_text("steps: 5\nseeds: [0, 1\n")
    with pytest.raises(ValueError, match=r"unclosed.yaml, line 3, column 1: not valid YAML .*begun at line 2, col"):
        read_parameter_file(unclosed)
    indented = tmp_path / "indented.yaml"
    indented.write_text("steps: 5\n lr: 0.1\n")
    with pytest.raises(ValueError, match=r"indented.yaml, line 2, column 4: not valid YAML \(mapping values"):
        read_parameter_file(indented)
    listed = tmp_path / "listed.yaml"
    listed.write_text("- steps\n")
    with pytest.raises(ValueError, match="listed.yaml holds a list, not a mapping"):
        read_parameter_file(listed)


def test_a_wrong_key_or_value_names_the_file_that_set_it(tmp_path, capsys):
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("steps: 5\n")
    second.write_text("steps: many\nlr: 0.1\n")
    with pytest.raises(TypeError, match=r"'steps' must be of type int, got 'many' \('steps' is set in .*second.yaml\)"):
        from_files("04_real_data.ipynb", first, second)
    assert from_files("04_real_data.ipynb", second, first).steps == 5  # the later file wins, as with papermill
    second.write_text("backbon: llama8b\n")
    with pytest.raises(SystemExit, match=r"did you mean 'backbone'.*\('backbon' is set in .*second.yaml\)"):
        main(["04_real_data", "--check", str(first), str(second)])
    main(["04_real_data", "--check", str(first)])
    assert capsys.readouterr().out == f"{first}: valid parameters for notebook 04_real_data\n"


def test_check_takes_the_notebook_from_the_files_folder(capsys):
    main(["--check", str(ROOT / "params" / "04_real_data" / "qampari_llama8b.yaml")])
    assert "valid parameters for notebook 04_real_data" in capsys.readouterr().out


def test_a_replaced_folder_stays_the_old_one_until_the_new_one_is_complete(tmp_path):
    folder = tmp_path / "model"
    with atomic_folder(folder) as staging:
        (staging / "weights").write_text("old")
    with pytest.raises(RuntimeError, match="failed half way"), atomic_folder(folder) as staging:
        (staging / "weights").write_text("new, half written")
        raise RuntimeError("failed half way")
    assert (folder / "weights").read_text() == "old"
    with atomic_folder(folder) as staging:
        (staging / "weights").write_text("new")
    assert (folder / "weights").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no staging or old folder left


def test_the_encode_command_refuses_an_out_it_cannot_write_before_the_encoder_loads(tmp_path, capsys):
    from amer_lib.runs.encode import parse_args

    (tmp_path / "file").write_text("")
    corpus = ["--corpus", str(tmp_path / "corpus.tsv"), "--encoder", "minilm"]
    with pytest.raises(SystemExit):
        parse_args([*corpus, "--out", str(tmp_path / "file" / "shards")])
    assert "error: --out '" in (err := capsys.readouterr().err) and "shards' cannot be written" in err
    with pytest.raises(SystemExit):
        parse_args(["--prepared", str(tmp_path / "file"), "--encoder", "minilm"])
    assert "error: --prepared '" in (err := capsys.readouterr().err) and "minilm' cannot be written" in err
    assert parse_args([*corpus, "--out", str(tmp_path / "shards")]).out == tmp_path / "shards"
