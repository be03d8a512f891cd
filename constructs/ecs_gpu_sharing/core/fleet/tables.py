"""How the parser reads a table: each key checked against its row, problems gathered (all at once, one line each)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ..errors import FleetSpecError
from ..file_key import TYPE_NAMES, of_type, pattern_problem, value_problem
from .keys import Key
from .values import NAME

_Spec = TypeVar("_Spec")


def _build(cls: Callable[..., _Spec], keys: tuple[Key, ...], values: Mapping[str, Any], **given: Any) -> _Spec:
    """A spec from its key table: one attribute per key (``Key.attribute``), the value ``given`` where the parser
    checked and converted it, else the file's value, else the key's default. The table is read off the spec's own
    fields (``core.file_key``), so a key and its attribute cannot drift apart."""
    left_out, attribute_of, each_spec = _layout(keys)
    out = dict(left_out)
    for table, key in each_spec:
        out[table] = key.empty
    for name, value in values.items():
        attribute = attribute_of.get(name)
        if attribute is not None:
            out[attribute] = tuple(value) if isinstance(value, list) else value
    out.update(given)
    try:
        return cls(**out)
    except TypeError as error:  # a key declared in the table with no attribute on the spec: a bug, said plainly
        raise TypeError(f"fleet key table and {getattr(cls, '__name__', cls)} disagree: {error}") from None


_Layout = tuple[dict[str, Any], dict[str, str], tuple[tuple[str, Key], ...]]
_LAYOUTS: dict[int, tuple[tuple[Key, ...], _Layout]] = {}


def _layout(keys: tuple[Key, ...]) -> _Layout:
    """A key table as ``_build`` reads it, made once a table (``keys``' module constants; held with the table): each
    attribute's value where its key is left out, each key's attribute by the key's name, and the keys whose value
    left out is a table (``Key.empty`` asked each spec: an empty one is a new one). A file of a thousand services
    builds as many specs of forty keys; reading each key's attribute and default for each took half the specs' making
    (docs/planning.md)."""
    known = _LAYOUTS.get(id(keys))
    if known is not None and known[0] is keys:
        return known[1]
    left_out: dict[str, Any] = {}
    each_spec = []
    for key in keys:
        empty = key.empty
        if isinstance(empty, dict):
            each_spec.append((key.attribute, key))
        else:
            left_out[key.attribute] = tuple(empty) if isinstance(empty, list) else empty
    attribute_of = {key.name: key.attribute for key in keys}
    if len(set(attribute_of.values())) < len(keys):  # read in the file's order, one key would hide another
        raise TypeError(f"fleet key table: two keys fill one attribute ({', '.join(attribute_of)})")
    layout = (left_out, attribute_of, tuple(each_spec))
    if len(_LAYOUTS) > 64:  # a table made on the fly at each call (none is) is held no longer
        _LAYOUTS.clear()
    _LAYOUTS[id(keys)] = (keys, layout)
    return layout


def _value(good: Mapping[str, Any], keys: tuple[Key, ...], name: str) -> Any:
    """A checked table's value of key ``name``, else the key's declared default (declared once, on its field)."""
    if name in good:
        return good[name]
    return next(k for k in keys if k.name == name).empty


MAX_PROBLEMS_SHOWN = 100  # a file of thousands of mistakes is shown its first hundred, and how many more


class _Problems:
    """Every problem of one file, collected so they are reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, message: str) -> None:
        self.lines.append(f"{self.source}: {message}")

    def raise_if_any(self) -> None:
        if self.lines:
            lines = list(dict.fromkeys(self.lines))
            if len(lines) > MAX_PROBLEMS_SHOWN:
                rest = len(lines) - MAX_PROBLEMS_SHOWN
                lines = [*lines[:MAX_PROBLEMS_SHOWN], f"{self.source}: and {rest} more problems; fix these first"]
            raise FleetSpecError("\n".join(lines))


MISSING_CUTOFF = 0.6  # how alike an unknown key's name must be to a required key missing beside it to be guessed
CLOSE_CUTOFF = 0.75  # ... and to any other key of the table


def _guess(name: str, table: Mapping[str, Any], keys: tuple[Key, ...]) -> str:
    """The "did you mean" of an unknown key: a required key missing from the same table, its value of that key's type,
    where the names are alike (gpu_memory_mib for gpu_budget_mib: memory_mib is closer, but it is there); otherwise
    the closest name of the table's keys; nothing where none is close."""
    value = table[name]
    missing = [k.name for k in keys if k.required and k.name not in table and of_type(value, k)]
    found = difflib.get_close_matches(str(name), missing, n=1, cutoff=MISSING_CUTOFF)
    if found:
        return f"did you mean {found[0]} (missing here)? "
    close = difflib.get_close_matches(str(name), [k.name for k in keys], n=1, cutoff=CLOSE_CUTOFF)
    return f"did you mean {close[0]}? " if close else ""


def _check_table(problems: _Problems, where: str, table: Mapping[str, Any], keys: tuple[Key, ...]) -> dict[str, Any]:
    """The table's well-typed, in-range values; every problem is added to ``problems``."""
    known = {k.name: k for k in keys}
    good: dict[str, Any] = {}
    for name in table:
        if name not in known:
            shown = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else repr(name)
            problems.add(
                f"unknown key {where}{shown}; {_guess(name, table, keys)}the keys here are: {', '.join(known)}"
            )
    for key in keys:
        if key.name not in table:
            if key.required:
                problems.add(f"missing key {where}{key.name} ({TYPE_NAMES[key.value_type]}): {key.doc}")
            continue
        value: Any = table[key.name]
        problem = value_problem(key, value)
        if problem is not None:
            problems.add(f"{where}{key.name}{problem}")
            continue
        if key.table is not None and isinstance(value, dict):
            value = _check_table(problems, f"{where}{key.name}.", value, key.table)
        elif key.table is not None and isinstance(value, list):
            if not all(isinstance(item, dict) for item in value):
                problems.add(f"{where}{key.name} must be a list of tables, got {value!r}")
                continue
            value = [
                _check_table(problems, f"{where}{key.name}[{i}].", item, key.table) for i, item in enumerate(value)
            ]
        elif (
            key.items is not None
            and isinstance(value, list)
            and not _check_items(problems, f"{where}{key.name}", value, key)
        ):
            continue
        good[key.name] = value
    return good


def _check_items(problems: _Problems, where: str, values: list[Any], key: Key) -> bool:
    """Whether every item of a list key has its type and pattern; adds a problem for the first that has not."""
    for value in values:
        if not isinstance(value, key.items or object) or isinstance(value, bool):
            problems.add(f"{where} must hold only {TYPE_NAMES[key.items or str]}s, got {value!r}")
            return False
        problem = pattern_problem(key, value)
        if problem is not None:
            problems.add(f"{where} item{problem}")
            return False
    if key.pattern is not None and len(set(values)) != len(values):
        problems.add(f"{where} names an item twice: {values!r}")
        return False
    return True


def _check_name(problems: _Problems, kind: str, name: str) -> bool:
    if NAME.fullmatch(name):
        return True
    problems.add(
        f"{kind}.{name!r} is not a usable name; use letters, digits and '-', starting with a letter, at most 40 "
        "characters"
    )
    return False


def _named_tables(problems: _Problems, kind: str, tables: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``[kind.<name>]`` tables whose name is usable and that are tables; a problem for each other one."""
    for name, table in tables.items():
        if not _check_name(problems, kind, name):
            continue
        if not isinstance(table, dict):
            problems.add(f"{kind}.{name} must be a table")
            continue
        yield name, table
