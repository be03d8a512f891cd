"""Small Markdown helpers for the generated pages and reports. Pure Python."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def cell(text: object) -> str:
    """``text`` as a table cell: a pipe would end the cell, a line break the row, and ``<name>`` outside code would be
    read as an HTML tag."""
    parts = str(text).replace("|", "\\|").replace("\n", " ").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))  # odd parts are code


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table's lines."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines.extend("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)
    return lines
