"""Typed parameters: a frozen dataclass whose fields are a notebook's parameters, checked on creation.

A field's type annotation says what it holds (`int`, `float`, `bool`, `str`, `dict`, `list[...]`)
and `param(...)` its default, what it means and what a type cannot say: the valid choices, a
minimum, whether a list may be empty, and whether the field shapes a run (part of its cache key
and checkpoint digest) or only chooses which runs to make and where files go. Each parameter is
declared here once; the notebook's `parameters` cell is written from it (`amer_lib.params`). Every
check names the parameter and, for a choice, the valid ones; the same class is the notebook's
schema and the run store's key.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import types
import typing
from pathlib import Path
from typing import Any


def param(
    default: Any = dataclasses.MISSING,
    *,
    help: str = "",
    choices: tuple | None = None,
    or_folder: bool = False,
    minimum: int | None = None,
    maximum: int | None = None,
    may_be_empty: bool = False,
    run: bool = True,
    default_if_absent: bool = False,
    study: bool = False,
    keyed_at_default: bool = True,
):
    """A notebook parameter: its default (what the notebook's `parameters` cell shows, written
    from it by `amer_lib.params`), what it means (`help`, the cell's comment) and what a type
    cannot say: `choices`, `minimum` and `maximum` apply to a list's elements; `or_folder`: a path (a value
    with a `/`) is valid besides the choices; `may_be_empty`: [] is valid (it switches the step the
    list drives off); `run=False`: not part of the run key; `default_if_absent`: a parameter added
    later whose default computes what the code did before it, so a file written before it (a
    committed figures folder's params.yaml) reads as its default instead of failing as incomplete;
    `study`: a lever measured to lose, kept for the studies that set it: still a field and part of
    the run key, but out of the notebook's `parameters` cell, set through its `study_levers`
    mapping (`amer_lib.params`); `keyed_at_default=False`: a parameter whose default computes what
    every run made before it computed, in the run key only when set to something else (the runs
    made before it keep their keys; it reads as its default where a file lacks it). `choices` may
    be a registry (a mapping): its names at the time of the check are the valid ones."""
    meta = {
        "help": help,
        "choices": choices,
        "or_folder": or_folder,
        "minimum": minimum,
        "maximum": maximum,
        "may_be_empty": may_be_empty,
        "run": run,
        "default_if_absent": default_if_absent or not keyed_at_default,
        "study": study,
        "keyed_at_default": keyed_at_default,
    }
    if isinstance(default, (list, dict)):  # a fresh copy per config, as dataclasses require
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def internal(default: Any, *, choices: tuple | None = None):
    """A field that is not a notebook parameter: the library sets it (e.g. the MLP sweep's training
    transform); it shapes the run where it is set."""
    return dataclasses.field(default=default, metadata={"choices": choices, "run": True, "internal": True})


@dataclasses.dataclass(frozen=True)
class Config:
    """Base of the notebooks' configs. Subclasses are frozen dataclasses of `param()` fields."""

    def __post_init__(self):
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            _check(f.name, getattr(self, f.name), hints[f.name], f.metadata)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The notebook's parameters at their defaults (a parameter without one is left out)."""
        found = {}
        for f in dataclasses.fields(cls):
            if f.metadata.get("internal"):
                continue
            if f.default is not dataclasses.MISSING:
                found[f.name] = copy.deepcopy(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                found[f.name] = f.default_factory()
        return found

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        """The notebook's parameters (fields the library sets itself are left out)."""
        return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get("internal"))

    @classmethod
    def study_lever_names(cls) -> tuple[str, ...]:
        """The parameters set through the notebook's `study_levers` (`param(study=True)`)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("study"))

    @classmethod
    def non_run_keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata["run"])

    @classmethod
    def unkeyed_defaults(cls) -> dict[str, Any]:
        """The fields out of the run key at their default (`param(keyed_at_default=False)`), with it."""
        defaults = cls.defaults()
        unkeyed = [f.name for f in dataclasses.fields(cls) if not f.metadata.get("keyed_at_default", True)]
        return {name: defaults[name] for name in unkeyed}

    @classmethod
    def from_dict(cls, values: dict[str, Any], notebook: str = ""):
        """The config of `values`; an unknown or missing key fails with the valid keys."""
        where = f" for notebook {notebook}" if notebook else f" for {cls.__name__}"
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise KeyError(
                f"unknown parameter(s) {unknown}{where}{did_you_mean(unknown, cls.parameter_names())}; "
                f"valid keys: {', '.join(cls.parameter_names())}"
            )
        absent = set(cls.parameter_names()) - set(values)
        later = {f.name for f in dataclasses.fields(cls) if f.name in absent and f.metadata.get("default_if_absent")}
        values = {**values, **{name: default for name, default in cls.defaults().items() if name in later}}
        missing = sorted(absent - later)
        if missing:
            raise KeyError(f"missing parameter(s) {missing}{where}")
        return cls(**values)

    @classmethod
    def read_text_values(cls, values: dict[str, Any]) -> dict[str, Any]:
        """`values` with each list or mapping given as text read as YAML (`[a, b]`, `{k: v}`): papermill's
        `-p NAME VALUE` passes those as strings (its `-y` passes YAML)."""
        import yaml

        hints = typing.get_type_hints(cls)
        read = dict(values)
        for name, value in values.items():
            kind = typing.get_origin(hints.get(name)) or hints.get(name)
            if isinstance(value, str) and kind in (list, dict):
                try:
                    read[name] = yaml.safe_load(value)
                except yaml.YAMLError as error:
                    raise ValueError(
                        f"parameter {name!r} takes a {kind.__name__}; {value!r} is not one in YAML "
                        f"(e.g. -p {name} '[a, b]' or -y '{name}: [a, b]'): {error}"
                    ) from error
        return read

    @classmethod
    def from_yaml(cls, path: str | Path):
        """A config written by `to_yaml` (or a parameter file naming every key); an error names the file."""
        values = read_parameter_file(path)
        try:
            return cls.from_dict(values)
        except (KeyError, ValueError, TypeError) as error:
            raise type(error)(f"{path}: {error.args[0]}") from error

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (what results JSON and params.yaml hold): the notebook's
        parameters, and a field the library sets only where it is set (so params.yaml reads as the
        notebook's parameters)."""
        return {
            f.name: _plain(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if not (f.metadata.get("internal") and getattr(self, f.name) == f.default)
        }

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.as_dict(), sort_keys=False)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def read_parameter_file(path: str | Path) -> dict[str, Any]:
    """A YAML parameter file's mapping of names to values; a syntax error names the file, its line
    and column (papermill's own `-f` reading names none: `"<unicode string>", line 2`)."""
    import yaml

    try:
        values = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        problem = getattr(error, "problem", None) or str(error)
        context, begun = getattr(error, "context", None), getattr(error, "context_mark", None)
        if context and begun:  # e.g. "while parsing a flow sequence": where the unclosed part began
            problem += f", {context} begun at line {begun.line + 1}, column {begun.column + 1}"
        raise ValueError(f"{where}: not valid YAML ({problem}); a parameter file holds `name: value` lines") from error
    if values is not None and not isinstance(values, dict):
        raise ValueError(f"{path} holds a {type(values).__name__}, not a mapping of parameter names to values")
    return values or {}


def did_you_mean(unknown: list[str], valid: tuple[str, ...]) -> str:
    """The valid names closest to each unknown one (a typo: `backbon` -> `backbone`), as text."""
    guesses = {name: difflib.get_close_matches(name, valid, n=3, cutoff=0.6) for name in unknown}
    found = [f"{name!r}: did you mean {' or '.join(map(repr, close))}?" for name, close in guesses.items() if close]
    return f" ({'; '.join(found)})" if found else ""


def _plain(value: Any) -> Any:
    """A copy in YAML's and JSON's own types (lists, dicts)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, dict) else value


def _check(name: str, value: Any, hint: Any, meta: typing.Mapping) -> None:
    is_list = typing.get_origin(hint) is list
    kind = typing.get_args(hint)[0] if is_list else hint
    if typing.get_origin(kind) in (typing.Union, types.UnionType):  # e.g. `str | None`
        kind = typing.get_args(kind)
    kind = {float: (float, int), dict: dict}.get(kind, kind)
    if is_list and not (isinstance(value, (list, tuple)) and (value or meta.get("may_be_empty"))):
        raise ValueError(f"parameter {name!r} must be a non-empty list (e.g. [a, b]), got {value!r}")
    for item in value if is_list else [value]:
        if not isinstance(item, kind) or (kind is int and isinstance(item, bool)):
            raise TypeError(f"parameter {name!r} must be of type {_type_name(hint)}, got {item!r}")
        choices = meta.get("choices")
        folder = meta.get("or_folder") and "/" in item
        if choices is not None and item is not None and item not in choices and not folder:
            also = " or a local folder (a path with a /)" if meta.get("or_folder") else ""
            raise ValueError(
                f"invalid value {item!r} for parameter {name!r}; valid choices: {', '.join(map(str, choices))}{also}"
            )
        minimum, maximum = meta.get("minimum"), meta.get("maximum")
        if maximum is not None and (item > maximum or (minimum is not None and item < minimum)):
            raise ValueError(f"parameter {name!r} must be between {minimum} and {maximum}, got {item!r}")
        if minimum is not None and item < minimum:
            raise ValueError(f"parameter {name!r} must be >= {minimum}, got {item!r}")


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) if isinstance(hint, type) else str(hint)
