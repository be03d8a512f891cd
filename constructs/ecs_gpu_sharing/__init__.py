"""AWS CDK constructs for running many models on shared NVIDIA GPUs (MPS) with Amazon ECS.

Three layers: ``ecs_gpu_sharing.core`` (pure Python: catalog, budgets, task shapes, the planner, the fit rules,
the fleet file; no jsii, no boto3), ``ecs_gpu_sharing.cdk`` (the constructs), ``ecs_gpu_sharing.operations``
(boto3, for the CLI). The constructs are loaded on first use, so ``ecs-gpu-sharing plan`` starts fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core.allocation import AllocationNote, Evidence
from .core.errors import (
    AmiError,
    AwsOperationError,
    BudgetError,
    CapacityError,
    CatalogError,
    FleetSpecError,
    GpuSharingError,
    PlanError,
    ServiceError,
    TaskDefinitionError,
)
from .core.mps import MAX_CLIENTS_PER_GPU, MpsShare
from .core.quotas import RESOURCES_PER_STACK, STACK_RESOURCE_HEADROOM

if TYPE_CHECKING:
    from .cdk.ami import GpuAmi
    from .cdk.capacity import GpuCapacity
    from .cdk.dashboard import GpuFleetDashboard
    from .cdk.fleet_plan import FleetPlan
    from .cdk.limits import AwsLimitsChecks
    from .cdk.managed_capacity import GpuManagedInstancesCapacity
    from .cdk.service import SharedGpuManagedInstancesService, SharedGpuService, placement_strategies
    from .cdk.task_definition import SharedGpuManagedInstancesTaskDefinition, SharedGpuTaskDefinition
    from .cdk.telemetry import GpuTelemetry
    from .regions import known_regions

# Public name -> module of ecs_gpu_sharing.cdk that defines it; CDK-backed names are imported lazily.
_LAZY: dict[str, str] = {
    "SharedGpuTaskDefinition": "task_definition",
    "SharedGpuManagedInstancesTaskDefinition": "task_definition",
    "GpuAmi": "ami",
    "GpuCapacity": "capacity",
    "GpuManagedInstancesCapacity": "managed_capacity",
    "SharedGpuService": "service",
    "SharedGpuManagedInstancesService": "service",
    "placement_strategies": "service",
    "FleetPlan": "fleet_plan",
    "AwsLimitsChecks": "limits",
    "GpuTelemetry": "telemetry",
    "GpuFleetDashboard": "dashboard",
}

__all__ = [
    "MAX_CLIENTS_PER_GPU",
    "RESOURCES_PER_STACK",
    "STACK_RESOURCE_HEADROOM",
    "AllocationNote",
    "AmiError",
    "AwsLimitsChecks",
    "AwsOperationError",
    "BudgetError",
    "CapacityError",
    "CatalogError",
    "Evidence",
    "FleetPlan",
    "FleetSpecError",
    "GpuAmi",
    "GpuCapacity",
    "GpuFleetDashboard",
    "GpuManagedInstancesCapacity",
    "GpuSharingError",
    "GpuTelemetry",
    "MpsShare",
    "PlanError",
    "ServiceError",
    "SharedGpuManagedInstancesService",
    "SharedGpuManagedInstancesTaskDefinition",
    "SharedGpuService",
    "SharedGpuTaskDefinition",
    "TaskDefinitionError",
    "known_regions",
    "placement_strategies",
]


def __getattr__(name: str) -> Any:
    if name == "known_regions":  # botocore's endpoint data, loaded on first use
        return import_module(".regions", __name__).known_regions
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ecs_gpu_sharing' has no attribute {name!r}")
    return getattr(import_module(f".cdk.{module}", __name__), name)
