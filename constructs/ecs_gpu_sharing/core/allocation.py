"""Allocation notes: why a service has its GPU budget, before it shares a GPU. Pure Python.

A note answers the four questions of DESIGN.md section 8 for one service: what must stay on the GPU (model
residency), the peak working memory over its request mix (KV cache, batches), the compute share its latency target
needs, and how it depends on the shared service (what happens when the MPS server or the host restarts; with whom
it may share: its isolation group). Evidence is what was measured, on which image, when; ``evaluate --write``
fills it in from the fleet's telemetry.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import overload

from .errors import GpuSharingError
from .file_key import NAME, field_problem, inline_keys, key
from .text import visible

EVIDENCE_SOURCES = ("evaluate", "load-test", "profiling")


@dataclass(frozen=True)
class Evidence:
    """A measurement of the service's GPU memory under its real request mix. Its keys (in an allocation table, or
    a service's own evidence table) are declared on its fields."""

    peak_mib: int = key(
        int, False, "evidence: the highest GPU memory measured", name="measured_peak_mib", low=0, high=1048576
    )
    measured_on: datetime.date = key(datetime.date, False, "evidence: the day it was measured (a TOML date)")
    source: str = key(
        str,
        False,
        "evidence: " + ", ".join(EVIDENCE_SOURCES),
        name="evidence_source",
        pattern=re.compile("^(" + "|".join(EVIDENCE_SOURCES) + ")$", re.ASCII),
        example="load-test",
        default="evaluate",
    )
    p99_mib: int | None = key(
        int,
        False,
        "evidence: the 99th percentile of GPU memory measured",
        name="measured_p99_mib",
        low=0,
        high=1048576,
        field_default=None,
    )
    image: str | None = key(
        str,
        False,
        "evidence: the image it was measured on, name@sha256:digest",
        name="measured_image",
        pattern=re.compile(r"^\S+@sha256:[0-9a-f]{64}$", re.ASCII),
        example="my-registry/embedder@sha256:<64 hex digits>",
        field_default=None,
    )

    def __post_init__(self) -> None:
        _refuse_malformed(self)


def _refuse_malformed(spec: Evidence | AllocationNote) -> None:
    """Refuses a note or evidence built in code whose field its fleet-file key would refuse (the type, range or
    pattern declared on the field), naming the class and the field."""
    problem = field_problem(spec)
    if problem is not None:
        raise GpuSharingError(f"{type(spec).__name__}: {problem}")


@dataclass(frozen=True)
class AllocationNote:
    """The four questions, answered for one service. ``need_mib`` is what its budget must cover. Each field is a key
    of a service's allocation table in the fleet file, described there (docs/fleet-file.md).

    :param evidence: what was measured (``Evidence``); without it, the budget is a guess (a warning).
    """

    residency_mib: int = key(
        int,
        True,
        "GPU memory the process keeps resident: weights, state and its CUDA context (514 MiB on an H200)",
        low=0,
        high=1048576,
    )
    peak_working_mib: int = key(
        int,
        True,
        "peak working GPU memory over the request mix (KV cache, batches, activations)",
        low=0,
        high=1048576,
    )
    shared_failure: str = key(
        str,
        True,
        "what happens to the service when the MPS server or the host restarts, or another client of its GPU faults "
        "(which ends its CUDA context), and what it does then (at most 1,000 characters)",
        pattern=re.compile(r"\s*\S.{0,999}", re.S),
        example="requests fail until ECS restarts the task; callers retry",
    )
    compute_percent: int | None = key(
        int, False, "the compute share it needs to meet its latency target", low=1, high=100, field_default=None
    )
    isolation_group: str = key(
        str,
        False,
        "services of different groups never share a GPU; none: the common group",
        pattern=NAME,
        example="tenant-a",
        default="",
        field_default="",
    )
    isolate_host: bool = key(bool, False, "with isolation_group: nor a host", default=False, field_default=False)
    evidence: Evidence | None = inline_keys(Evidence, field_default=None)  # its keys sit in the note's table

    def __post_init__(self) -> None:
        if isinstance(self.shared_failure, str) and not visible(self.shared_failure):
            raise GpuSharingError(
                "AllocationNote: shared_failure must say what happens when the MPS server or the host restarts "
                "(for example 'requests fail until the task restarts; clients retry')"
            )
        _refuse_malformed(self)
        if self.isolate_host and not self.isolation_group:
            raise GpuSharingError("AllocationNote: isolate_host needs an isolation_group to keep apart")

    @property
    def need_mib(self) -> int:
        return self.residency_mib + self.peak_working_mib


def digest_of(image: str | None) -> str | None:
    """The sha256 digest an image reference pins, or ``None``."""
    if image is None or "@sha256:" not in image:
        return None
    return image.rsplit("@", 1)[1]


@overload
def headroom(budget_mib: int, used_mib: int) -> int: ...
@overload
def headroom(budget_mib: int, used_mib: None) -> None: ...
def headroom(budget_mib: int, used_mib: int | None) -> int | None:
    """MiB of a budget left above what was used (negative: over)."""
    return None if used_mib is None else budget_mib - used_mib
