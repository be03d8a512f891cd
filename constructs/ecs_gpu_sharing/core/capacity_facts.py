"""What one GPU host offers to tasks, from the catalog. Pure Python: used by GpuCapacity and the planner.

Per GPU: what ECS registers less a margin (``gpu_memory``). Per host: the instance's vCPUs and memory, less what
the kernel and the ECS agent keep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import catalog
from .catalog import GpuInstanceType, Support
from .errors import CapacityError, CatalogError
from .gpu_memory import DEFAULT_GPU_MARGIN_MIB, GpuMemory, gpu_memory
from .mps import require_int
from .rule_family import Family, Level, Source

CPU_UNITS_PER_VCPU = 1024
# The hosts' root volume (gp3), which holds the images and the model caches: 200 GiB unless given; at least the 30 GiB
# the library has always required of it, at most gp3's 16 TiB (Amazon EBS User Guide, "Amazon EBS General Purpose
# SSD volumes": 1 GiB - 16 TiB).
ROOT_VOLUME_DEFAULT_GIB = 200
ROOT_VOLUME_MIN_GIB = 30
ROOT_VOLUME_MAX_GIB = 16_384
# The log drivers an EC2 GPU host's agent registers, as host attributes (com.amazonaws.ecs.capability.logging-driver.X)
# that a task logging with X needs: ecs-init starts the agent with ECS_AVAILABLE_LOGGING_DRIVERS
# ["json-file","syslog","awslogs","fluentd","none"] unless /etc/ecs/ecs.config sets it (amazon-ecs-agent,
# ecs-init/docker/docker.go, getContainerConfig), and the agent adds awsfirelens on Linux whatever the setting
# (agent/app/agent_capability_unix.go). The hosts' user data does not set it; a team's added line is read
# (log_drivers_in_user_data).
FIRELENS_DRIVER = "awsfirelens"
AMI_LOG_DRIVERS = ("json-file", "syslog", "awslogs", "fluentd", "none", FIRELENS_DRIVER)
LOG_DRIVER_ATTRIBUTE = "com.amazonaws.ecs.capability.logging-driver."  # + the driver: the host attribute ECS matches
_JSON_LIST = re.compile(r"\[[^\]]*\]")
RULES = Family("capacity")
UNVERIFIED_INSTANCE_FAMILY = RULES.declare(
    "ecs-gpu-sharing:UnverifiedInstanceFamily",
    Level.WARNING,
    "capacity",
    Source.CAPACITY,
    "an instance family AWS has not named for ECS GPU sharing should be tested before it is relied on",
)  # HostFacts.unverified names each such instance type; the capacity constructs warn with this id
AMI_IDS_FOR_SOME_REGIONS = RULES.declare(
    "ecs-gpu-sharing:AmiIdsForSomeRegions",
    Level.WARNING,
    "capacity",
    Source.CAPACITY,
    "an environment-agnostic stack pinned to explicit AMI ids deploys only to the regions they name: elsewhere "
    "Fn::FindInMap finds no AMI and the stack fails",
)  # GpuAmi.image_ids warns with this id where the stack's region is known only at deploy


def default_host_memory_reserve_mib(memory_mib: int) -> int:
    """Host memory not offered to tasks: what the kernel and the ECS agent keep (about 6%, at least 512 MiB).

    ECS registers the memory the OS reports, a few percent below the nominal size; planning against the
    nominal size would place tasks ECS then cannot.
    """
    return max(512, memory_mib * 6 // 100)


@dataclass(frozen=True)
class HostFacts:
    """The GPU and host figures a capacity plans with."""

    instance_types: tuple[str, ...]
    gpu_name: str
    gpus_per_instance: int
    gpu_memory: GpuMemory  # one GPU: EC2's figure, ECS's, the margin, and the basis
    host_cpu_units: int  # what one host offers to tasks
    host_memory_mib: int  # what one host offers to tasks
    unverified: tuple[str, ...]  # instance types whose family the launch did not name, with the reason
    task_network_interfaces: int = 0  # awsvpc tasks one host takes: its interfaces less the host's own (0: unknown)

    @property
    def ec2_gpu_memory_mib(self) -> int:
        return self.gpu_memory.ec2_mib

    @property
    def usable_gpu_memory_mib(self) -> int:
        return self.gpu_memory.usable_mib

    @property
    def instance_type(self) -> str:
        """The type the figures come from (the smallest, when several are given)."""
        return self.instance_types[0]


def host_facts(
    instance_types: Sequence[str],
    *,
    gpu_margin_mib: int = DEFAULT_GPU_MARGIN_MIB,
    ecs_gpu_memory_mib: int | None = None,
    host_memory_reserve_mib: int | None = None,
    owner: str = "capacity",
) -> HostFacts:
    """Host facts for instance types that must share one GPU model and memory size.

    With several types (for availability), the figures are the smallest: a plan that fits them fits
    every type. Refuses unknown types, types without a GPU, types where sharing cannot work, and mixed
    GPU models. ``ecs_gpu_memory_mib`` is one GPU's memory as the capacity's own ECS cluster registers it
    (``totalMemoryInMiB``), in place of the table's figure.
    """
    if (
        isinstance(instance_types, str)
        or not isinstance(instance_types, Sequence)
        or not instance_types
        or not all(isinstance(name, str) for name in instance_types)
    ):
        raise CapacityError(
            f"{owner}: instance_types must be a non-empty list of GPU instance types, got {instance_types!r}"
        )
    records: list[GpuInstanceType] = []
    for name in instance_types:
        try:
            records.append(catalog.lookup_usable(name))
        except CatalogError as error:
            raise CatalogError(f"{owner}: {error}") from None
    models = sorted({(r.gpu_name, r.ec2_gpu_memory_mib) for r in records})
    if len(models) > 1:
        seen = "; ".join(f"{r.instance_type}: {r.gpu_name} {r.ec2_gpu_memory_mib} MiB" for r in records)
        raise CapacityError(
            f"{owner}: all instance types of one capacity must carry the same GPU model and memory, got {seen}; "
            "split them into one capacity per GPU model"
        )
    margin = require_int("gpu_margin_mib", gpu_margin_mib, low=0, owner=owner, error=CapacityError)
    measured = (
        None
        if ecs_gpu_memory_mib is None
        else require_int("ecs_gpu_memory_mib", ecs_gpu_memory_mib, low=1, owner=owner, error=CapacityError)
    )
    gpu_mib = records[0].ec2_gpu_memory_mib
    if measured is not None and measured > gpu_mib * 11 // 10:
        raise CapacityError(
            f"{owner}: ecs_gpu_memory_mib {measured} is more than 10% above EC2's {gpu_mib} MiB for the "
            f"{records[0].gpu_name}; give the totalMemoryInMiB that `ecs-gpu-sharing cluster status` shows for it"
        )
    memory_figures = gpu_memory(records[0].gpu_name, gpu_mib, margin_mib=margin, measured_mib=measured)
    if memory_figures.usable_mib < 1:
        raise CapacityError(
            f"{owner}: gpu_margin_mib {margin} leaves nothing of the {memory_figures.ecs_mib} MiB ECS registers per "
            f"GPU; use a margin below it (the default is {DEFAULT_GPU_MARGIN_MIB})"
        )
    smallest = min(records, key=lambda r: (r.gpus, r.vcpus, r.instance_memory_mib, r.instance_type))
    memory = min(r.instance_memory_mib for r in records)
    if host_memory_reserve_mib is None:
        host_reserve = default_host_memory_reserve_mib(memory)
    else:
        host_reserve = require_int(
            "host_memory_reserve_mib", host_memory_reserve_mib, low=0, owner=owner, error=CapacityError
        )
        if host_reserve >= memory:
            raise CapacityError(
                f"{owner}: host_memory_reserve_mib {host_reserve} leaves nothing of the {memory} MiB per host"
            )
    ordered = (smallest.instance_type, *[n for n in instance_types if n != smallest.instance_type])
    return HostFacts(
        instance_types=ordered,
        gpu_name=records[0].gpu_name,
        gpus_per_instance=min(r.gpus for r in records),
        gpu_memory=memory_figures,
        host_cpu_units=min(r.vcpus for r in records) * CPU_UNITS_PER_VCPU,
        host_memory_mib=memory - host_reserve,
        unverified=tuple(f"{r.instance_type}: {r.reason}" for r in records if r.support is Support.UNVERIFIED),
        task_network_interfaces=task_network_interfaces(records),
    )


def task_network_interfaces(records: Sequence[GpuInstanceType]) -> int:
    """The awsvpc tasks one host of the smallest type takes: each needs an elastic network interface of its own, and
    the host keeps its primary one (Amazon ECS Developer Guide, "Amazon ECS task networking options for EC2": "each
    task ... receives its own elastic network interface"; "Amazon EC2 instance types ... maximum network
    interfaces"). Without ENI trunking, which this plan does not assume. 0 when EC2's figure is not known."""
    known = [r.max_network_interfaces for r in records if r.max_network_interfaces > 0]
    return max(min(known) - 1, 0) if len(known) == len(records) else 0


_ECS_SETTING = re.compile(r"\b(ECS_[A-Z0-9_]+)=(\S*)")
HARDENED_SETTINGS = ("ECS_ENABLE_GPU_SUPPORT", "ECS_DISABLE_PRIVILEGED", "ECS_AWSVPC_BLOCK_IMDS")
"""The agent settings a GPU capacity's hosts must keep true: GPU support, no privileged containers, no instance
metadata for awsvpc tasks (the library's user data writes each)."""


def ecs_settings(user_data: str) -> dict[str, str]:
    """The agent settings a user data script writes (``ECS_NAME=value``, quotes taken off), each as its last line
    gives it: ecs-init reads /etc/ecs/ecs.config line by line into one map, a later line over an earlier one
    (amazon-ecs-agent, ecs-init/docker/docker.go, getEnvVars)."""
    return {name: value.strip("'\"") for name, value in _ECS_SETTING.findall(user_data)}


RESERVED_HOST_PORTS = (22, 2375, 2376, 51678, 51679)
"""The TCP host ports the ECS agent reserves on every Linux host unless told otherwise (amazon-ecs-agent,
agent/config/config_unix.go, ReservedPorts: SSH, the Docker daemon and its TLS port, the agent's introspection and task
metadata endpoints)."""


def reserved_ports_in_user_data(user_data: str) -> tuple[int, ...]:
    """The TCP host ports the hosts' agent reserves: ECS_RESERVED_PORTS where a user data line sets a JSON list of
    them, which takes the defaults' place (amazon-ecs-agent, agent/config/config.go: Merge fills only what the
    environment left unset), else ``RESERVED_HOST_PORTS``; a value the synth cannot read keeps the defaults."""
    ports = _listed_setting(user_data, "ECS_RESERVED_PORTS")
    if isinstance(ports, list) and ports and all(isinstance(p, int) and not isinstance(p, bool) for p in ports):
        return tuple(ports)
    return RESERVED_HOST_PORTS


_NOT_SET = object()


def _listed_setting(user_data: str, name: str) -> Any:
    """The JSON list the last line of ``user_data`` that sets ``name`` gives it (written bare, in single quotes or in
    double quotes with its own quotes escaped); ``_NOT_SET`` where no line sets it, ``None`` where it cannot be read."""
    lines = re.findall(rf"{name}=([^\n]*)", user_data)
    if not lines:
        return _NOT_SET
    listed = _JSON_LIST.search(lines[-1])
    try:
        return json.loads(listed.group().replace('\\"', '"')) if listed else None
    except ValueError:
        return None


def reserved_memory_in_user_data(user_data: str) -> int:
    """The memory (MiB) a user data's ECS_RESERVED_MEMORY keeps from what the agent registers for tasks (amazon-ecs-
    agent, agent/config/types.go, ReservedMemory: "Reduction, in MiB, of the memory capacity of the instance that is
    reported to Amazon ECS"); 0 when it is not set, or not a number the synth can read."""
    value = ecs_settings(user_data).get("ECS_RESERVED_MEMORY", "")
    return int(value) if value.isdigit() else 0


def log_drivers_in_user_data(user_data: str) -> tuple[str, ...]:
    """The log drivers the hosts of this user data register: the AMI's (``AMI_LOG_DRIVERS``) unless a line sets
    ECS_AVAILABLE_LOGGING_DRIVERS, then that list as the file's last setting gives it, with awsfirelens; ``()`` where
    the setting cannot be read at synth (a shell variable, say), so the drivers are not judged."""
    drivers = _listed_setting(user_data, "ECS_AVAILABLE_LOGGING_DRIVERS")
    if drivers is _NOT_SET:
        return AMI_LOG_DRIVERS
    if not isinstance(drivers, list) or not all(isinstance(d, str) for d in drivers):
        return ()
    return tuple(dict.fromkeys([*drivers, FIRELENS_DRIVER]))
