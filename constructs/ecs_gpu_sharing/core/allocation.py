"""Allocation notes: why a service has its GPU budget, before it shares a GPU. Pure Python.

A note answers the four questions of DESIGN.md section 8 for one service: what must stay on the GPU (model
residency), the peak working memory over its request mix (KV cache, batches), the compute share its latency target
needs, and how it depends on the shared service (what happens when the MPS server or the host restarts; with whom
it may share: its isolation group). Evidence is what was measured, on which image, when; ``evaluate --write``
fills it in from the fleet's telemetry.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from .errors import GpuSharingError
from .text import visible

EVIDENCE_SOURCES = ("evaluate", "load-test", "profiling")


@dataclass(frozen=True)
class Evidence:
    """A measurement of the service's GPU memory under its real request mix."""

    peak_mib: int  # the highest GPU memory seen
    measured_on: datetime.date
    source: str  # evaluate (telemetry), load-test or profiling
    p99_mib: int | None = None
    image: str | None = None  # the image it was measured on, name@sha256:digest


@dataclass(frozen=True)
class AllocationNote:
    """The four questions, answered for one service. ``need_mib`` is what its budget must cover."""

    residency_mib: int  # model weights and state that must stay on the GPU
    peak_working_mib: int  # peak working memory over the request mix (KV cache, batches, activations)
    shared_failure: str  # what happens to it when the MPS server or the host restarts, and what it does then
    compute_percent: int | None = None  # the compute share it needs to meet its latency target
    isolation_group: str = ""  # services of different groups never share a GPU ("" is the common group)
    isolate_host: bool = False  # nor a host
    evidence: Evidence | None = None

    def __post_init__(self) -> None:
        for name in ("residency_mib", "peak_working_mib"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise GpuSharingError(f"AllocationNote: {name} must be a whole number of MiB >= 0, got {value!r}")
        if not visible(self.shared_failure):
            raise GpuSharingError(
                "AllocationNote: shared_failure must say what happens when the MPS server or the host restarts "
                "(for example 'requests fail until the task restarts; clients retry')"
            )
        if self.compute_percent is not None and not (
            isinstance(self.compute_percent, int) and 1 <= self.compute_percent <= 100
        ):
            raise GpuSharingError(f"AllocationNote: compute_percent must be 1..100, got {self.compute_percent!r}")
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


def headroom(budget_mib: int, used_mib: int | None) -> int | None:
    """MiB of a budget left above what was used (negative: over)."""
    return None if used_mib is None else budget_mib - used_mib
