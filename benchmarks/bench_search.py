"""What a trained AMER costs to use: loading a model folder and answering 100 new questions over
the offline corpus (30,000 WordNet documents, MiniLM embeddings, exact search), AMER (n = 5) and
single-query (n = 1) side by side in one run.

The models are notebook 04's runs at its offline defaults (`wordnet_kinds`, seed 0), which must
have been made first (`make figures`); they are exported into a temporary folder. Times: the
export; the model folder loaded in a fresh process (after the library's import, timed apart)
and in this one (best of `--repeat`, the weights in the page cache); the first 100 test
questions searched to k = 100 (generation alone, then generation, search and merge), best of
`--repeat`; and `python -m amer_lib.search` on the same questions in a fresh process, end to
end (interpreter, imports, load, search, TREC file).

    python benchmarks/bench_search.py --out benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import machine, write_section

from amer_lib.data.questions import read_question_texts
from amer_lib.experiments.real_data import export_run
from amer_lib.io import write_json
from amer_lib.params import from_files
from amer_lib.retriever import AMERRetriever

ROOT = Path(__file__).resolve().parent.parent
DATASET, QUESTIONS, K = "wordnet_kinds", 100, 100


def timed(call) -> tuple[float, object]:
    began = time.perf_counter()
    value = call()
    return time.perf_counter() - began, value


def measure(system: str, folder: Path, prepared: Path, questions: list[str], repeat: int) -> dict:
    load = min(timed(lambda: AMERRetriever.from_pretrained(folder, index=prepared))[0] for _ in range(repeat))
    retriever = AMERRetriever.from_pretrained(folder, index=prepared)
    generate = min(timed(lambda: retriever.query_vectors(questions))[0] for _ in range(repeat))
    search = min(timed(lambda: retriever.search(questions, k=K))[0] for _ in range(repeat))
    return dict(
        system=system,
        n=retriever.config["n_queries"],
        load_s=round(load, 3),
        generate_s=round(generate, 3),
        search_s=round(search, 3),
        ms_per_question=round(1000 * search / len(questions), 2),
    )


# a fresh interpreter: the import of the library, then the first load of the folder
FRESH_LOAD = """
import sys, time
began = time.perf_counter()
from amer_lib.retriever import AMERRetriever
imported = time.perf_counter()
AMERRetriever.from_pretrained(sys.argv[1], index=sys.argv[2])
print(imported - began, time.perf_counter() - imported)
"""


def fresh_load_seconds(folder: Path, prepared: Path) -> tuple[float, float]:
    """Seconds to import amer_lib.retriever and to load the folder, in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-c", FRESH_LOAD, str(folder), str(prepared)], cwd=ROOT, check=True, capture_output=True
    )
    imported, loaded = map(float, done.stdout.split())
    return round(imported, 2), round(loaded, 2)


def command_seconds(folder: Path, prepared: Path, questions_file: Path, out: Path) -> float:
    args = ["--model", str(folder), "--index", str(prepared), "--questions", str(questions_file), "--out", str(out)]
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "amer_lib.search", *args], cwd=ROOT, check=True, capture_output=True)
    return round(time.perf_counter() - began, 2)


def report(rows: list[dict]) -> str:
    amer, single = rows
    lines = [
        "## Using a trained AMER (`bench_search.py`)",
        "",
        f"Machine: {machine()}. Notebook 04's offline runs of `{DATASET}` (seed 0) exported, then the first "
        f"{QUESTIONS} test questions searched to k = {K} over the offline corpus (30,000 documents, exact "
        "search). All rows measured in one invocation; load and search times are the best of repeated runs.",
        "",
        "| system | n | export (s) | fresh process: import (s) | fresh process: load (s) | load (s) | generation (s) "
        "| generation + search + merge (s) | per question (ms) | the command, end to end (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['system']} | {r['n']} | {r['export_s']} | {r['import_s']} | {r['fresh_load_s']} | {r['load_s']} "
            f"| {r['generate_s']} | {r['search_s']} | {r['ms_per_question']} | {r['command_s']} |"
        )
    lines += [
        "",
        f"AMER / single-query, per question: {amer['search_s'] / single['search_s']:.2f}x "
        f"(generation {amer['generate_s'] / single['generate_s']:.2f}x).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/RESULTS.md")
    parser.add_argument("--json", default="benchmarks/search.json")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    out, json_out = Path(args.out).resolve(), Path(args.json).resolve()
    os.chdir(ROOT / "notebooks")  # the notebook's defaults name their folders from here
    params = from_files(ROOT / "notebooks" / "04_real_data.ipynb")
    prepared = Path(params.prepared_dir).resolve()
    questions = read_question_texts(prepared / f"{DATASET}_test.jsonl")[1][:QUESTIONS]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        questions_file = Path(scratch) / "questions.txt"
        questions_file.write_text("".join(q + "\n" for q in questions))
        for system in ("amer", "single"):
            folder = Path(scratch) / system
            export_seconds, _ = timed(lambda: export_run(params, DATASET, system, 0, folder))
            row = measure(system, folder, prepared, questions, args.repeat)
            row["export_s"] = round(export_seconds, 2)
            row["import_s"], row["fresh_load_s"] = fresh_load_seconds(folder, prepared)
            row["command_s"] = command_seconds(folder, prepared, questions_file, Path(scratch) / f"{system}.trec")
            rows.append(row)
    write_json(json_out, {"machine": machine(), "questions": QUESTIONS, "k": K, "rows": rows})
    write_section(out, "bench_search", report(rows))
    print(report(rows))


if __name__ == "__main__":
    main()
