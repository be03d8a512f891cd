"""``SharedGpuTaskDefinition``: an ECS task definition whose containers share a GPU through NVIDIA MPS."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ecs as ecs
from constructs import Construct, IValidation

from .errors import TaskDefinitionError
from .mps import MpsShare, require_int

# ECS GPU sharing runs on EC2 and ECS Managed Instances; never on Fargate or EXTERNAL (ECS Anywhere).
_ALLOWED_COMPATIBILITIES = {
    ecs.Compatibility.EC2: "EC2",
    ecs.Compatibility.MANAGED_INSTANCES: "MANAGED_INSTANCES",
    ecs.Compatibility.EC2_AND_MANAGED_INSTANCES: "EC2_AND_MANAGED_INSTANCES",
}

# aws-cdk-lib's synth-time template check uses a schema that predates SharingStrategy.
SCHEMA_RULES_PREDATING_MPS = ("CloudFormation-Validate::F3002", "CloudFormation-Validate::F3003")


def typed_sharing_strategy() -> bool:
    """Whether the installed aws-cdk-lib types ``SharingStrategy`` on ``CfnTaskDefinition`` (2.276.0 and later).

    Until it does, its bundled template schema rejects the property, and the task definition acknowledges
    exactly those two schema rules on its own resource. Once it does, no acknowledgment is added, so a
    schema complaint after an upgrade is seen rather than silently hidden.
    """
    params = inspect.signature(ecs.CfnTaskDefinition.ResourceRequirementProperty.__init__).parameters
    return "sharing_strategy" in params


class SharedGpuTaskDefinition(ecs.TaskDefinition):
    """An EC2 (or ECS Managed Instances) task definition whose containers may share one GPU through MPS.

    Add containers with :meth:`add_container`, giving GPU containers ``gpu=MpsShare(...)``. All MPS
    containers of one task land on the same GPU, so their memory must fit one GPU: the check runs at
    synth against ``gpu_memory_mib`` when given (usable MiB of one GPU), and against every GPU capacity
    the task definition is placed on. Containers can instead take whole GPUs with ``gpu_count``, but one
    task cannot mix the two.

    :param compatibility: EC2 by default; ECS Managed Instances is accepted. Fargate and EXTERNAL are
        refused, since ECS does not offer GPU sharing there.
    :param gpu_memory_mib: the usable memory of the GPU this task will run on, for a standalone check.
        A ``SharedGpuService`` checks the task against its capacity's GPUs in the fleet plan instead.
    :param kwargs: every other option of ``aws_ecs.TaskDefinition``.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        compatibility: ecs.Compatibility = ecs.Compatibility.EC2,
        gpu_memory_mib: int | None = None,
        **kwargs: Any,
    ) -> None:
        if compatibility not in _ALLOWED_COMPATIBILITIES:
            raise TaskDefinitionError(
                f"{scope.node.path}/{id_}: compatibility {compatibility.name} cannot run GPU sharing "
                f"(ECS offers MPS only on EC2 and ECS Managed Instances); use one of "
                f"{', '.join(_ALLOWED_COMPATIBILITIES.values())}"
            )
        owner = f"{scope.node.path}/{id_}"
        limit = None
        if gpu_memory_mib is not None:
            limit = require_int("gpu_memory_mib", gpu_memory_mib, low=1, owner=owner)
        task_cpu = _task_level_number("cpu", kwargs.get("cpu"), owner)
        task_memory = _task_level_number("memory_mib", kwargs.get("memory_mib"), owner)
        super().__init__(scope, id_, compatibility=compatibility, **kwargs)
        self._shares: list[tuple[str, MpsShare]] = []
        self._whole_gpu: list[tuple[str, int]] = []
        self._gpu_limit = limit
        self._task_cpu = task_cpu
        self._task_memory = task_memory
        self._container_cpu = 0
        self._container_memory = 0
        self._acknowledged = False
        self.node.add_validation(_SharedGpuRules(self))

    def add_container(self, id: str, *, gpu: MpsShare | None = None, **options: Any) -> ecs.ContainerDefinition:
        """Adds a container; ``gpu=MpsShare(...)`` gives it a budget on a shared GPU.

        Takes every option of ``aws_ecs.TaskDefinition.add_container``. ``gpu`` and ``gpu_count``
        exclude each other.
        """
        where = f"{self.node.path}/{id}"
        if gpu is not None and not isinstance(gpu, MpsShare):
            raise TaskDefinitionError(
                f"{where}: gpu must be an MpsShare, got {gpu!r}; write gpu=MpsShare(memory_mib=..., "
                "max_compute_percent=...)"
            )
        gpu_count = options.get("gpu_count")
        if gpu is not None and gpu_count is not None:
            raise TaskDefinitionError(
                f"{where}: a container cannot ask for whole GPUs (gpu_count={gpu_count}) and an "
                f"{gpu} at once; drop gpu_count to share a GPU, or drop gpu to hold whole GPUs"
            )
        container = super().add_container(id, **options)
        # What ECS reserves on the host when the task sets no task-level figure.
        self._container_cpu += int(options.get("cpu") or 0)
        self._container_memory += int(options.get("memory_reservation_mib") or options.get("memory_limit_mib") or 0)
        if gpu is not None:
            # aws-ecs only ever appends to the container list, so this index stays the container's own.
            index = len(self._containers) - 1
            resource = self.node.default_child
            assert isinstance(resource, ecs.CfnTaskDefinition)
            resource.add_property_override(
                f"ContainerDefinitions.{index}.ResourceRequirements", [gpu.cfn_requirement()]
            )
            self._shares.append((id, gpu))
            self._acknowledge_schema(resource)
        elif gpu_count is not None:
            self._whole_gpu.append((id, gpu_count))
        return container

    def _acknowledge_schema(self, resource: ecs.CfnTaskDefinition) -> None:
        if self._acknowledged or typed_sharing_strategy():
            return
        reason = (
            "aws-cdk-lib's bundled CloudFormation schema predates ResourceRequirements.SharingStrategy "
            "(ECS GPU sharing, 2026-10-27); cfn-lint's current schema accepts it"
        )
        cdk.Validations.of(resource).acknowledge(
            *(cdk.Acknowledgment(id=rule, reason=reason) for rule in SCHEMA_RULES_PREDATING_MPS)
        )
        self._acknowledged = True

    @property
    def mps_shares(self) -> Sequence[tuple[str, MpsShare]]:
        """The MPS containers, as (container name, budget), in the order they were added."""
        return tuple(self._shares)

    @property
    def mps_memory_mib(self) -> int:
        """GPU memory one task needs on its one GPU: the sum of its MPS containers' budgets."""
        return sum(share.memory_mib for _, share in self._shares)

    @property
    def whole_gpu_count(self) -> int:
        """Whole GPUs one task holds (containers with ``gpu_count``)."""
        return sum(count for _, count in self._whole_gpu)

    @property
    def task_cpu_units(self) -> int:
        """CPU units ECS reserves on the host for one task: the task-level figure, else its containers' sum."""
        return self._task_cpu if self._task_cpu is not None else self._container_cpu

    @property
    def task_memory_mib(self) -> int:
        """Host memory ECS reserves for one task: the task-level figure, else its containers' reservations."""
        return self._task_memory if self._task_memory is not None else self._container_memory

    def gpu_rule_violations(self) -> list[str]:
        """Every broken GPU rule of this task definition, as messages (empty when it is sound)."""
        problems = []
        if self._shares and self._whole_gpu:
            problems.append(
                "GPU containers mix whole GPUs ("
                + ", ".join(f"{name}: gpu_count={n}" for name, n in self._whole_gpu)
                + ") and MPS shares ("
                + ", ".join(f"{name}: {share}" for name, share in self._shares)
                + "); ECS needs one option for all GPU containers of a task: give every GPU container "
                "an MpsShare, or move the whole-GPU containers to their own task definition"
            )
        need = self.mps_memory_mib
        usable = self._gpu_limit
        if self._shares and usable is not None and need > usable:
            parts = " + ".join(f"{name} {share.memory_mib}" for name, share in self._shares)
            problems.append(
                f"the MPS containers of one task share one GPU, but their memory adds up to {need} MiB "
                f"({parts}), more than the {usable} MiB usable on one GPU (gpu_memory_mib); lower the "
                "budgets, split the containers into separate task definitions, or use a larger GPU"
            )
        return problems


def _task_level_number(name: str, value: Any, owner: str) -> int | None:
    # Task-level cpu/memory are strings in aws-cdk-lib ("1024"); the plan needs their number.
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        raise TaskDefinitionError(
            f"{owner}: task-level {name} must be a whole number as a string, such as '1024', got {value!r}; "
            "a token cannot be planned, so give the literal value"
        ) from None


@jsii.implements(IValidation)
class _SharedGpuRules:
    def __init__(self, task_definition: SharedGpuTaskDefinition) -> None:
        self._task_definition = task_definition

    def validate(self) -> list[str]:
        return self._task_definition.gpu_rule_violations()
