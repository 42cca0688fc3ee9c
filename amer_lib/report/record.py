"""The key numbers a notebook records, where tests and readers find them without parsing text.

`record(name, value)` leaves `{name: value}` in an output's metadata under `amer_lib.record`, showing
nothing (the notebook shows the value as a table or a figure) (as scrapbook's `glue` does, without its dependency);
`recorded(path)` reads every recorded value of an executed notebook (papermill's output file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KEY = "amer_lib.record"


def record(name: str, value: Any) -> None:
    """Record one JSON-serialisable value under `name` in the output's metadata (nothing is shown)."""
    from IPython.display import publish_display_data

    json.dumps(value)  # fail here, not when the notebook is saved
    # shown as nothing: the value is for the tests that read the executed notebook, not for its reader
    publish_display_data({"text/markdown": ""}, metadata={KEY: {name: value}})


def recorded(notebook_path: str | Path) -> dict[str, Any]:
    """Every value an executed notebook recorded, by name (a later record of a name wins)."""
    values: dict[str, Any] = {}
    for cell in json.loads(Path(notebook_path).read_text())["cells"]:
        for output in cell.get("outputs", []):
            values.update(output.get("metadata", {}).get(KEY, {}))
    return values
