"""Editing a fleet file in place, line by line, so its comments and layout stay. Pure Python.

Only two things are written: a service's ``gpu_budget_mib``, and the evidence keys of its
``[service.<name>.allocation]`` table, or, for a service without one, of its ``[service.<name>.evidence]`` table
(created after the service's table when it is missing). The edited text is parsed again, and refused unless exactly
those values changed.
"""

from __future__ import annotations

import datetime
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import FleetSpecError

_HEADER = re.compile(r"^\s*\[\[?\s*(?P<path>[^\]]+?)\s*\]\]?\s*(#.*)?$")


@dataclass(frozen=True)
class Change:
    """What to write for one service: its budget and, when it has an allocation table, its evidence."""

    gpu_budget_mib: int
    evidence: Mapping[str, Any]  # measured_peak_mib, measured_p99_mib, measured_on, measured_image, evidence_source


def _path(header: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"').strip("'") for part in header.split("."))


def _sections(lines: list[str]) -> list[tuple[tuple[str, ...], int, int]]:
    """(table path, first line after the header, end line) of every table."""
    heads = [(i, _path(m["path"])) for i, line in enumerate(lines) if (m := _HEADER.match(line))]
    out = []
    for k, (i, path) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        out.append((path, i + 1, end))
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date):
        return value.isoformat()  # a TOML local date
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _set(lines: list[str], start: int, end: int, key: str, value: Any) -> int:
    """Sets ``key`` in the table spanning ``lines[start:end]``, keeping a line's comment; returns lines added."""
    pattern = re.compile(rf"^(\s*{re.escape(key)}\s*=\s*)([^#]*?)(\s*(#.*)?)$")
    for i in range(start, end):
        match = pattern.match(lines[i])
        if match:
            lines[i] = f"{match.group(1)}{_toml_value(value)}{match.group(3)}"
            return 0
    # Insert after the table's last key line (before trailing blank lines and comments).
    at = start
    for i in range(start, end):
        if lines[i].strip() and not lines[i].lstrip().startswith("#"):
            at = i + 1
    lines.insert(at, f"{key} = {_toml_value(value)}")
    return 1


def apply(text: str, changes: Mapping[str, Change], *, source: str = "<fleet>") -> tuple[str, list[str]]:
    """The fleet file's text with ``changes`` written, and notes on what could not be written (evidence of a
    service without an allocation table). Refuses a result that changed anything else."""
    lines = text.split("\n")
    parsed = tomllib.loads(text)
    notes = []
    recorded: dict[str, str] = {}  # service -> the table its evidence went into
    for service, change in changes.items():
        sections = {path: (s, e) for path, s, e in _sections(lines)}
        if ("service", service) not in sections:
            raise FleetSpecError(f"{source}: no [service.{service}] table to write the budget into")
        start, end = sections[("service", service)]
        _set(lines, start, end, "gpu_budget_mib", change.gpu_budget_mib)
        sections = {path: (s, e) for path, s, e in _sections(lines)}
        table = "allocation"
        if ("service", service, "allocation") not in sections and "allocation" in parsed["service"][service]:
            notes.append(
                f"service.{service}: its allocation is written as dotted keys, not a [service.{service}.allocation] "
                "table, so the evidence is not recorded; write the note as a table of its own and run again"
            )
            continue
        if ("service", service, "allocation") not in sections:
            table = "evidence"
            if ("service", service, "evidence") not in sections:
                _, end = sections[("service", service)]
                while end > 0 and not lines[end - 1].strip():
                    end -= 1  # after the service's last line, before the blank lines that end its table
                lines[end:end] = ["", f"[service.{service}.evidence]"]
            notes.append(
                f"service.{service}: the evidence is recorded in [service.{service}.evidence]; what evaluate cannot "
                f"measure (the model's residency, its peak working memory, what a restart does to it) is left unset: "
                f"write them in a [service.{service}.allocation] table and move the evidence there"
            )
        recorded[service] = table
        for key, value in change.evidence.items():
            if value is None:
                continue
            start, end = {path: (s, e) for path, s, e in _sections(lines)}[("service", service, table)]
            _set(lines, start, end, key, value)
    edited = "\n".join(lines)
    _verify(text, edited, changes, recorded, source)
    return edited, notes


def _verify(before: str, after: str, changes: Mapping[str, Change], recorded: Mapping[str, str], source: str) -> None:
    """The edit changed exactly the budgets and evidence asked for: anything else is a bug, and nothing is written."""
    try:
        new = tomllib.loads(after)
    except tomllib.TOMLDecodeError as error:
        raise FleetSpecError(
            f"{source}: the edited fleet file would not be valid TOML ({error}); nothing written"
        ) from None
    expected = tomllib.loads(before)
    for service, change in changes.items():
        table = expected["service"][service]
        table["gpu_budget_mib"] = change.gpu_budget_mib
        if service in recorded:
            written = {k: v for k, v in change.evidence.items() if v is not None}
            table.setdefault(recorded[service], {}).update(written)
    if new != expected:
        raise FleetSpecError(f"{source}: editing the fleet file would change more than the budgets; nothing written")
