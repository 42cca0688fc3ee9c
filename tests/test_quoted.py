"""The numbers README.md and docs/ quote are rendered from their committed files (`docs/quoted.py`): the
pages as committed are what the renderer writes, and the renderer puts a changed number where its
sentence quotes it, keeps the page's line breaks, and refuses a sentence it cannot find."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_quoted():
    spec = importlib.util.spec_from_file_location("quoted", ROOT / "docs" / "quoted.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


quoted = load_quoted()


def test_every_quoted_number_is_its_files():
    """Each page rendered from the committed files is the page as committed."""
    stale = [page for page, (text, new) in quoted.rendered_pages().items() if new != text]
    assert stale == [], f"quoted numbers moved in {stale}: python docs/quoted.py --write"


def test_the_command_says_whether_the_pages_are_current(tmp_path):
    """`python docs/quoted.py` from the repository root, as the module's docstring shows it."""
    done = subprocess.run([sys.executable, "docs/quoted.py"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "every quoted number is its file's", done.stderr


def test_a_changed_number_is_rendered_where_its_sentence_stands_and_nowhere_else():
    """By hand: a sentence wrapped over two lines, quoted twice, with a number that is current and one
    that moved; only the moved one changes, in both places, and the line breaks stay."""
    text = (
        "Intro 1.5 s.\nit loads in 0.24 s after\n2.95 s of imports. Then: it loads in 0.24 s after 2.95 s of imports.\n"
    )
    sentences = ("it loads in {a.load} s after {a.imports} s of imports",)
    new, found = quoted.render(text, sentences, {"a.load": "0.24", "a.imports": "3.10"})
    assert found == set(sentences)
    assert new == (
        "Intro 1.5 s.\nit loads in 0.24 s after\n3.10 s of imports. Then: it loads in 0.24 s after 3.10 s of imports.\n"
    )
    same, _ = quoted.render(new, sentences, {"a.load": "0.24", "a.imports": "3.10"})
    assert same == new


def test_a_quantity_ends_where_the_words_after_it_begin_not_inside_a_number():
    text = "teacher forcing only −6.45% / −1.43%. Scheduled sampling is 29.9x faster (cos 0.373), then"
    sentences = ("teacher forcing only {t.a} / {t.b}. Scheduled", "sampling is {t.c}x faster", "(cos {t.d}), then")
    values = {"t.a": "−6.45%", "t.b": "−1.50%", "t.c": "3.0", "t.d": "0.373"}
    new, _ = quoted.render(text, sentences, values)
    assert new == "teacher forcing only −6.45% / −1.50%. Scheduled sampling is 3.0x faster (cos 0.373), then"


def test_every_quantity_stands_in_a_page():
    """Each quantity set to a mark of its own: every mark is rendered into some page, so no sentence
    matches text that is not its quantity's."""
    marks = {name: f"<{name}>" for name in quoted.quantities()}
    texts = [text for page in (*quoted.PAGES, *quoted.NOTEBOOKS) for text in quoted.page_texts(page)]
    text = "".join(quoted.render(page, quoted.SENTENCES, marks)[0] for page in texts)
    assert [name for name, mark in marks.items() if mark not in text] == []


def test_a_value_with_spaces_keeps_the_pages_wrapping_when_it_reads_the_same():
    text = "took 47 minutes on 2 cores\nshared with the others"
    sentences = ("took {t.min} minutes on {t.cores} with the others",)
    assert quoted.render(text, sentences, {"t.min": "47", "t.cores": "2 cores shared"})[0] == text
    moved = quoted.render(text, sentences, {"t.min": "47", "t.cores": "2 idle cores"})[0]
    assert moved == "took 47 minutes on 2 idle cores with the others"


def test_a_moved_file_changes_the_pages_that_quote_it(monkeypatch):
    """The search benchmark's load time, changed at its source, changes docs/usage.md's sentence alone."""
    real = quoted.SOURCES["search"]
    monkeypatch.setitem(quoted.SOURCES, "search", lambda: {**real(), "load_s": "9.99"})
    changed = {page: new for page, (text, new) in quoted.rendered_pages().items() if new != text}
    assert list(changed) == ["docs/usage.md"]
    assert "a model folder loads in 9.99 s after" in " ".join(changed["docs/usage.md"].split())


@pytest.mark.parametrize(
    "reworded",
    [
        "a model folder now loads in {search.load_s} s after {search.import_s} s",
        "a model folder loads in {search.load_s} s after {search.import_s}, s of",  # a quantity may not take the ","
    ],
)
def test_a_sentence_no_page_holds_is_refused_by_its_text(monkeypatch, reworded):
    monkeypatch.setattr(quoted, "SENTENCES", (*quoted.SENTENCES, reworded))
    with pytest.raises(ValueError, match="found in no page.*" + re.escape(reworded[:20])):
        quoted.rendered_pages()


def test_the_registry_refuses_an_unknown_or_unquoted_quantity_and_an_unbounded_sentence(monkeypatch):
    values, sentences = quoted.quantities(), quoted.SENTENCES
    monkeypatch.setattr(quoted, "SENTENCES", (*sentences, "took {search.nothing} s here"))
    with pytest.raises(KeyError, match=r"search\.nothing.*sources: search, "):
        quoted.check_registry(values)
    assert "{search.amer_s}" in sentences[0]
    monkeypatch.setattr(quoted, "SENTENCES", sentences[1:])
    with pytest.raises(ValueError, match=r"quantities no sentence quotes: search\.amer_s"):
        quoted.check_registry(values)
    with pytest.raises(ValueError, match="begins and ends with words"):
        quoted.pattern("{search.ratio}x faster")


def test_a_moved_number_in_a_notebook_changes_its_markdown_cell_alone_in_jupyters_layout(monkeypatch):
    """The departures study's AMER on senses, changed at its source: notebook 04 is written back with
    that one markdown cell changed, in the layout Jupyter writes (the committed notebook, read and
    written back unchanged, is its own bytes)."""
    import json

    from amer_lib.clean_notebook import dumps

    page = "notebooks/04_real_data.ipynb"
    text = (ROOT / page).read_text()
    assert dumps(json.loads(text)) == text
    values = {**quoted.quantities(), "departures.senses_amer": "99.9"}
    before, after, _ = quoted.rendered_page(page, values)
    assert before == text and after != text
    old, new = json.loads(text)["cells"], json.loads(after)["cells"]
    changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    assert len(old) == len(new) and len(changed) == 1 and old[changed[0]]["cell_type"] == "markdown"
    assert "from 99.9 to" in "".join(new[changed[0]]["source"])
