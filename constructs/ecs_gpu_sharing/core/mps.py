"""NVIDIA MPS budgets and limits, as ECS GPU sharing expresses them. Pure Python: no jsii.

Facts (ECS API reference, ``ResourceRequirement.sharingStrategy.nvidiaMps``): a container declares the GPU
memory it may pin (MiB, an integer >= 1) and an optional compute cap (percent, 1..100). The cap is a ceiling,
not a reservation, so caps on one GPU may add up to more than 100. NVIDIA's MPS documentation: at most 48
client CUDA contexts per GPU (Volta and newer, CUDA 13.0 and earlier); ECS counts memory, not clients. Measured on
an H200 with driver 580.159.04 (scripts/mps_facts.py, docs/gpu-measured.md): the 49th client's context is refused
(CUDA error 808, CUDA_ERROR_MPS_MAX_CLIENTS_REACHED).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import BudgetError, GpuSharingError
from .tokens import describe, is_token

MAX_CLIENTS_PER_GPU = 48
"""NVIDIA MPS: client CUDA contexts per GPU (Volta and newer). ECS does not enforce it."""

MEMORY_FRACTION_FLAG = "--gpu-memory-utilization"
"""vLLM's flag that sizes its GPU memory as a fraction of the GPU's total: it asks for the flag's value times the total
torch reports (``vllm/v1/worker/gpu_worker.py``: requested_memory = total_memory * gpu_memory_utilization, refused at
startup when the free memory is less); under MPS that total is the whole GPU, not the client's limit (measured:
docs/gpu-measured.md)."""

_FRACTION = re.compile(r"(?<![\w-])--gpu[-_]memory[-_]utilization(?:=|\s+)[\"']?([0-9]*\.?[0-9]+)(?![\w.])")


def memory_fraction(words: Any) -> tuple[str, float] | None:
    """The fraction of GPU memory a container's entry point and command ask for (flag, value), however written:
    ``--flag value``, ``--flag=value``, with underscores (vLLM's parser takes both), or inside one shell string
    (``sh -c "vllm serve ... --flag 0.9"``). Parts built at deploy time are not read; ``None`` when none names it."""
    if not isinstance(words, (list, tuple)):
        return None
    found = _FRACTION.search(" ".join(w for w in words if isinstance(w, str)))
    if found is None:
        return None
    fraction = float(found.group(1))
    return (MEMORY_FRACTION_FLAG, fraction) if 0 < fraction <= 1 else None


GPU_ENVIRONMENT = re.compile(r"^(NVIDIA_.*|CUDA_VISIBLE_DEVICES|CUDA_MPS_.*)$")
"""Environment names that steer which GPU a container sees or how MPS limits it: ECS sets them for MPS containers
(NVIDIA_VISIBLE_DEVICES, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), so a container's own
value would fight the budget."""

GPU_ENVIRONMENT_REASON = (
    "ECS sets NVIDIA_VISIBLE_DEVICES and the MPS limits (CUDA_MPS_*) for MPS containers from their budget; remove it"
)

MPS_CAPABILITY_ATTRIBUTE = "ecs.capability.gpu-sharing-mps"
"""The instance attribute the ECS agent advertises where GPU sharing is set up (a static setup check)."""

MPS_HOSTS_EXPRESSION = f"attribute:{MPS_CAPABILITY_ATTRIBUTE} exists"
"""The ECS placement expression (``memberOf``) that selects hosts advertising GPU sharing."""


def require_int(
    name: str,
    value: Any,
    *,
    low: int,
    high: int | None = None,
    owner: str = "MpsShare",
    error: type[GpuSharingError] = BudgetError,
    literal_because: str = "the fit plan checks it at synth",
) -> int:
    """``value`` as an int in ``[low, high]``; bools, floats, strings and CDK tokens are refused."""
    span = f"from {low} to {high}" if high is not None else f">= {low}"
    if is_token(value):
        raise error(f"{owner}: {name} is {describe(value)}; {literal_because}, so give a literal integer {span}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(
            f"{owner}: {name} must be an integer {span}, got {value!r} ({type(value).__name__}); "
            f"give a whole number such as {low if high is None else high}"
        )
    if value < low or (high is not None and value > high):
        raise error(f"{owner}: {name} must be an integer {span}, got {value}; give a value in that range")
    return value


@dataclass(frozen=True)
class MpsShare:
    """The GPU budget of one container on a shared (MPS) GPU.

    :param gpu_budget_mib: the GPU memory, in MiB, ECS reserves for the container and MPS pins as its limit
        (``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``); allocations past it fail with out-of-memory, CUDA's own included.
    :param max_compute_percent: a cap, in percent from 1 to 100, on the container's share of the GPU's SMs
        (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``); it is not a reservation. Without it (the default), no cap.
    """

    gpu_budget_mib: int
    max_compute_percent: int | None = None

    def __post_init__(self) -> None:
        because = "a GPU budget is checked against the GPU at synth"
        require_int("gpu_budget_mib", self.gpu_budget_mib, low=1, literal_because=because)
        if self.max_compute_percent is not None:
            require_int("max_compute_percent", self.max_compute_percent, low=1, high=100, literal_because=because)

    def cfn_requirement(self) -> dict[str, Any]:
        """The CloudFormation ``ResourceRequirements`` entry for this share."""
        mps: dict[str, Any] = {"Memory": self.gpu_budget_mib}
        if self.max_compute_percent is not None:
            mps["MaxComputePercent"] = self.max_compute_percent
        return {"Type": "GPU", "SharingStrategy": {"NvidiaMps": mps}}

    def __str__(self) -> str:
        cap = f", compute <= {self.max_compute_percent}%" if self.max_compute_percent is not None else ""
        return f"MpsShare({self.gpu_budget_mib} MiB{cap})"
