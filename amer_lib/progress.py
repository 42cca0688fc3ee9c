"""Progress bars, and the library's warnings, that read the same live and in a saved notebook.

`tqdm.auto` draws a widget in Jupyter; a notebook that papermill executes has no front end to
update it, so the saved output shows the widget's first state ("0/30000") for good. These are text
bars on stdout, redrawn at most every `MIN_INTERVAL` seconds: live, Jupyter redraws the line in
place; in the saved notebook (and a terminal's log) the output ends with the bar's last state.

The library's warnings to its user (`AmerWarning`: a step skipped or left out, and why) show as one
line, "AmerWarning: <message>". Python's default shows a warning as the file and line that called
the library, then that line's source: in a notebook, the kernel's temporary file
(`/tmp/ipykernel_1234/56.py:1: UserWarning: ...`) and the cell's line again. Importing this module
installs a `warnings.formatwarning` that writes this library's warnings as the message alone and
hands every other warning to the format it replaced; filters apply to ours as to any
(`warnings.filterwarnings("ignore", category=AmerWarning)`).
"""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager

from tqdm.std import tqdm as _text_tqdm

MIN_INTERVAL = 2.0  # seconds between redraws: a 10-hour run writes at most 18,000 of them


def tqdm(*args, **kwargs) -> _text_tqdm:
    """`tqdm.tqdm` with the defaults above (each can still be given)."""
    kwargs.setdefault("file", sys.stdout)
    kwargs.setdefault("mininterval", MIN_INTERVAL)
    kwargs.setdefault("dynamic_ncols", True)
    return _text_tqdm(*args, **kwargs)


def count_done_before(bar: _text_tqdm, steps: int) -> None:
    """Move `bar` on by `steps` done before it began (a resumed run's, a run read back), as its
    `initial` would have: in its position, not in its rate."""
    if bar.disable or not steps:
        return
    bar.n += steps
    bar.last_print_n += steps  # tqdm's rate counts from here
    bar.initial += steps
    bar.refresh()


def report_done_before(on_step, steps: int) -> None:
    """Tell a step reporter `on_step` (`runs.parallel.StepReporter`: one with a `done_before`
    method) that `steps` of its job were done before it began here, so that the bar it reports to
    counts them at once and its estimate of the time left does not; other callbacks are only
    called per step trained."""
    if steps and hasattr(on_step, "done_before"):
        on_step.done_before(steps)


class Steps:
    """A bar over named steps of uneven length (an index's training, then its searches): `begin`
    counts the step before as done and names the new one beside the bar at once, so that a step
    of minutes shows what is running; `close` counts the last."""

    def __init__(self, total: int, desc: str, progress: bool = True):
        self.bar = tqdm(total=total, desc=desc, unit="step", disable=not progress)
        self.begun: list[str] = []

    def begin(self, step: str) -> None:
        if self.begun:
            self.bar.update()
        self.begun.append(step)
        self.bar.set_postfix_str(step)

    def close(self) -> None:
        if self.begun:
            self.bar.update()
        self.bar.close()


@contextmanager
def without_library_bars():
    """Hugging Face's own bars (transformers' "Loading weights") off inside the block, put back
    after: they are widgets that a saved notebook shows at 0% for good, beside ours at 100%."""
    from transformers.utils import logging

    was_on = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            logging.enable_progress_bar()


LONG_WORK = 300.0  # seconds: work estimated to take longer is announced before it goes on


def duration(seconds: float) -> str:
    """`seconds` as a person reads it: 45 s, 12 min, 3 h 20 min."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"


def announce_cost(what: str, steps: int, seconds: float, remaining: int) -> str | None:
    """Once `steps` steps were timed at `seconds` (start-up excluded): what the `remaining` steps
    will cost at that rate, printed when it is long work (over `LONG_WORK`); the message, or None
    when it was not worth saying."""
    estimate = seconds / steps * remaining
    if estimate < LONG_WORK:
        return None
    message = (
        f"{what}: {steps} step(s) took {duration(seconds)}; the {remaining:,} steps left need about "
        f"{duration(estimate)} at this rate"
    )
    print(message, flush=True)
    return message


class AmerWarning(UserWarning):
    """A warning of this library's for its user: something skipped or left out, and why."""


def format_warning(message, category, filename, lineno, line=None) -> str:
    """One line for an `AmerWarning`, the replaced format's text for any other warning."""
    if issubclass(category, AmerWarning):
        return f"{category.__name__}: {message}\n"
    return _other_format(message, category, filename, lineno, line)


_other_format = warnings.formatwarning
if getattr(_other_format, "__module__", None) != __name__:  # once, also when the module is reloaded
    warnings.formatwarning = format_warning
