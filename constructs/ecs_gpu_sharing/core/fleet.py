"""The fleet file (``fleet.toml``): capacities and services, read with the standard library. Pure Python.

Every problem names the file and the key: unknown keys, wrong types, missing keys, references to
capacities that do not exist.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ami_release import DEFAULT_AMI_RELEASE, check_release
from .capacity_facts import HostFacts, host_facts
from .errors import FleetSpecError, GpuSharingError
from .gpu_memory import DEFAULT_GPU_MARGIN_MIB
from .mps import MpsShare
from .planner import CapacityInput, ServiceInput
from .shape import ContainerFacts, TaskShape, task_shape

SERVICE_TAG = "ecs-gpu-sharing:service"
"""Tag on each deployed ECS service naming its fleet-file service; `cluster status --fleet` matches by it."""

CONTAINER_NAME = "model"
"""The name of each fleet service's container in its task definition."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$")


@dataclass(frozen=True)
class CapacitySpec:
    name: str
    instance_types: tuple[str, ...]
    facts: HostFacts  # from the catalog, with the fleet's gpu_margin_mib and ecs_gpu_memory_mib
    ami_release: str = DEFAULT_AMI_RELEASE
    min_instances: int = 0
    max_instances: int | None = None
    ecs_gpu_memory_mib: int | None = None  # measured on the fleet's cluster, in place of the per-model figure


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    capacity: str
    image: str
    desired_count: int
    cpu_units: int
    memory_mib: int  # host memory, the container's hard limit
    gpu_budget_mib: int
    max_compute_percent: int | None = None
    port: int | None = None
    environment: Mapping[str, str] = field(default_factory=dict)

    @property
    def share(self) -> MpsShare:
        return MpsShare(self.gpu_budget_mib, self.max_compute_percent)

    def shape(self, source: str) -> TaskShape:
        """The task's shape, through the same road as a CDK task definition's."""
        container = ContainerFacts(
            name=CONTAINER_NAME,
            cpu_units=self.cpu_units,
            memory_mib=self.memory_mib,
            gpu_budget_mib=self.gpu_budget_mib,
        )
        return task_shape([container], owner=f"{source}: service.{self.name}")


@dataclass(frozen=True)
class FleetSpec:
    name: str
    capacities: Mapping[str, CapacitySpec]
    services: Mapping[str, ServiceSpec]
    source: str = "<fleet>"
    account: str | None = None  # with region: an environment-bound app (lookups need credentials)
    region: str | None = None
    vpc_id: str | None = None  # deploy into this existing VPC instead of a new one

    def capacity_inputs(self) -> list[CapacityInput]:
        out = []
        for cap in self.capacities.values():
            out.append(CapacityInput.from_facts(cap.name, cap.facts, cap.max_instances, cap.min_instances))
        return out

    def service_inputs(self) -> list[ServiceInput]:
        return [
            ServiceInput(name=s.name, capacity=s.capacity, shape=s.shape(self.source), tasks=s.desired_count)
            for s in self.services.values()
        ]


# key -> (type, required); the type check treats bool as not an int.
_TOP = {
    "name": (str, True),
    "account": (str, False),
    "region": (str, False),
    "vpc_id": (str, False),
    "capacity": (dict, True),
    "service": (dict, True),
}
_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8}([0-9a-f]{9})?$")
_CAPACITY = {
    "instance_types": (list, True),
    "ami_release": (str, False),
    "min_instances": (int, False),
    "max_instances": (int, False),
    "gpu_margin_mib": (int, False),
    "ecs_gpu_memory_mib": (int, False),
}
_SERVICE = {
    "capacity": (str, True),
    "image": (str, True),
    "desired_count": (int, True),
    "cpu_units": (int, True),
    "memory_mib": (int, True),
    "gpu_budget_mib": (int, True),
    "max_compute_percent": (int, False),
    "port": (int, False),
    "environment": (dict, False),
}
_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "a table"}


def _check_table(source: str, where: str, table: Mapping[str, Any], schema: Mapping[str, tuple[type, bool]]) -> None:
    for key in table:
        if key not in schema:
            known = ", ".join(schema)
            raise FleetSpecError(f"{source}: unknown key {where}{key}; the keys here are: {known}")
    for key, (kind, required) in schema.items():
        if key not in table:
            if required:
                raise FleetSpecError(f"{source}: missing key {where}{key} ({_TYPE_NAMES[kind]})")
            continue
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise FleetSpecError(
                f"{source}: {where}{key} must be {_TYPE_NAMES[kind]}, got {value!r} ({type(value).__name__})"
            )


def _at_least(source: str, key: str, value: int, low: int, high: int | None = None) -> None:
    if value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f">= {low}"
        raise FleetSpecError(f"{source}: {key} must be {span}, got {value}")


def _check_name(source: str, kind: str, name: str) -> None:
    if not _NAME.match(name):
        where = f"{kind}.{name!r}" if kind != "name" else f"name {name!r}"
        raise FleetSpecError(
            f"{source}: {where} is not a usable name; use letters, digits and '-', starting with a letter, "
            "at most 40 characters"
        )


def parse(doc: Mapping[str, Any], *, source: str = "<fleet>") -> FleetSpec:
    """A fleet spec from a parsed TOML document; refuses anything malformed, naming ``source`` and the key."""
    _check_table(source, "", doc, _TOP)
    _check_name(source, "name", doc["name"])
    for key, pattern, example in (
        ("account", _ACCOUNT, "123456789012"),
        ("region", _REGION, "us-east-1"),
        ("vpc_id", _VPC_ID, "vpc-0123456789abcdef0"),
    ):
        if key in doc and not pattern.match(doc[key]):
            raise FleetSpecError(f"{source}: {key} {doc[key]!r} is malformed; write it like {example!r}")
    if ("account" in doc) != ("region" in doc):
        raise FleetSpecError(f"{source}: account and region go together; give both, or neither for an offline synth")
    if "vpc_id" in doc and "account" not in doc:
        raise FleetSpecError(
            f"{source}: vpc_id needs account and region (the VPC is looked up in that account at synth)"
        )
    capacities: dict[str, CapacitySpec] = {}
    for name, table in doc["capacity"].items():
        where = f"capacity.{name}."
        _check_name(source, "capacity", name)
        if not isinstance(table, dict):
            raise FleetSpecError(f"{source}: capacity.{name} must be a table")
        _check_table(source, where, table, _CAPACITY)
        types = table["instance_types"]
        if not types or not all(isinstance(t, str) for t in types):
            raise FleetSpecError(f"{source}: {where}instance_types must be a non-empty list of strings, got {types!r}")
        release = table.get("ami_release", DEFAULT_AMI_RELEASE)
        try:
            check_release(release)
        except GpuSharingError as error:
            raise FleetSpecError(f"{source}: {where}ami_release: {error}") from None
        try:
            facts = host_facts(
                types,
                gpu_margin_mib=table.get("gpu_margin_mib", DEFAULT_GPU_MARGIN_MIB),
                ecs_gpu_memory_mib=table.get("ecs_gpu_memory_mib"),
                owner=f"{source}: capacity.{name}",
            )
        except GpuSharingError as error:
            raise FleetSpecError(str(error)) from None
        min_i = table.get("min_instances", 0)
        max_i = table.get("max_instances")
        _at_least(source, f"{where}min_instances", min_i, 0)
        if max_i is not None:
            _at_least(source, f"{where}max_instances", max_i, max(1, min_i))
        capacities[name] = CapacitySpec(
            name=name,
            instance_types=tuple(types),
            ami_release=release,
            min_instances=min_i,
            max_instances=max_i,
            ecs_gpu_memory_mib=table.get("ecs_gpu_memory_mib"),
            facts=facts,
        )
    if not capacities:
        raise FleetSpecError(f"{source}: no [capacity.<name>] table; a fleet needs at least one capacity")
    services: dict[str, ServiceSpec] = {}
    for name, table in doc["service"].items():
        where = f"service.{name}."
        _check_name(source, "service", name)
        if not isinstance(table, dict):
            raise FleetSpecError(f"{source}: service.{name} must be a table")
        _check_table(source, where, table, _SERVICE)
        if table["capacity"] not in capacities:
            raise FleetSpecError(
                f"{source}: {where}capacity names {table['capacity']!r}, which is not defined; "
                f"defined capacities: {', '.join(capacities)}"
            )
        _at_least(source, f"{where}desired_count", table["desired_count"], 0)
        _at_least(source, f"{where}cpu_units", table["cpu_units"], 128)
        _at_least(source, f"{where}memory_mib", table["memory_mib"], 6)
        _at_least(source, f"{where}gpu_budget_mib", table["gpu_budget_mib"], 1)
        if "max_compute_percent" in table:
            _at_least(source, f"{where}max_compute_percent", table["max_compute_percent"], 1, 100)
        if "port" in table:
            _at_least(source, f"{where}port", table["port"], 1, 65535)
        env = table.get("environment", {})
        for key, value in env.items():
            if not isinstance(value, str):
                raise FleetSpecError(f"{source}: {where}environment.{key} must be a string, got {value!r}")
        services[name] = ServiceSpec(
            name=name,
            capacity=table["capacity"],
            image=table["image"],
            desired_count=table["desired_count"],
            cpu_units=table["cpu_units"],
            memory_mib=table["memory_mib"],
            gpu_budget_mib=table["gpu_budget_mib"],
            max_compute_percent=table.get("max_compute_percent"),
            port=table.get("port"),
            environment=dict(env),
        )
    if not services:
        raise FleetSpecError(f"{source}: no [service.<name>] table; a fleet needs at least one service to plan")
    return FleetSpec(
        name=doc["name"],
        capacities=capacities,
        services=services,
        source=source,
        account=doc.get("account"),
        region=doc.get("region"),
        vpc_id=doc.get("vpc_id"),
    )


def load(path: str | Path) -> FleetSpec:
    """Reads and checks a fleet file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as error:
        raise FleetSpecError(f"{p}: cannot read the fleet file ({error.strerror}); check the path") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise FleetSpecError(f"{p}: not valid TOML ({error})") from None
    return parse(doc, source=str(p))
