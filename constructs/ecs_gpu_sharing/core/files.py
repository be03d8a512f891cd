"""Writing output files: checked before any work, written whole (beside, then renamed), never half. Pure Python."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import GpuSharingError


def check_output_path(path: str | Path, *, what: str, option: str) -> Path:
    """``path`` as a file this command may write; refuses a folder, or a folder that does not exist, before any
    work is done. ``option`` names the command-line option for the message."""
    p = Path(path)
    if p.is_dir():
        raise GpuSharingError(f"{option} {p}: is a folder; give the path of the {what} file to write")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise GpuSharingError(f"{option} {p}: the folder {parent} does not exist; create it or choose another path")
    if not os.access(parent, os.W_OK):
        raise GpuSharingError(f"{option} {p}: the folder {parent} is not writable; choose another path")
    return p


def write_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to a file beside ``path`` and renames it over ``path``: readers see the old or the new file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
