"""The library's warnings read as messages in a saved notebook: one line, with no kernel file
prefix and no source line; other libraries' warnings keep Python's format."""

import warnings

import nbformat
from nbclient import NotebookClient

from amer_lib.progress import AmerWarning

WHERE = "/tmp/ipykernel_4242/1234567.py"  # the file Python names for a notebook cell's code
LINE = "rows = index_check(benchmark, encoder, ivfpq_factories, ivfpq_nprobes)"


def test_a_library_warning_is_formatted_as_its_message_alone():
    shown = warnings.formatwarning("IVF-PQ check of IVF256,PQ16 skipped: too small", AmerWarning, WHERE, 1, LINE)
    assert shown == "AmerWarning: IVF-PQ check of IVF256,PQ16 skipped: too small\n"
    other = warnings.formatwarning("deprecated", DeprecationWarning, WHERE, 1, LINE)
    assert other == f"{WHERE}:1: DeprecationWarning: deprecated\n  {LINE}\n"  # Python's own


def test_a_notebooks_saved_output_holds_the_library_warning_as_one_line(tmp_path):
    """As JupyterLab runs a cell (nbclient, an IPython kernel): the output kept is the message."""
    cell = (
        "import warnings\n"
        "from amer_lib.progress import AmerWarning\n"
        "for factory in ('IVF256,PQ16', 'IVF256,PQ48'):\n"
        "    warnings.warn(f'IVF-PQ check of {factory} skipped', AmerWarning)\n"
        "warnings.warn('a warning of another library', UserWarning)"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}}).execute()
    text = "".join(o.get("text", "") for o in notebook.cells[0].outputs if o.get("name") == "stderr")
    mine, other = text.split("UserWarning: a warning of another library")
    assert mine.splitlines()[:2] == [
        "AmerWarning: IVF-PQ check of IVF256,PQ16 skipped",
        "AmerWarning: IVF-PQ check of IVF256,PQ48 skipped",
    ]
    assert "ipykernel" not in "\n".join(mine.splitlines()[:2]) and "warnings.warn" in other  # Python's, with its line
