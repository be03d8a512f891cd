"""NVIDIA MPS budgets and limits, as ECS GPU sharing expresses them. Pure Python: no jsii.

Facts (DESIGN.md §2-3): a container declares the GPU memory it may pin (MiB, an integer >= 1) and an
optional compute cap (percent, 1..100). The cap is a ceiling, not a reservation, so caps on one GPU
may add up to more than 100. NVIDIA MPS accepts at most 48 client CUDA contexts per GPU (Volta and
newer); ECS does not count clients, only memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import BudgetError

MAX_CLIENTS_PER_GPU = 48
"""NVIDIA MPS: client CUDA contexts per GPU (Volta and newer). ECS does not enforce it."""

_TOKEN_HINT = (
    "budgets must be literal integers known at synth; a CDK token (a CfnParameter value, say) "
    "cannot be checked against the GPU, so it is refused"
)


def _looks_like_token(value: Any) -> bool:
    # CDK encodes number tokens as huge negative doubles and string tokens as "${Token[...]}".
    if isinstance(value, float):
        return not math.isfinite(value) or abs(value) > 1e200
    return isinstance(value, str) and "${Token[" in value


def require_int(name: str, value: Any, *, low: int, high: int | None = None, owner: str = "MpsShare") -> int:
    """``value`` as an int in ``[low, high]``; bools, floats, strings and tokens are refused."""
    span = f"from {low} to {high}" if high is not None else f">= {low}"
    if _looks_like_token(value):
        raise BudgetError(f"{owner}: {name} is an unresolved token ({value!r}); {_TOKEN_HINT}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise BudgetError(
            f"{owner}: {name} must be an integer {span}, got {value!r} ({type(value).__name__}); "
            f"give a whole number such as {low if high is None else high}"
        )
    if value < low or (high is not None and value > high):
        raise BudgetError(f"{owner}: {name} must be an integer {span}, got {value}")
    return value


@dataclass(frozen=True)
class MpsShare:
    """The GPU budget of one container on a shared (MPS) GPU.

    ``memory_mib`` is the GPU memory ECS reserves for the container and MPS pins as its limit
    (``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT``); allocations past it fail with out-of-memory, CUDA's own
    included. ``max_compute_percent`` caps the container's share of the GPU's SMs
    (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``); it is not a reservation. Left out, there is no cap.
    """

    memory_mib: int
    max_compute_percent: int | None = None

    def __post_init__(self) -> None:
        require_int("memory_mib", self.memory_mib, low=1)
        if self.max_compute_percent is not None:
            require_int("max_compute_percent", self.max_compute_percent, low=1, high=100)

    def cfn_requirement(self) -> dict[str, Any]:
        """The CloudFormation ``ResourceRequirements`` entry for this share."""
        mps: dict[str, Any] = {"Memory": self.memory_mib}
        if self.max_compute_percent is not None:
            mps["MaxComputePercent"] = self.max_compute_percent
        return {"Type": "GPU", "SharingStrategy": {"NvidiaMps": mps}}

    def __str__(self) -> str:
        cap = f", compute <= {self.max_compute_percent}%" if self.max_compute_percent is not None else ""
        return f"MpsShare({self.memory_mib} MiB{cap})"
