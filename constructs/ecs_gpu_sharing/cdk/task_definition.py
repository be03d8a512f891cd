"""Shared-GPU task definitions: ECS task definitions whose containers share a GPU through NVIDIA MPS.

``SharedGpuTaskDefinition`` is an ``aws_ecs.Ec2TaskDefinition``, so it goes wherever aws-cdk-lib takes an
EC2 task definition (``Ec2Service``, and aws-ecs-patterns' load-balanced, multiple-target-group and scheduled
EC2 patterns). ``SharedGpuManagedInstancesTaskDefinition`` is the same for ECS Managed Instances.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ecs as ecs
from constructs import Construct, IValidation

from ..core.container_guards import (
    MPS_ENVIRONMENT_IN_COMMAND,
    guard_violations,
    managed_instances_refusals,
    mps_variables_in_command,
    rule_of,
)
from ..core.errors import TaskDefinitionError
from ..core.hardening import (
    DOCKER_HUB_WITHOUT_CREDENTIALS,
    MANAGED_POLICY_ON_TASK_ROLE,
    MUTABLE_IMAGE_TAG,
    ROOT_USER,
    SECRET_IN_ENVIRONMENT,
    WRITABLE_ROOT_FILESYSTEM,
    docker_hub,
    docker_hub_message,
    is_root,
    managed_policies,
    managed_policy_message,
    mutable_tag,
    root_user_message,
    root_user_stated_message,
    secret_in_environment_message,
    secret_looking,
    writable_root_message,
)
from ..core.mps import GPU_ENVIRONMENT, GPU_ENVIRONMENT_REASON, MpsShare, require_int
from ..core.service_rules.containers import CONTAINER_NAME
from ..core.shape import TASK_TAKES_NO_GPU, mixed_gpu_options, no_gpu_taken
from ..core.task_rules import TASK_EXCEEDS_GPU_MEMORY, gpu_memory_problem
from ..core.tenancy import SHARED_TASK_METADATA
from ..core.tokens import describe, is_token
from .fleet_plan import FleetPlan
from .options import SharedGpuManagedInstancesTaskDefinitionOptions, SharedGpuTaskDefinitionOptions
from .refusals import check_options, passed_on
from .rendered import rendered_properties

# aws-cdk-lib's synth-time template check uses a schema that predates SharingStrategy.
SCHEMA_RULES_PREDATING_MPS = ("CloudFormation-Validate::F3002", "CloudFormation-Validate::F3003")
# Container options the fit plan counts: a token there cannot be checked against a host or a GPU.
_PLANNED_OPTIONS = ("cpu", "memory_limit_mib", "memory_reservation_mib", "gpu_count")


def typed_sharing_strategy() -> bool:
    """Whether the installed aws-cdk-lib types ``SharingStrategy`` on ``CfnTaskDefinition`` (2.276.0 and later).

    Until it does, its bundled template schema rejects the property, and the task definition acknowledges
    exactly those two schema rules on its own resource. Once it does, no acknowledgment is added, so a
    schema complaint after an upgrade is seen rather than silently hidden.
    """
    params = inspect.signature(ecs.CfnTaskDefinition.ResourceRequirementProperty.__init__).parameters
    return "sharing_strategy" in params


class _MpsContainers:
    """What both shared-GPU task definitions add to aws-ecs's: ``add_container(gpu=MpsShare(...))`` and its rules."""

    # Each subclass: the aws_ecs task definition of its launch type for a task needing no GPU (TaskTakesNoGpu)
    _PLAIN: str

    def _init_mps(self, owner: str, usable_gpu_memory_mib: int | None) -> None:
        self._shares: list[tuple[str, MpsShare]] = []
        self._whole_gpu: list[tuple[str, int]] = []
        self._usable = (
            None
            if usable_gpu_memory_mib is None
            else require_int(
                "usable_gpu_memory_mib", usable_gpu_memory_mib, low=1, owner=owner, error=TaskDefinitionError
            )
        )
        self._acknowledged = False
        self.node.add_validation(_SharedGpuRules(self))  # type: ignore[attr-defined]
        FleetPlan.of(self)  # type: ignore[arg-type]  # its plugin judges the written template (escape hatches)
        resource = self.node.default_child  # type: ignore[attr-defined]
        resource.add_metadata(SHARED_TASK_METADATA, True)
        cdk.Validations.of(self.node.default_child).acknowledge(  # type: ignore[attr-defined]
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-ECS2",
                reason=f"every environment variable name is judged by {SECRET_IN_ENVIRONMENT}, which warns for each "
                "name that looks like a secret (SECRET, TOKEN, PASSWORD, API_KEY, ...) until it moves to secrets or "
                "the warning is acknowledged with a reason",
            )
        )

    def add_container(self, id: str, *, gpu: MpsShare | None = None, **options: Any) -> ecs.ContainerDefinition:
        """Adds a container; ``gpu=MpsShare(...)`` gives it a budget on the task's shared GPU.

        Takes every option of ``aws_ecs.TaskDefinition.add_container``. ``gpu`` and ``gpu_count`` exclude each
        other. CPU, memory and GPU figures must be literal numbers: the fit plan counts them at synth.
        """
        where = f"{self.node.path}/{id}"  # type: ignore[attr-defined]
        if gpu is not None and not isinstance(gpu, MpsShare):
            raise TaskDefinitionError(
                f"{where}: gpu must be an MpsShare, got {gpu!r}; write gpu=MpsShare(gpu_budget_mib=..., "
                "max_compute_percent=...)"
            )
        for option in _PLANNED_OPTIONS:
            if is_token(options.get(option)):
                raise TaskDefinitionError(
                    f"{where}: {option} is {describe(options[option])}; the fit plan counts it at synth against the "
                    "hosts and GPUs, so give a literal number"
                )
        if options.get("privileged"):
            raise TaskDefinitionError(
                f"{where}: privileged containers are refused on shared-GPU task definitions: a privileged container "
                "sees every GPU and the host's devices, outside its MPS budget (and the hosts set "
                "ECS_DISABLE_PRIVILEGED=true); drop privileged, or grant only the capabilities it needs "
                "(linux_parameters)"
            )
        for name in options.get("environment") or {}:
            if GPU_ENVIRONMENT.match(name):
                raise TaskDefinitionError(f"{where}: environment {name} would steer the GPU: {GPU_ENVIRONMENT_REASON}")
        gpu_count = options.get("gpu_count")
        if gpu is not None and gpu_count is not None:
            raise TaskDefinitionError(
                f"{where}: a container cannot ask for whole GPUs (gpu_count={gpu_count}) and an "
                f"{gpu} at once; drop gpu_count to share a GPU, or drop gpu to hold whole GPUs"
            )
        # The name ECS sees, which the plan reads the written containers by.
        name = options.get("container_name") or id
        taken = [c.container_name for c in self._containers]  # type: ignore[attr-defined]
        if isinstance(name, str) and not is_token(name) and not CONTAINER_NAME.fullmatch(name):
            raise TaskDefinitionError(
                f"{where}: container name {name[:64]!r} is not up to 255 letters, digits, underscores and hyphens, "
                "which ECS refuses; give container_name= such a name (the id names the container when it is not given)"
            )
        if name in taken:
            raise TaskDefinitionError(
                f"{where}: container name {name!r} is already taken in this task definition; ECS refuses two "
                'containers of one name ("Container names must be unique within a Task Definition"): give '
                "container_name another name"
            )
        with passed_on(where, "aws_ecs.TaskDefinition.add_container", TaskDefinitionError):
            container: ecs.ContainerDefinition = super().add_container(id, **options)  # type: ignore[misc]
        if gpu is not None:
            resource = self.node.default_child  # type: ignore[attr-defined]
            assert isinstance(resource, ecs.CfnTaskDefinition)
            # aws-ecs only ever appends to the container list, so this index stays the container's own. (Resolving
            # the list here would freeze it: aws-ecs renders it with a cached Lazy.)
            index = len(self._containers) - 1  # type: ignore[attr-defined]
            resource.add_property_override(
                f"ContainerDefinitions.{index}.ResourceRequirements", [gpu.cfn_requirement()]
            )
            self._shares.append((container.container_name, gpu))
            self._acknowledge_schema(resource)
        elif gpu_count is not None:
            self._whole_gpu.append((container.container_name, gpu_count))
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
    def task_gpu_budget_mib(self) -> int:
        """GPU memory one task needs on its one GPU: the sum of its MPS containers' budgets."""
        return sum(share.gpu_budget_mib for _, share in self._shares)

    @property
    def whole_gpu_count(self) -> int:
        """Whole GPUs one task holds (containers with ``gpu_count``)."""
        return sum(count for _, count in self._whole_gpu)

    def no_gpu_taken(self) -> str | None:
        """Why this task runs without a GPU: containers were added, none with ``gpu=`` or ``gpu_count`` (None where
        one has either). Read from what ``add_container`` was given: the MPS requirement is written as a property
        override, which the rendered properties do not show."""
        names = [
            c.container_name
            for c in self.node.children  # type: ignore[attr-defined]
            if isinstance(c, ecs.ContainerDefinition)
        ]
        return None if self._shares or self._whole_gpu else no_gpu_taken(names, self._PLAIN)

    def gpu_rule_violations(self) -> list[str]:
        """Every broken GPU rule of this task definition, as messages (empty when it is sound)."""
        mixed = mixed_gpu_options(self._shares, self._whole_gpu)
        problems = [mixed] if mixed is not None else []
        too_much = (
            gpu_memory_problem(self.task_gpu_budget_mib, self._usable, "one GPU (usable_gpu_memory_mib)")
            if self._shares and self._usable is not None
            else None
        )
        if too_much is not None:
            parts = " + ".join(f"{name} {share.gpu_budget_mib}" for name, share in self._shares)
            problems.append(
                f"[{TASK_EXCEEDS_GPU_MEMORY}] {too_much}: its MPS containers share that GPU ({parts}); lower the "
                "budgets, split the containers into separate task definitions, or use a larger GPU"
            )
        return problems


def _refuse(owner: str, kwargs: Mapping[str, Any], names: Sequence[str], why: str) -> None:
    for name in names:
        if name in kwargs:
            raise TaskDefinitionError(f"{owner}: {name} is not an option here: {why}")
    if kwargs.get("network_mode") == ecs.NetworkMode.HOST:
        raise TaskDefinitionError(
            f"{owner}: network_mode HOST is refused on shared-GPU task definitions: containers would share the host's "
            "network, its instance credentials among it; use BRIDGE (the default) or AWS_VPC"
        )


class SharedGpuTaskDefinition(_MpsContainers, ecs.Ec2TaskDefinition):
    """An EC2 task definition whose containers may share one GPU through MPS.

    Add containers with :meth:`add_container`, giving GPU containers ``gpu=MpsShare(...)``. All MPS containers
    of one task land on the same GPU, so their budgets must fit one GPU: the fleet plan checks that against
    every GPU capacity the task runs on, and ``usable_gpu_memory_mib`` gives a standalone check. Containers can
    instead take whole GPUs with ``gpu_count``, but one task cannot mix the two.

    It is an ``aws_ecs.Ec2TaskDefinition``: pass it to ``Ec2Service`` or to aws-ecs-patterns' EC2 patterns.

    :param usable_gpu_memory_mib: the usable memory (MiB) of one GPU this task will run on, for a standalone check;
        without it, the fleet plan checks the budgets against each capacity the task runs on.
    :param cpu: task-level CPU units (optional on EC2; the fit plan then counts it instead of the containers' sum);
        without it, none is set.
    :param memory_mib: task-level memory in MiB, none by default. Optional on EC2, but ECS requires it of a service
        with Service Connect ("On Amazon EC2, task memory is optional, but it is required for Service Connect", Amazon
        ECS Developer Guide): give the containers' sum plus the proxy's 64 MiB there (and cpu: their sum plus 256), or
        the synth fails (``ServiceConnectNeedsTaskMemory``).
    :param kwargs: every other option of ``aws_ecs.Ec2TaskDefinition`` (``SharedGpuTaskDefinitionOptions``), passed
        on unchanged.
    """

    _PLAIN = "aws_ecs.Ec2TaskDefinition"

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        usable_gpu_memory_mib: int | None = None,
        cpu: int | str | None = None,
        memory_mib: int | str | None = None,
        **kwargs: Unpack[SharedGpuTaskDefinitionOptions],
    ) -> None:
        owner = f"{scope.node.path}/{id_}"
        _refuse(
            owner,
            kwargs,
            ("compatibility",),
            "a SharedGpuTaskDefinition is EC2-only; use SharedGpuManagedInstancesTaskDefinition for ECS Managed "
            "Instances",
        )
        check_options(
            type(self), owner, kwargs, SharedGpuTaskDefinitionOptions, "Ec2TaskDefinition", TaskDefinitionError
        )
        figures = {key: _task_figure(owner, key, value) for key, value in (("cpu", cpu), ("memory_mib", memory_mib))}
        with passed_on(owner, "aws_ecs.Ec2TaskDefinition", TaskDefinitionError):
            super().__init__(scope, id_, **kwargs)
        resource = self.node.default_child
        assert isinstance(resource, ecs.CfnTaskDefinition)
        # aws-ecs's Ec2TaskDefinition takes no task-level figures; ECS's RegisterTaskDefinition takes both on EC2.
        if figures["cpu"] is not None:
            resource.cpu = figures["cpu"]
        if figures["memory_mib"] is not None:
            resource.memory = figures["memory_mib"]
        self._init_mps(owner, usable_gpu_memory_mib)


def _task_figure(owner: str, key: str, value: int | str | None) -> str | None:
    """A task-level figure as CloudFormation writes it (a digit string); a token or a non-number is refused."""
    if value is None:
        return None
    if is_token(value):
        raise TaskDefinitionError(
            f"{owner}: task-level {key} is {describe(value)}; the fit plan counts it at synth, so give the literal "
            "value (a number, or a string such as '1024')"
        )
    text = str(value).strip() if isinstance(value, int | str) and not isinstance(value, bool) else ""
    if not text.isdigit() or int(text) < 1:
        raise TaskDefinitionError(
            f"{owner}: task-level {key} must be a whole number >= 1, got {value!r}; give a number such as 4096, or "
            "leave it out on EC2 without Service Connect"
        )
    return str(int(text))


class SharedGpuManagedInstancesTaskDefinition(_MpsContainers, ecs.TaskDefinition):
    """A task definition for ECS Managed Instances whose containers may share one GPU through MPS.

    The same containers and rules as :class:`SharedGpuTaskDefinition`, with ``MANAGED_INSTANCES`` compatibility.

    :param usable_gpu_memory_mib: the usable memory (MiB) of one GPU this task will run on, for a standalone check;
        without it, the fleet plan checks the budgets against each capacity the task runs on.
    :param cpu: task-level CPU units; Managed Instances tasks take them (awsvpc); without it, none is set.
    :param memory_mib: task-level memory in MiB; without it, none is set.
    :param kwargs: every other option of ``aws_ecs.TaskDefinition`` except ``compatibility``
        (``SharedGpuManagedInstancesTaskDefinitionOptions``), passed on unchanged.
    """

    _PLAIN = "aws_ecs.TaskDefinition with compatibility=Compatibility.MANAGED_INSTANCES"

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        usable_gpu_memory_mib: int | None = None,
        cpu: int | str | None = None,
        memory_mib: int | str | None = None,
        **kwargs: Unpack[SharedGpuManagedInstancesTaskDefinitionOptions],
    ) -> None:
        owner = f"{scope.node.path}/{id_}"
        _refuse(owner, kwargs, ("compatibility",), "this task definition is for ECS Managed Instances")
        check_options(
            type(self),
            owner,
            kwargs,
            SharedGpuManagedInstancesTaskDefinitionOptions,
            "TaskDefinition",
            TaskDefinitionError,
        )
        with passed_on(owner, "aws_ecs.TaskDefinition", TaskDefinitionError):
            super().__init__(
                scope,
                id_,
                compatibility=ecs.Compatibility.MANAGED_INSTANCES,
                cpu=_task_figure(owner, "cpu", cpu),
                memory_mib=_task_figure(owner, "memory_mib", memory_mib),
                **kwargs,
            )
        self._init_mps(owner, usable_gpu_memory_mib)


@jsii.implements(IValidation)
class _SharedGpuRules:
    def __init__(self, task_definition: _MpsContainers) -> None:
        self._task_definition = task_definition

    def validate(self) -> list[str]:
        task = self._task_definition
        for child in task.node.children:  # type: ignore[attr-defined]
            if isinstance(child, ecs.ContainerDefinition):
                why = mutable_tag(child.image_name)
                if why is not None:
                    cdk.Annotations.of(child).add_warning_v2(
                        MUTABLE_IMAGE_TAG, f"container {child.container_name}: {why}"
                    )
        problems = task.gpu_rule_violations()
        # The final task definition, whatever was added after add_container, resolved once for both rule sets.
        rendered = rendered_properties(task)  # type: ignore[arg-type]
        allowed = FleetPlan.of(task).allowed_rules(task)  # type: ignore[arg-type]
        problems.extend(line for line in guard_violations(rendered) if rule_of(line) not in allowed)
        _hardening_warnings(task, rendered)
        no_gpu = task.no_gpu_taken()
        if no_gpu is not None:
            cdk.Annotations.of(task).add_warning_v2(TASK_TAKES_NO_GPU, no_gpu)  # type: ignore[arg-type]
        for line in mps_variables_in_command(rendered):
            cdk.Annotations.of(task).add_warning_v2(MPS_ENVIRONMENT_IN_COMMAND, line)  # type: ignore[arg-type]
        if isinstance(task, SharedGpuManagedInstancesTaskDefinition):
            problems.extend(managed_instances_refusals(rendered))
        return problems


def _hardening_warnings(task: Any, rendered: dict[str, Any]) -> None:
    """What the task's containers opt out of, as warnings acknowledgeable with a reason (FleetPlan.acknowledge)."""
    warn = cdk.Annotations.of(task).add_warning_v2
    for container in rendered.get("containerDefinitions") or []:
        name = str(container.get("name"))  # the warning is on the task definition, whose path the output shows
        image = container.get("image")
        if isinstance(image, str) and docker_hub(image) and not container.get("repositoryCredentials"):
            warn(DOCKER_HUB_WITHOUT_CREDENTIALS, docker_hub_message(name, image))
        names = secret_looking(e.get("name", "") for e in container.get("environment") or [])
        if names:
            warn(SECRET_IN_ENVIRONMENT, secret_in_environment_message(f"container {name}", names))
        user = container.get("user")
        if not isinstance(user, str) or not user:
            warn(ROOT_USER, root_user_message(name))
        elif is_root(user):
            warn(ROOT_USER, root_user_stated_message(name, user))
        if container.get("readonlyRootFilesystem") is not True:
            warn(WRITABLE_ROOT_FILESYSTEM, writable_root_message(name))
    role = task.task_role.node.default_child if isinstance(task.task_role, cdk.Resource) else None
    arns = cdk.Stack.of(task).resolve(getattr(role, "managed_policy_arns", None)) if role is not None else None
    for policy in managed_policies(arns):
        warn(MANAGED_POLICY_ON_TASK_ROLE, managed_policy_message(f"task definition {task.node.path}", policy))
