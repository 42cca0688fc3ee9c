"""`make check-figures`' comparison: a rerun's rows against the committed tables, to the last digit."""

import pandas as pd

from amer_lib.report.check_figures import Check, check_all, main

CHECK = Check("02/results.csv", "02/res*.csv", ("transform", "system"), ("train_seconds",))
COMMITTED = pd.DataFrame(
    {
        "transform": ["linear", "linear", "mlp"],
        "system": ["single", "amer", "amer"],
        "mrecall@10": ["0.0", "1.0", "0.872"],
        "train_seconds": ["78.5", "493.6", "501.0"],
    }
)


def folders(tmp_path, rerun: pd.DataFrame):
    (tmp_path / "rerun" / "02").mkdir(parents=True)
    (tmp_path / "committed" / "02").mkdir(parents=True)
    COMMITTED.to_csv(tmp_path / "committed" / "02" / "results.csv", index=False)
    rerun.to_csv(tmp_path / "rerun" / "02" / "results.csv", index=False)
    return tmp_path / "rerun", tmp_path / "committed"


def test_a_rerun_of_some_rows_with_other_wall_times_matches(tmp_path):
    rerun = COMMITTED.iloc[:2].assign(train_seconds=["80.1", "512.0"], **{"mrecall@10": ["0", "1"]})  # 0.0 as 0
    assert check_all(*folders(tmp_path, rerun), checks=(CHECK,)) == []


def test_one_digit_off_and_a_row_the_committed_table_lacks_are_both_named(tmp_path):
    rerun = pd.concat([COMMITTED.iloc[:2], COMMITTED.iloc[:1].assign(transform="cubic")])
    rerun.loc[1, "mrecall@10"] = "0.999"  # "1.0" committed
    differences = check_all(*folders(tmp_path, rerun), checks=(CHECK,))
    assert len(differences) == 2
    assert differences[0].endswith("{'transform': 'linear', 'system': 'amer'} mrecall@10: committed 1.0, rerun 0.999")
    assert differences[1].endswith("{'transform': 'cubic', 'system': 'single'}: no such row")


def test_the_command_fails_on_a_difference(tmp_path, monkeypatch, capsys):
    import amer_lib.report.check_figures as module

    rerun = COMMITTED.iloc[:1].assign(**{"mrecall@10": "0.1"})
    monkeypatch.setattr(module, "CHECKS", (CHECK,))
    assert main([str(p) for p in folders(tmp_path, rerun)]) == 1
    assert "committed 0.0, rerun 0.1" in capsys.readouterr().err
