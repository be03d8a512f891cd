"""The task rules: why one task can never fit a host of a capacity, whatever else runs there. Each is a rule of the
plan (``core.rules`` lists them with their checks); the planner asks ``task_problems`` which services it cannot place
at all, and the task-definition construct asks ``gpu_memory_problem`` of its own budgets. Pure Python; the rules
live here, apart from the planner, which only plans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .capacity_facts import LOG_DRIVER_ATTRIBUTE, RESERVED_HOST_PORTS
from .constraints import instance_types_required
from .mps import MAX_CLIENTS_PER_GPU

if TYPE_CHECKING:  # types only: the planner imports this module
    from .planner.model import CapacityInput, ServiceInput

TASK_EXCEEDS_GPU_MEMORY = "ecs-gpu-sharing:TaskExceedsGpuMemory"
TASK_EXCEEDS_MPS_CLIENTS = "ecs-gpu-sharing:TaskExceedsMpsClients"
TASK_EXCEEDS_GPUS = "ecs-gpu-sharing:TaskExceedsGpus"
TASK_EXCEEDS_HOST_CPU = "ecs-gpu-sharing:TaskExceedsHostCpu"
TASK_EXCEEDS_HOST_MEMORY = "ecs-gpu-sharing:TaskExceedsHostMemory"
TASK_BELOW_CUDA_CONTEXT = "ecs-gpu-sharing:TaskBelowCudaContext"
TASK_MAPS_RESERVED_HOST_PORT = "ecs-gpu-sharing:TaskMapsReservedHostPort"
TASK_LOG_DRIVER_NOT_ON_HOSTS = "ecs-gpu-sharing:TaskLogDriverNotOnHosts"
TASK_CONSTRAINT_MATCHES_NO_HOST = "ecs-gpu-sharing:TaskConstraintMatchesNoHost"


@dataclass(frozen=True)
class TaskProblem:
    """Why one task can never fit a host, and what to do about it."""

    rule_id: str
    what: str
    fix: str

    def __str__(self) -> str:
        return self.what


def gpu_memory_problem(need_mib: int, usable_mib: int, gpu: str) -> str | None:
    """TaskExceedsGpuMemory, the one check of it (the plan's and a task definition's standalone check): ECS puts a
    task's MPS containers on one GPU, so their budgets together must fit that GPU's usable memory (``gpu`` names it
    for the message)."""
    if need_mib <= usable_mib:
        return None
    return f"one task needs {need_mib} MiB of GPU memory on one GPU, more than the {usable_mib} MiB usable on {gpu}"


def _gpu_memory(service: ServiceInput, capacity: CapacityInput) -> str | None:
    return gpu_memory_problem(
        service.task_gpu_budget_mib,
        capacity.usable_gpu_memory_mib,
        f"a {capacity.instance_type} GPU ({capacity.registered_gpu_memory_mib or capacity.usable_gpu_memory_mib} MiB "
        f"as ECS registers it ({capacity.gpu_memory_basis}), less a {capacity.gpu_margin_mib} MiB margin)",
    )


def _clients(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.clients <= MAX_CLIENTS_PER_GPU:
        return None
    return (
        f"one task has {service.clients} MPS containers, more than the {MAX_CLIENTS_PER_GPU} clients "
        "NVIDIA MPS accepts on one GPU"
    )


def _cuda_context(service: ServiceInput, capacity: CapacityInput) -> str | None:
    context = capacity.cuda_context_mib
    smallest = min(service.shape.gpu_budgets_mib, default=0)
    if not context or not smallest or smallest > context:
        return None
    return (
        f"a container's GPU budget of {smallest} MiB cannot hold a CUDA context and a model: the context alone takes "
        f"{context} MiB of an MPS client's limit on a {capacity.instance_type}'s GPU ({capacity.cuda_context_source})"
    )


def _whole_gpus(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.whole_gpus <= capacity.gpus_per_instance:
        return None
    return (
        f"one task holds {service.whole_gpus} whole GPUs, more than the {capacity.gpus_per_instance} "
        f"of a {capacity.instance_type}"
    )


def _host_cpu(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.cpu_units <= capacity.host_cpu_units:
        return None
    return (
        f"one task needs {service.cpu_units} CPU units, more than the {capacity.host_cpu_units} "
        f"a {capacity.instance_type} offers to tasks"
    )


def _host_memory(service: ServiceInput, capacity: CapacityInput) -> str | None:
    if service.memory_mib <= capacity.host_memory_mib:
        return None
    return (
        f"one task needs {service.memory_mib} MiB of host memory, more than the "
        f"{capacity.host_memory_mib} MiB a {capacity.instance_type} offers to tasks"
    )


def _reserved_port(service: ServiceInput, capacity: CapacityInput) -> str | None:
    reserved = capacity.reserved_ports
    ports = [p for p, protocol in service.shape.host_ports if protocol == "tcp" and p in reserved]
    if not ports:
        return None
    shown = ", ".join(f"{p}/tcp" for p in ports)
    whose = (
        "the ECS agent reserves on every host (amazon-ecs-agent, agent/config/config_unix.go: ReservedPorts"
        if reserved == RESERVED_HOST_PORTS
        else f"the agent of {capacity.name}'s hosts reserves (ECS_RESERVED_PORTS in their user data:"
    )
    return f"one task maps host port {shown}, which {whose} {', '.join(map(str, reserved))}): ECS never places it"


def _log_drivers(service: ServiceInput, capacity: CapacityInput) -> str | None:
    missing = sorted(d for d in service.shape.log_drivers if capacity.log_drivers and d not in capacity.log_drivers)
    if not missing:
        return None
    attributes = ", ".join(f"{LOG_DRIVER_ATTRIBUTE}{d}" for d in missing)
    drivers = f"log driver{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    return (
        f"one task logs with the {drivers}, which the hosts of {capacity.name} do not register (their agent "
        f"registers {', '.join(capacity.log_drivers)}): the task needs {attributes}, so ECS never places it"
    )


def _constraint_hosts(service: ServiceInput, capacity: CapacityInput) -> str | None:
    types = set(capacity.instance_types or (capacity.instance_type,))
    for expression in service.constraints_not_planned:
        required = instance_types_required(expression)
        if required is not None and not required & types:
            return (
                f"its memberOf expression {expression!r} matches no host of the capacity ({', '.join(sorted(types))}),"
                " so ECS places none of its tasks"
            )
    return None


@dataclass(frozen=True)
class TaskRule:
    """A rule one task must meet on one host, whatever else runs there."""

    rule_id: str
    explanation: str
    fix: str
    check: Callable[[ServiceInput, CapacityInput], str | None]


TASK_RULES: tuple[TaskRule, ...] = (
    TaskRule(
        TASK_EXCEEDS_GPU_MEMORY,
        "a task's MPS containers all land on one GPU, so their budgets must fit one GPU's usable memory",
        "lower the GPU budgets, or move the service to a capacity with larger GPUs",
        _gpu_memory,
    ),
    TaskRule(
        TASK_EXCEEDS_MPS_CLIENTS,
        f"NVIDIA MPS accepts at most {MAX_CLIENTS_PER_GPU} clients per GPU; each MPS container is one at least",
        "split the containers over several task definitions",
        _clients,
    ),
    TaskRule(
        TASK_BELOW_CUDA_CONTEXT,
        "each MPS container's CUDA context counts against its GPU budget (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), so a "
        "budget at or below the context, where it is measured for the GPU, can never run a model",
        "give each container a GPU budget of the context plus its model's memory (docs/gpu-measured.md)",
        _cuda_context,
    ),
    TaskRule(
        TASK_EXCEEDS_GPUS,
        "a task's whole GPUs must all be on one host",
        "use an instance type with more GPUs",
        _whole_gpus,
    ),
    TaskRule(
        TASK_EXCEEDS_HOST_CPU,
        "a task's CPU units must fit what one host offers to tasks",
        "lower the task's CPU, or use a larger instance type",
        _host_cpu,
    ),
    TaskRule(
        TASK_EXCEEDS_HOST_MEMORY,
        "a task's memory must fit what one host offers to tasks",
        "lower the task's memory, or use a larger instance type",
        _host_memory,
    ),
    TaskRule(
        TASK_MAPS_RESERVED_HOST_PORT,
        "a task mapping a host port the ECS agent reserves on its host (22, 2375, 2376, 51678, 51679 unless the hosts' "
        "user data sets ECS_RESERVED_PORTS: amazon-ecs-agent, agent/config/config_unix.go, ReservedPorts) is never "
        "placed",
        "map host port 0 (a dynamic port, which a load balancer's target group follows) or another port",
        _reserved_port,
    ),
    TaskRule(
        TASK_CONSTRAINT_MATCHES_NO_HOST,
        "a task whose memberOf expression names instance types its capacity has none of is never placed: ECS places a "
        "task only on a host its expression matches (ECS Developer Guide, 'Amazon ECS task placement constraints')",
        "name one of the capacity's instance types, drop the constraint, or run the service on a capacity of the types "
        "it names",
        _constraint_hosts,
    ),
    TaskRule(
        TASK_LOG_DRIVER_NOT_ON_HOSTS,
        "a task whose container logs with a driver the hosts' agent does not register (ECS_AVAILABLE_LOGGING_DRIVERS; "
        "the AMI's ecs-init registers json-file, syslog, awslogs, fluentd and none, and the agent awsfirelens: "
        "amazon-ecs-agent, ecs-init/docker/docker.go) is never placed: it needs the host attribute "
        f"{LOG_DRIVER_ATTRIBUTE}<driver> (ECS API Reference, LogConfiguration)",
        "log with awslogs, or send the logs on through FireLens (awsfirelens, whose Fluent Bit has outputs for Splunk, "
        "GELF and more); or register the driver in the hosts' user data (echo 'ECS_AVAILABLE_LOGGING_DRIVERS=[...]' "
        ">> /etc/ecs/ecs.config on GpuCapacity.launch_template.user_data), which the plan reads",
        _log_drivers,
    ),
)


def task_problems(service: ServiceInput, capacity: CapacityInput) -> list[TaskProblem]:
    """Why one task of ``service`` can never fit a host of ``capacity`` (empty when it can)."""
    problems = []
    for rule in TASK_RULES:
        what = rule.check(service, capacity)
        if what is not None:
            problems.append(TaskProblem(rule.rule_id, what, rule.fix))
    return problems
