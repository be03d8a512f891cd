"""Text that crosses a trust line: reasons that must say something, and values shown on a terminal or in Markdown,
escaped for where they land (the SVG escapes its own with ``html.escape``). Pure Python."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

# Characters that print as nothing though Unicode does not class them as spaces or format characters.
_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible(reason: Any) -> bool:
    """Whether ``reason`` is a string with at least one character that prints: spaces of any kind (no-break, em,
    ideographic), zero-width and other format characters, control characters and blank-looking fillers do not."""
    if not isinstance(reason, str):
        return False
    return any(
        not ch.isspace()
        and unicodedata.category(ch) not in ("Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me")
        and ch not in _BLANK_LOOKING
        for ch in reason
    )


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def terminal(value: Any) -> str:
    """``value`` safe to print: control characters (escape sequences among them), bidirectional overrides and line
    separators are shown as ``\\xNN``/``\\uNNNN`` instead of acting on the terminal."""
    text = str(value)
    return _CONTROL.sub(
        lambda m: repr(m.group(0))[1:-1] if ord(m.group(0)) > 0xFF else f"\\x{ord(m.group(0)):02x}", text
    )


def one_line(value: Any) -> str:
    """``value`` on one line, for a terminal: newlines shown as ``\\n``, other controls escaped."""
    return terminal(str(value).replace("\r", "\\r").replace("\n", "\\n"))


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]#!|<>~])")


def markdown(value: Any) -> str:
    """``value`` as literal Markdown text on one line: no heading, link, table cell break, HTML or new line can be
    forged from it."""
    text = one_line(value)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def few(names: Sequence[str], most: int = 3) -> str:
    """The first ``most`` of ``names``, comma-separated, and how many more there are: a message that lists what a
    fleet of hundreds holds stays one readable line."""
    shown = ", ".join(names[:most])
    return f"{shown} and {len(names) - most} more" if len(names) > most else shown


def count(n: int, noun: str) -> str:
    """``n`` of ``noun``, in the plural unless one: "1 instance", "3 GPUs"."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
