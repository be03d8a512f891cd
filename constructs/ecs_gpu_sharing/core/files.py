"""Writing output files: checked before any work, written whole (beside, then renamed), never half. Pure Python."""

from __future__ import annotations

import contextlib
import json
import math
import operator
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .errors import GpuSharingError


def check_output_path(path: str | Path, *, what: str, option: str, inputs: Sequence[str | Path | None] = ()) -> Path:
    """``path`` as a file this command may write; refuses, before any work is done, a folder, a folder that does not
    exist, a target that is not a regular file (a device, a pipe, a socket: replacing it would break what uses it), and
    one of the command's ``inputs`` (the fleet or prices file it reads). ``option`` names the command-line option."""
    p = Path(path)
    if p.is_dir():
        raise GpuSharingError(f"{option} {p}: is a folder; give the path of the {what} file to write")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise GpuSharingError(f"{option} {p}: the folder {parent} does not exist; create it or choose another path")
    if not os.access(parent, os.W_OK):
        raise GpuSharingError(f"{option} {p}: the folder {parent} is not writable; choose another path")
    if p.exists() and not p.is_file():
        raise GpuSharingError(f"{option} {p}: not a regular file (a device, pipe or socket); choose another path")
    for given in inputs:
        if given is not None and Path(given).exists() and p.exists() and os.path.samefile(p, given):
            raise GpuSharingError(f"{option} {p}: is the file this command reads ({given}); choose another path")
    return p


_TEMP_SUFFIX = ".ecs-gpu-sharing-tmp"


def write_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to a file beside ``path`` and renames it over ``path``: readers see the old or the new file.

    A symbolic link is written through (its target is replaced, the link stays); the file keeps its mode, and a new
    file gets the mode the umask allows (as ``open`` would give it). A temporary file a killed earlier write left
    behind is removed. A place that cannot be written is one ``GpuSharingError`` line."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    except OSError as error:
        raise GpuSharingError(f"{path}: cannot write it ({error.strerror})") from None
    for stale in target.parent.glob(f".{target.name}.*{_TEMP_SUFFIX}"):
        stale.unlink(missing_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=_TEMP_SUFFIX)
    except OSError as error:
        raise GpuSharingError(f"{path}: cannot write it ({error.strerror}); choose another place") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise GpuSharingError(f"{path}: cannot write it ({error.strerror})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


MAX_INPUT_BYTES = 64 * 2**20
"""The most an input file (a plan JSON, prices, a layout, a catalog) may hold: far above any real one, so a device or a
runaway file is refused before it is read into memory."""


def read_input(path: str | Path, *, what: str, option: str = "", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """An input file's text: a regular file (a link to one is one) of at most ``max_bytes``, in UTF-8. A pipe, socket
    or device (``/dev/zero``) would block or fill the memory; each is one ``GpuSharingError`` line naming ``option``
    and what to give instead."""
    p = Path(path)
    where = f"{option} {p}" if option else str(p)
    try:
        status = p.stat()
        if stat.S_ISDIR(status.st_mode):
            raise GpuSharingError(f"{where}: is a folder; give the path of the {what} file")
        if not stat.S_ISREG(status.st_mode):
            raise GpuSharingError(f"{where}: not a regular file (a pipe, socket or device); give the {what} file")
        if status.st_size > max_bytes:
            raise GpuSharingError(
                f"{where}: {status.st_size} bytes, more than a {what} file may hold ({max_bytes // 2**20} MiB)"
            )
        with p.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise GpuSharingError(f"{where}: no such file; check the path of the {what} file") from None
    except OSError as error:
        raise GpuSharingError(f"{where}: cannot read the {what} file ({error.strerror})") from None
    if len(data) > max_bytes:
        raise GpuSharingError(f"{where}: more than a {what} file may hold ({max_bytes // 2**20} MiB)")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise GpuSharingError(f"{where}: not UTF-8 text (byte {error.start}); give the {what} file") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def parse_json(text: str, *, where: str, what: str) -> Any:
    """JSON with finite numbers only: ``Infinity``, ``NaN`` and ``1e400`` (which Python reads as infinity) are one
    ``GpuSharingError`` line, as is nesting deep enough to exhaust the parser."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as error:
        raise GpuSharingError(f"{where}: not JSON ({error.msg}, line {error.lineno}); give the {what}") from None
    except ValueError as error:
        raise GpuSharingError(f"{where}: {error}; give the {what} as written") from None
    except RecursionError:
        raise GpuSharingError(f"{where}: nested too deep to be a {what}") from None


def read_json(path: str | Path, *, what: str, option: str = "", max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """``read_input`` then ``parse_json``."""
    where = f"{option} {path}" if option else str(path)
    return parse_json(read_input(path, what=what, option=option, max_bytes=max_bytes), where=where, what=what)


class _Unusual(Exception):
    """A value json_text leaves to the json module (a key that is not a string, a type it does not know)."""


def _part_names(kind: type) -> tuple[str, ...] | None:
    """The attributes a value of ``kind`` is written as, in order, where its class names them (``json_names``: the plan
    document's parts, ``core.plan_document``); None for any other type."""
    names = getattr(kind, "json_names", None)
    return names() if callable(names) else None


def _part_reader(kind: type) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]] | None:
    """A part's attribute names and a function that reads their values at once (``operator.attrgetter``, one call in
    C, not one a name), for ``json_text``; None for a type that is not a part."""
    names = _part_names(kind)
    if names is None:
        return None
    if len(names) > 1:
        return names, operator.attrgetter(*names)
    return names, lambda value: tuple(getattr(value, name) for name in names)  # attrgetter of one gives no tuple


def _part_object(value: Any) -> dict[str, Any]:
    """json.dumps's ``default`` for a part: its attributes, as a dict; any other type refused in json's words."""
    names = _part_names(type(value))
    if names is None:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    return {name: getattr(value, name) for name in names}


class WrittenParts:
    """Parts' JSON texts kept from one ``json_text`` call for the next: per indent step, by the part's identity and the
    indent it stands at; each part held with its text, so its id stays its own. The ``plan`` command writes a plan's
    hosts while ECS's placement is still being replayed beside it, and the document's text takes them from here
    (``cli``)."""

    def __init__(self) -> None:
        self.texts: dict[int, dict[tuple[int, str], tuple[Any, str]]] = {}


def json_text(doc: Any, indent: int, *, written: WrittenParts | None = None) -> str:
    """``json.dumps(doc, indent=indent)``, character for character, in less than half its time on a plan document.

    With an indent the json module's encoder is its pure-Python one, a generator per level; a plan of 100,000 tasks
    is a megabyte of JSON, and writing it took a tenth of the whole ``plan --json`` command (docs/planning.md). Strings
    are escaped by the module's own C function; a key that is not a string, or a value of a type it does not handle
    here, hands the whole document to ``json.dumps``. A value whose class names its attributes (``json_names``: the
    plan document's parts) is written as the object of those attributes, as the dict its ``to_json`` makes would be,
    from the value itself: making those dicts first took as long as writing them (docs/planning.md). ``written``: the
    parts' texts kept from earlier calls (``keep_texts``), and kept from this one."""
    try:
        return _text(doc, indent, written or WrittenParts(), 0)
    except (_Unusual, RecursionError):  # a cycle: json.dumps says so in its own words
        return json.dumps(doc, indent=indent, default=_part_object)


def keep_texts(value: Any, indent: int, depth: int, written: WrittenParts) -> None:
    """The texts of the parts in ``value``, as ``json_text`` writes them where ``value`` is nested ``depth`` levels deep
    in a document, kept in ``written`` for that document's text. Where the json module would write the document
    instead, the texts kept so far stand (each is whole) and the rest is left to it."""
    with contextlib.suppress(_Unusual, RecursionError):
        _text(value, indent, written, depth)


def _text(doc: Any, indent: int, written: WrittenParts, depth: int) -> str:
    """``json_text``'s writing, ``depth`` levels deep; raises _Unusual where the json module must write ``doc``."""
    out: list[str] = []
    add = out.append
    step = " " * indent
    encode = json.encoder.encode_basestring_ascii
    parts: dict[type, Any] = {}  # per type met: its part reader, or None
    # A part's text at an indent, by the part's identity, the part held beside it: the parts are frozen, so an id
    # stands for one part while it is held. A plan's hosts repeat the same GPUs (``plan_report`` makes one part of GPUs
    # alike): 234 parts for 2,696 GPUs on held-out 1007 at 100,000 tasks on eight H100s a host.
    texts = written.texts.setdefault(indent, {})

    def scalar(value: Any) -> str:  # the json module's checks, in its order
        if isinstance(value, str):
            return encode(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float) and math.isfinite(value):
            return float.__repr__(value)
        raise _Unusual

    def walk(value: Any, at: str) -> None:
        kind = type(value)
        reader = parts.get(kind, parts)  # the dict itself: the type not met yet
        if reader is parts:
            reader = parts[kind] = _part_reader(kind)
        if reader is not None:  # a part: written as the object of its attributes, once at each indent
            key = (id(value), at)
            kept = texts.get(key)
            if kept is not None and kept[0] is value:
                text = kept[1]
            else:
                start = len(out)
                names, read = reader
                pairs(zip(names, read(value), strict=True) if names else None, at)
                text = "".join(out[start:])
                texts[key] = (value, text)
                del out[start:]
            add(text)
        elif isinstance(value, dict):
            pairs(value.items() if value else None, at)
        elif isinstance(value, (list, tuple)):
            if not value:
                add("[]")
                return
            inner = at + step
            first = "[\n" + inner
            for item in value:
                add(first)
                first = ",\n" + inner
                walk(item, inner)
            add("\n" + at + "]")
            return
        else:
            add(scalar(value))

    def pairs(items: Any, at: str) -> None:  # an object's keys and values, or None for an empty one
        if items is None:
            add("{}")
            return
        inner = at + step
        first = "{\n" + inner
        for key, item in items:
            if not isinstance(key, str):
                raise _Unusual
            kind = type(item)  # a name or a whole number (most of a plan) is written here, not by a call
            if kind is str:
                add(first + encode(key) + ": " + encode(item))
            elif kind is int:
                add(first + encode(key) + ": " + int.__repr__(item))
            else:
                add(first + encode(key) + ": ")
                walk(item, inner)
            first = ",\n" + inner
        add("\n" + at + "}")

    walk(doc, step * depth)
    return "".join(out)
