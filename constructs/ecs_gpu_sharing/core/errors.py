"""The library's exceptions.

Every error is a ``ValueError`` so that callers who do not care about the detail can catch one
type; messages read "what went wrong, the value seen, what to do" and name the construct path
where there is one.
"""

from __future__ import annotations


class GpuSharingError(ValueError):
    """Base class of every error this library raises on bad input."""


class CatalogError(GpuSharingError):
    """An instance type is unknown to the GPU catalog, or cannot be used for GPU sharing."""


class BudgetError(GpuSharingError):
    """A GPU budget (MPS memory or compute cap) is out of range."""


class AmiError(GpuSharingError):
    """An AMI release or pin is malformed or below the floor for GPU sharing."""


class CapacityError(GpuSharingError):
    """A GPU capacity is configured in a way that cannot work."""


class TaskDefinitionError(GpuSharingError):
    """A shared-GPU task definition is configured in a way ECS would refuse."""


class ServiceError(GpuSharingError):
    """A service is configured in a way that cannot be planned or run (a count, a name, its capacity)."""


class FleetSpecError(GpuSharingError):
    """A fleet file is malformed: unknown key, wrong type, or a missing reference."""


class PlanError(GpuSharingError):
    """A fleet does not fit its capacity."""


class AwsOperationError(GpuSharingError):
    """An AWS call made by the operations commands failed; the message is one readable line."""
