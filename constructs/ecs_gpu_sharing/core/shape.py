"""A task's shape: what one task of a service takes from a host and its GPUs. Pure Python.

The one road into the planner: every way of describing a task (a CDK task definition, read from its
resolved CloudFormation properties, or a fleet-file service) becomes a list of :class:`ContainerFacts`,
and :func:`task_shape` turns that into a :class:`TaskShape`, refusing what cannot be planned.

How ECS reserves host resources for a task on EC2 (ECS task definition parameters): the task-level
``cpu`` and ``memory`` when given; otherwise the sum over containers of ``cpu`` and of
``memoryReservation`` (the soft limit) or, without one, ``memory`` (the hard limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import TaskDefinitionError
from .mps import memory_fraction
from .rule_family import Family, Level, Source
from .tokens import describe, is_token


@dataclass(frozen=True)
class ContainerFacts:
    """One container as written, before checking: values may still be tokens or deploy-time expressions."""

    name: str
    cpu_units: Any = None
    memory_mib: Any = None  # the hard limit
    memory_reservation_mib: Any = None  # the soft limit
    whole_gpus: Any = None  # GPUs held whole (ResourceRequirements Type GPU, Value n)
    gpu_budget_mib: Any = None  # MPS GPU memory budget
    command: Any = None  # the container's command as written (a fraction of GPU memory it asks for is read from it)
    entry_point: Any = None  # the container's entry point as written (read with its command)
    host_ports: tuple[tuple[int, str], ...] = ()  # (port, protocol) of each mapping to a fixed host port
    log_driver: Any = None  # its log configuration's driver as written (none: Docker's default, json-file)


@dataclass(frozen=True)
class TaskShape:
    """What one task takes: CPU units and memory on its host, MPS budgets on one GPU, or whole GPUs."""

    cpu_units: int
    memory_mib: int
    gpu_budgets_mib: tuple[int, ...] = ()  # one per MPS container, all on the task's one GPU
    whole_gpus: int = 0
    network_interfaces: int = 0  # 1 in the awsvpc network mode: the task's own elastic network interface
    # (flag, fraction, the container's budget) for each MPS container whose command asks for a fraction of the GPU's
    # memory (core.mps.memory_fraction); what a task asks, not what it takes, so not part of the shape's identity
    memory_fractions: tuple[tuple[str, float, int], ...] = field(default=(), compare=False)
    # (port, protocol) of each fixed host port its containers map (bridge mode): ECS places a task only on a host
    # where they are free, which the plan checks (HostPortTwiceOnAHost), not packs by
    host_ports: tuple[tuple[int, str], ...] = field(default=(), compare=False)
    # the log drivers its containers name: a host places the task only where its agent registers each
    # (TaskLogDriverNotOnHosts)
    log_drivers: tuple[str, ...] = field(default=(), compare=False)

    @property
    def task_gpu_budget_mib(self) -> int:
        """GPU memory one task needs on its one GPU: the sum of its MPS containers' budgets."""
        return sum(self.gpu_budgets_mib)

    @property
    def clients(self) -> int:
        """MPS clients one task opens at least (one per MPS container)."""
        return len(self.gpu_budgets_mib)

    @property
    def uses_gpu(self) -> bool:
        return bool(self.gpu_budgets_mib) or self.whole_gpus > 0


RULES = Family("task shape")
TASK_MIXES_GPU_OPTIONS = RULES.declare(
    "ecs-gpu-sharing:TaskMixesGpuOptions",
    Level.ERROR,
    "task definition",
    Source.TASK_DEFINITION,
    "ECS takes one GPU option for all GPU containers of a task: MPS budgets or whole GPUs, not both",
)

TASK_TAKES_NO_GPU = RULES.declare(
    "ecs-gpu-sharing:TaskTakesNoGpu",
    Level.WARNING,
    "task definition",
    Source.TASK_DEFINITION,
    "a shared-GPU task definition whose containers hold neither an MPS share nor whole GPUs gets no GPU: the ECS agent "
    "starts a container with the NVIDIA runtime only where it assigned it a GPU (amazon-ecs-agent, "
    "agent/api/task/task.go: shouldRequireNvidiaRuntime), so a model there finds none",
)


def no_gpu_taken(containers: Sequence[str], plain: str) -> str | None:
    """Why a shared-GPU task of these ``containers`` (their names), none of which holds an MPS budget or whole GPUs,
    runs without a GPU (None where it has no container); ``plain``: the aws_ecs task definition for a task of that
    launch type that needs no GPU."""
    if not containers:
        return None
    return (
        f"no container ({', '.join(containers)}) has gpu=MpsShare(...) or "
        "gpu_count, so ECS assigns the task no GPU, and the agent starts its containers without the NVIDIA runtime "
        "(amazon-ecs-agent, agent/api/task/task.go): a model here finds no GPU. Give the model's container "
        f"gpu=MpsShare(gpu_budget_mib=...), or use {plain} for a task that needs no GPU"
    )


def mixed_gpu_options(shared: Sequence[tuple[str, object]], whole: Sequence[tuple[str, int]]) -> str | None:
    """Why a task's GPU containers cannot run: some hold whole GPUs and some MPS shares (None when they do not mix).
    ``shared``: (container, its share as shown); ``whole``: (container, GPUs)."""
    if not shared or not whole:
        return None
    return (
        f"[{TASK_MIXES_GPU_OPTIONS}] GPU containers mix whole GPUs ("
        + ", ".join(f"{name}: gpu_count={n}" for name, n in whole)
        + ") and MPS shares ("
        + ", ".join(f"{name}: {share}" for name, share in shared)
        + "); ECS needs one option for all GPU containers of a task: give every GPU container an MpsShare, or move "
        "the whole-GPU containers to their own task definition"
    )


def literal_int(value: Any, *, field: str, owner: str, low: int = 0) -> int | None:
    """A literal whole number (ints, or digit strings as CloudFormation writes task-level figures); ``None``
    when absent. Tokens and deploy-time expressions are refused: the plan cannot count what it cannot see."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit() and not is_token(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TaskDefinitionError(
            f"{owner}: {field} is {describe(value)}; the fit plan needs a literal whole number here, so give "
            "one (a value chosen at deploy time cannot be checked against the hosts and GPUs)"
        )
    if value < low:
        raise TaskDefinitionError(f"{owner}: {field} must be >= {low}, got {value}")
    return value


HEALTH_CHECK_RANGES = {"interval": (5, 300), "timeout": (2, 60), "retries": (1, 10), "startPeriod": (0, 300)}
"""What ECS takes of a container health check's numbers, seconds but ``retries`` (Amazon ECS API Reference,
HealthCheck: "You may specify between ..."; botocore's ECS model states them in words only, so moto takes any)."""
HEALTH_CHECK_FIRST = ("CMD", "CMD-SHELL", "NONE")
"""What a health check's command starts with: ECS's CMD and CMD-SHELL (API Reference, HealthCheck, command), and
Docker's NONE (no check)."""


SERVICE_CONNECT_PROXY_CPU_UNITS = 256
SERVICE_CONNECT_PROXY_MEMORY_MIB = 64
"""What ECS's Service Connect proxy, which ECS adds to every task of a service with Service Connect, needs: AWS
suggests adding 256 CPU units and at least 64 MiB to the task (Amazon ECS Developer Guide, Service Connect). The
plan counts them in every such task."""

LARGE_NAMESPACE_SERVICES = 100
LARGE_NAMESPACE_TASKS = 2000
LARGE_NAMESPACE_PROXY_EXTRA_MIB = 128
"""The same page: the proxy needs 128 MiB more once its namespace holds more than 100 services or 2,000 tasks."""


def service_connect_proxy_memory_mib(services: int, tasks: int) -> int:
    """The proxy's memory in each task, for a namespace of ``services`` services running ``tasks`` tasks at most."""
    large = services > LARGE_NAMESPACE_SERVICES or tasks > LARGE_NAMESPACE_TASKS
    return SERVICE_CONNECT_PROXY_MEMORY_MIB + (LARGE_NAMESPACE_PROXY_EXTRA_MIB if large else 0)


def task_shape(
    containers: Sequence[ContainerFacts],
    *,
    owner: str,
    task_cpu_units: Any = None,
    task_memory_mib: Any = None,
    service_connect: bool = False,
    proxy_memory_mib: int = SERVICE_CONNECT_PROXY_MEMORY_MIB,
    awsvpc: bool = False,
) -> TaskShape:
    """The shape of one task; refuses tokens and expressions in any figure the plan counts, naming the field.

    With ``service_connect``, the proxy ECS adds to the task is counted with the containers (task-level figures,
    when given, must already hold it)."""
    cpu_sum = memory_sum = whole = 0
    if service_connect:
        cpu_sum, memory_sum = SERVICE_CONNECT_PROXY_CPU_UNITS, proxy_memory_mib
    budgets: list[int] = []
    fractions: list[tuple[str, float, int]] = []
    for c in containers:
        where = f"container {c.name}"
        cpu_sum += literal_int(c.cpu_units, field=f"{where} cpu", owner=owner) or 0
        hard = literal_int(c.memory_mib, field=f"{where} memory_limit_mib", owner=owner)
        soft = literal_int(c.memory_reservation_mib, field=f"{where} memory_reservation_mib", owner=owner)
        memory_sum += soft if soft is not None else (hard or 0)
        whole += literal_int(c.whole_gpus, field=f"{where} gpu_count", owner=owner) or 0
        budget = literal_int(c.gpu_budget_mib, field=f"{where} GPU budget", owner=owner, low=1)
        if budget is not None:
            budgets.append(budget)
            asked = memory_fraction([*_words(c.entry_point), *_words(c.command)])
            if asked is not None:
                fractions.append((*asked, budget))
    cpu = literal_int(task_cpu_units, field="task-level cpu", owner=owner)
    memory = literal_int(task_memory_mib, field="task-level memory", owner=owner)
    return TaskShape(
        cpu_units=cpu if cpu is not None else cpu_sum,
        memory_mib=memory if memory is not None else memory_sum,
        gpu_budgets_mib=tuple(budgets),
        whole_gpus=whole,
        network_interfaces=1 if awsvpc else 0,
        memory_fractions=tuple(fractions),
        host_ports=() if awsvpc else tuple(sorted({p for c in containers for p in c.host_ports})),
        log_drivers=tuple(sorted({c.log_driver for c in containers if isinstance(c.log_driver, str)})),
    )


def _words(value: Any) -> list[Any]:
    """A command or entry point's parts (a list as written; anything else, a token among them, has no parts)."""
    return list(value) if isinstance(value, (list, tuple)) else []


def camel_keys(item: Any) -> dict[str, Any]:
    """One level of a CloudFormation (PascalCase) or API (camelCase) object with camelCase keys; ``{}`` for a
    non-object, so a malformed template reads as empty rather than failing."""
    return {k[:1].lower() + k[1:]: v for k, v in item.items()} if isinstance(item, dict) else {}


def folded_keys(item: Any) -> dict[str, Any]:
    """One level of an object with its keys in lower case, where ``camel_keys`` misreads a leading acronym
    (CloudFormation writes ``EFSVolumeConfiguration`` and ``IAM`` where the API writes ``efsVolumeConfiguration`` and
    ``iam``); ``{}`` for a non-object."""
    return {str(k).lower(): v for k, v in item.items()} if isinstance(item, dict) else {}


def containers_from_cloudformation(container_definitions: Any, *, owner: str) -> list[ContainerFacts]:
    """Container facts from a task definition's resolved ``ContainerDefinitions`` (camel- or Pascal-case keys).

    GPU requirements are read from ``ResourceRequirements``: ``Value`` for whole GPUs,
    ``SharingStrategy.NvidiaMps.Memory`` for an MPS budget.
    """
    if not isinstance(container_definitions, list):
        raise TaskDefinitionError(
            f"{owner}: its container definitions are {describe(container_definitions)}, not a list the plan can read"
        )
    out = []
    for raw in container_definitions:
        c = camel_keys(raw)
        whole: Any = None
        budget: Any = None
        for req in c.get("resourceRequirements") or []:
            r = camel_keys(req)
            if r.get("type") != "GPU":
                continue
            strategy = r.get("sharingStrategy") or r.get("SharingStrategy")
            if isinstance(strategy, dict):
                mps = strategy.get("nvidiaMps") or strategy.get("NvidiaMps") or {}
                budget = mps.get("memory", mps.get("Memory"))
            else:
                whole = r.get("value")
        out.append(
            ContainerFacts(
                name=str(c.get("name", "?")),
                cpu_units=c.get("cpu"),
                memory_mib=c.get("memory"),
                memory_reservation_mib=c.get("memoryReservation"),
                whole_gpus=whole,
                gpu_budget_mib=budget,
                command=c.get("command"),
                entry_point=c.get("entryPoint"),
                host_ports=_host_ports(c.get("portMappings")),
                log_driver=camel_keys(c.get("logConfiguration")).get("logDriver"),
            )
        )
    return out


def _host_ports(mappings: Any) -> tuple[tuple[int, str], ...]:
    """The fixed host ports of a container's port mappings, with their protocol (tcp unless said); 0, none or a value
    not known at synth is dynamic or unknown, and not counted."""
    out = []
    for m in mappings if isinstance(mappings, list) else []:
        mapping = camel_keys(m)
        port = mapping.get("hostPort")
        if isinstance(port, str) and port.isdigit():
            port = int(port)
        if isinstance(port, int) and not isinstance(port, bool) and port > 0:
            out.append((port, str(mapping.get("protocol") or "tcp").lower()))
    return tuple(out)
