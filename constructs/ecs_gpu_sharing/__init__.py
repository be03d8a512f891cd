"""AWS CDK constructs for running many models on shared NVIDIA GPUs (MPS) with Amazon ECS.

The pure core (``catalog``, ``errors``, budgets, planner, fleet spec) imports no jsii; the CDK
constructs are loaded on first use, so ``ecs-gpu-sharing plan`` starts fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import (
    AmiError,
    AwsOperationError,
    BudgetError,
    CapacityError,
    CatalogError,
    FleetSpecError,
    GpuSharingError,
    PlanError,
    TaskDefinitionError,
)
from .mps import MAX_CLIENTS_PER_GPU, MpsShare

if TYPE_CHECKING:
    from .ami import GpuAmi
    from .capacity import GpuCapacity
    from .fleet_plan import FleetPlan
    from .service import SharedGpuService
    from .task_definition import SharedGpuTaskDefinition

# Public name -> module that defines it; CDK-backed names are imported lazily.
_LAZY: dict[str, str] = {
    "SharedGpuTaskDefinition": "task_definition",
    "GpuAmi": "ami",
    "GpuCapacity": "capacity",
    "SharedGpuService": "service",
    "FleetPlan": "fleet_plan",
}

__all__ = [
    "MAX_CLIENTS_PER_GPU",
    "AmiError",
    "AwsOperationError",
    "BudgetError",
    "CapacityError",
    "CatalogError",
    "FleetPlan",
    "FleetSpecError",
    "GpuAmi",
    "GpuCapacity",
    "GpuSharingError",
    "MpsShare",
    "PlanError",
    "SharedGpuService",
    "SharedGpuTaskDefinition",
    "TaskDefinitionError",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ecs_gpu_sharing' has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)
