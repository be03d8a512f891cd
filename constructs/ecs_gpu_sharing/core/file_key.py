"""A key of the fleet file, declared on the spec field it fills (the troposphere way): its type, whether it is
required, its range or pattern, its default and what it means sit on the field, and a spec's key table is read off
its fields (``keys_of``). The parser, the JSON Schema and the reference docs walk those tables. Pure Python, and a
leaf: the specs of ``core.fleet`` and ``core.allocation`` both import it.

::

    @dataclass(frozen=True, kw_only=True)
    class ServiceSpec:
        name: str  # no key: the table's own name
        image: str = key(str, True, "the container image", pattern=IMAGE, example="my-registry/embedder:1.4")
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from dataclasses import dataclass
from typing import Any

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$", re.ASCII)
"""A name a fleet gives (a capacity, a service, an isolation group): a letter, then letters, digits and dashes."""

PATTERN_WORDS = {NAME.pattern: "a letter, then letters, digits and dashes, 40 at most"}
"""Patterns said in words where a malformed value is refused, beside the key's example."""

_METADATA = "ecs-gpu-sharing:key"
_INLINE = "ecs-gpu-sharing:inline-keys"


@dataclass(frozen=True)
class Key:
    """One key of the fleet file: its type, whether it is required, its range or pattern, and what it means."""

    name: str
    value_type: type  # str, int, bool, list, dict, datetime.date
    required: bool
    doc: str
    low: int | None = None
    high: int | None = None
    high_why: str = ""  # the quota or fact behind ``high``
    pattern: re.Pattern[str] | None = None
    example: str = ""
    default: Any = None
    table: tuple[Key, ...] | None = None  # a table's keys (a dict), or each item's (a list of tables)
    items: type | None = None  # the type of each item of a list, when not a table
    field: str = ""  # the spec attribute the key fills, when not its own name

    @property
    def attribute(self) -> str:
        """The attribute of the spec that holds this key's value."""
        return self.field or self.name

    @property
    def empty(self) -> Any:
        """The value of a key left out: its default, else nothing of its kind (an empty list or table, or None)."""
        if self.default is not None:
            return self.default
        return () if self.value_type is list else {} if self.value_type is dict else None


def key(
    value_type: type,
    required: bool,
    doc: str,
    *,
    name: str = "",
    table: type | None = None,
    field_default: Any = dataclasses.MISSING,
    **rest: Any,
) -> Any:
    """A spec field that is a key of the fleet file: ``name`` when the key is spelled unlike the field, ``table``
    the spec class of a nested table (a dict) or of each item (a list of tables), ``field_default`` the field's own
    default for code that builds the spec by hand (the parser gives every field); the rest as ``Key`` takes it."""
    meta = {_METADATA: (Key(name or "", value_type, required, doc, **rest), table)}
    return dataclasses.field(default=field_default, metadata=meta)


def inline_keys(spec: type, *, field_default: Any = dataclasses.MISSING) -> Any:
    """A spec field whose spec's keys are written in the parent's table, not a table of their own (the evidence
    beside an allocation note)."""
    return dataclasses.field(default=field_default, metadata={_INLINE: spec})


def keys_of(spec: type) -> tuple[Key, ...]:
    """The key table of a spec class, in the order of its fields: each field declared with ``key`` is one key, and a
    field declared with ``inline_keys`` adds its spec's keys; fields without either are not keys."""
    out: list[Key] = []
    for f in dataclasses.fields(spec):
        if _INLINE in f.metadata:
            out.extend(keys_of(f.metadata[_INLINE]))
            continue
        if _METADATA not in f.metadata:
            continue
        declared, table = f.metadata[_METADATA]
        name = declared.name or f.name
        out.append(
            dataclasses.replace(
                declared,
                name=name,
                field="" if name == f.name else f.name,
                table=keys_of(table) if table is not None else declared.table,
            )
        )
    return tuple(out)


TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    list: "a list",
    dict: "a table",
    bool: "true or false",
    datetime.date: "a date (2026-11-30)",
}


def of_type(value: Any, key: Key) -> bool:
    """Whether ``value`` is of ``key``'s type as a fleet file means it: TOML's booleans are not numbers, and a date is
    not a date and time."""
    return (
        isinstance(value, key.value_type)
        and not (isinstance(value, bool) and key.value_type is not bool)
        and not (key.value_type is datetime.date and isinstance(value, datetime.datetime))
    )


def value_problem(key: Key, value: Any) -> str | None:
    """What is wrong with ``value`` as ``key``'s value (its type, range or pattern), as the words that follow the key's
    name in a message, or ``None``. The fleet file's tables and the specs built by hand (an ``AllocationNote`` in a
    CDK app) are held to the same declaration."""
    if not of_type(value, key):
        return f" must be {TYPE_NAMES[key.value_type]}, got {value!r:.80} ({type(value).__name__})"
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and ((key.low is not None and value < key.low) or (key.high is not None and value > key.high))
    ):
        span = f"from {key.low} to {key.high}" if key.high is not None else f">= {key.low}"
        why = f" ({key.high_why})" if key.high is not None and value > key.high and key.high_why else ""
        return f" must be {span}{why}, got {value}"
    return pattern_problem(key, value)


def pattern_problem(key: Key, value: Any) -> str | None:
    """Where a string (a key's value, or an item of its list) does not match the key's pattern: the words that follow
    the key's name, with the pattern in words where ``PATTERN_WORDS`` has them and the key's example."""
    if key.pattern is None or not isinstance(value, str) or key.pattern.fullmatch(value):
        return None
    words = PATTERN_WORDS.get(key.pattern.pattern)
    return f" {value!r:.80} is malformed{f' ({words})' if words else ''}; write it like {key.example!r}"


def field_problem(spec: Any) -> str | None:
    """The first of ``spec``'s fields (a dataclass built in code) whose value its key refuses, as "<field><what is
    wrong>", or ``None``: a field may keep its own default, and an inline spec must be of its class."""
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if _INLINE in f.metadata:
            kind = f.metadata[_INLINE]
            if value is not None and not isinstance(value, kind):
                return f"{f.name} must be an {kind.__name__}, got {value!r:.80}"
            continue
        if _METADATA not in f.metadata:
            continue
        declared, _ = f.metadata[_METADATA]
        if type(value) is type(f.default) and value == f.default:
            continue  # the field's own default (None where it is optional, "" for no isolation group)
        problem = value_problem(declared, value)
        if problem is not None:
            return f"{f.name}{problem}"
    return None
