"""Follow notebook 04's config through the calls of one tiny `run_all` (one dataset, single-query
and AMER, 2 steps) and count the library files it visits, its stays (a run of calls in one file)
and its climbs (a stay in a higher layer after one in a lower: core < data < runs < baselines,
report < experiments; the wing's modules at their level).

A call is on the config's path when the called function receives the config, an object holding
it (`.params`), or, in the wide count, one of its text values (a path, a model name); the
config's own methods and the expressions inside a function (comprehensions, lambdas) are not
calls it is handed to.

    .venv/bin/python studies/config_path/config_path.py
"""

import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from stand_ins import tiny_wordnet_runs  # noqa: E402

import amer_lib  # noqa: E402
from amer_lib.experiments.real_data import run_all  # noqa: E402

PACKAGE = Path(amer_lib.__file__).parent
LAYERS = {
    **{leaf: 0 for leaf in ("core", "io.py", "progress.py", "params.py", "config.py", "packaged.py")},
    "data": 1,
    "runs": 2,
    "baselines": 3,
    "report": 3,
    "experiments": 4,
}
WING_LEVELS = {"beyond/decomposition.py": 4}  # the wing's other modules sit at core's level


def layer(where: str) -> int:
    return WING_LEVELS.get(where, 0) if where.startswith("beyond/") else LAYERS[where.split("/")[0]]


def traced_run(params) -> dict[str, list[tuple[str, str]]]:
    """(file, function) of every call on the config's path, narrow and wide, in call order."""
    texts = {v for v in params.as_dict().values() if isinstance(v, str) and len(v) > 2}
    calls = {"narrow": [], "wide": []}

    def profile(frame, event, arg):
        if event != "call":
            return
        try:
            where = Path(frame.f_code.co_filename).resolve().relative_to(PACKAGE).as_posix()
        except ValueError:
            return
        if frame.f_code.co_name.startswith("<") or frame.f_locals.get("self") is params:
            return  # an expression inside a function (a comprehension, a lambda), or the config's own method
        values = list(frame.f_locals.values())
        narrow = any(v is params or getattr(v, "params", None) is params for v in values)
        if narrow:
            calls["narrow"].append((where, frame.f_code.co_name))
        if narrow or any(isinstance(v, str) and v in texts for v in values):
            calls["wide"].append((where, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        run_all(params, progress=False)
    finally:
        sys.setprofile(None)
    return calls


def counts(calls: list[tuple[str, str]]) -> dict:
    stays = [calls[0]]
    for call in calls[1:]:
        if call[0] != stays[-1][0]:
            stays.append(call)
    climbs = [b[0] for a, b in zip(stays, stays[1:]) if layer(b[0]) > layer(a[0])]
    return {"files": len({c[0] for c in calls}), "stays": len(stays), "climbs": len(climbs), "into": Counter(climbs)}


def main() -> None:
    params = tiny_wordnet_runs(Path(tempfile.mkdtemp()))
    lines = ["| path | files | stays | climbs | climbs into |", "|---|---|---|---|---|"]
    for name, calls in traced_run(params).items():
        c = counts(calls)
        into = ", ".join(f"`{k}` {v}" for k, v in c["into"].most_common())
        lines.append(f"| {name} | {c['files']} | {c['stays']} | {c['climbs']} | {into} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
