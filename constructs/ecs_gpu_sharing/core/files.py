"""Writing output files: checked before any work, written whole (beside, then renamed), never half. Pure Python."""

from __future__ import annotations

import os
import stat
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
