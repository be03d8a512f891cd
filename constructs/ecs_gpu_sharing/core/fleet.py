"""The fleet file (``fleet.toml``): capacities and services, read with the standard library. Pure Python.

Its keys are one table (:data:`TOP`, :data:`CAPACITY`, :data:`SERVICE`) from which the parser checks and the
JSON Schema editors use (:func:`json_schema`) is generated, so the two cannot drift. Every problem of a file is
reported at once, one line each, naming the file and the key, the value seen, the limit and what to do.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ami_release import DEFAULT_AMI_RELEASE, check_release
from .capacity_facts import HostFacts, host_facts
from .errors import FleetSpecError, GpuSharingError
from .gpu_memory import DEFAULT_GPU_MARGIN_MIB
from .mps import GPU_ENVIRONMENT, GPU_ENVIRONMENT_REASON, MpsShare
from .planner import EC2, KINDS, MANAGED_INSTANCES, TASK_RULES, CapacityInput, ServiceInput
from .quotas import MAX_INSTANCES_PER_CLUSTER, MAX_TASKS_PER_SERVICE
from .rules import assess
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
    kind: str = EC2  # or MANAGED_INSTANCES
    ami_release: str = DEFAULT_AMI_RELEASE
    ami_release_verified: bool = False
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
    command: tuple[str, ...] = ()
    health_check: tuple[str, ...] = ()
    shm_size_mib: int | None = None
    stop_timeout_seconds: int | None = None
    secrets: Mapping[str, str] = field(default_factory=dict)  # variable name -> ssm:NAME or secretsmanager:NAME
    model_bucket: str | None = None
    max_tasks: int | None = None  # task auto scaling maximum; desired_count is the minimum
    scale_on_cpu_percent: int | None = None

    @property
    def largest_count(self) -> tuple[int, str]:
        """The count the plan counts, and where it comes from (as the synth-time plan reads the service)."""
        if self.max_tasks is not None and self.max_tasks > self.desired_count:
            return self.max_tasks, "auto scaling maximum"
        return self.desired_count, "desired count"

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
            out.append(
                CapacityInput.from_facts(cap.name, cap.facts, cap.max_instances, cap.min_instances, kind=cap.kind)
            )
        return out

    def service_inputs(self) -> list[ServiceInput]:
        return [
            ServiceInput(
                name=s.name,
                capacity=s.capacity,
                shape=s.shape(self.source),
                tasks=s.largest_count[0],
                count_source=s.largest_count[1],
            )
            for s in self.services.values()
        ]


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8}([0-9a-f]{9})?$")
_IMAGE = re.compile(r"^\S+$")
_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?P<cn>\.cn)?/"
    r"(?P<repository>[a-z0-9._/-]+?)(?:@(?P<digest>sha256:[0-9a-f]{64})|:(?P<tag>[A-Za-z0-9_.-]+))?$"
)


@dataclass(frozen=True)
class EcrImage:
    """A private ECR image: the app grants the task's execution role pulls from exactly this repository."""

    account: str
    region: str
    partition: str
    repository: str
    reference: str  # a tag, or a digest (sha256:...)

    @property
    def repository_arn(self) -> str:
        return f"arn:{self.partition}:ecr:{self.region}:{self.account}:repository/{self.repository}"


def ecr_image(image: str) -> EcrImage | None:
    """The ECR repository and tag or digest of ``image``; ``None`` for an image of another registry."""
    match = _ECR_IMAGE.match(image)
    if match is None:
        return None
    return EcrImage(
        account=match["account"],
        region=match["region"],
        partition="aws-cn" if match["cn"] else "aws",
        repository=match["repository"],
        reference=match["digest"] or match["tag"] or "latest",
    )


@dataclass(frozen=True)
class Key:
    """One key of the fleet file: its type, whether it is required, its range or pattern, and what it means."""

    name: str
    kind: type
    required: bool
    doc: str
    low: int | None = None
    high: int | None = None
    high_why: str = ""  # the quota or fact behind ``high``
    pattern: re.Pattern[str] | None = None
    example: str = ""
    default: Any = None


TOP = (
    Key("name", str, True, "prefixes the stacks", pattern=_NAME, example="models"),
    Key("account", str, False, "with region: an environment-bound app", pattern=_ACCOUNT, example="123456789012"),
    Key("region", str, False, "with account: an environment-bound app", pattern=_REGION, example="us-east-1"),
    Key("vpc_id", str, False, "an existing VPC instead of a new one", pattern=_VPC_ID, example="vpc-0123456789abcdef0"),
    Key("capacity", dict, True, "the GPU capacities, one table each"),
    Key("service", dict, True, "the services, one table each"),
)
CAPACITY = (
    Key(
        "kind",
        str,
        False,
        "ec2 (an Auto Scaling group on a pinned AMI) or managed-instances (ECS Managed Instances)",
        pattern=re.compile("^(" + "|".join(KINDS) + ")$"),
        example=MANAGED_INSTANCES,
        default=EC2,
    ),
    Key("instance_types", list, True, "GPU instance types of one GPU model"),
    Key("ami_release", str, False, "the AL2023 GPU AMI release (YYYYMMDD)", default=DEFAULT_AMI_RELEASE),
    Key(
        "ami_release_verified",
        bool,
        False,
        "true when `ecs-gpu-sharing ami verify` found a release the library does not list",
        default=False,
    ),
    Key(
        "min_instances",
        int,
        False,
        "instances kept running",
        low=0,
        high=MAX_INSTANCES_PER_CLUSTER,
        high_why='the ECS quota "container instances per cluster"',
        default=0,
    ),
    Key(
        "max_instances",
        int,
        False,
        "the most instances; derived from the plan when left out",
        low=1,
        high=MAX_INSTANCES_PER_CLUSTER,
        high_why='the ECS quota "container instances per cluster"',
    ),
    Key(
        "gpu_margin_mib",
        int,
        False,
        "per-GPU memory kept free below what ECS registers",
        low=0,
        default=DEFAULT_GPU_MARGIN_MIB,
    ),
    Key("ecs_gpu_memory_mib", int, False, "one GPU as your cluster's ECS registers it (measured)", low=1),
)
SERVICE = (
    Key("capacity", str, True, "a [capacity.<name>] of this file"),
    Key("image", str, True, "the container image", pattern=_IMAGE, example="my-registry/embedder:1.4"),
    Key(
        "desired_count",
        int,
        True,
        "tasks to run",
        low=0,
        high=MAX_TASKS_PER_SERVICE,
        high_why='the ECS quota "tasks per service"',
    ),
    Key(
        "cpu_units",
        int,
        True,
        "CPU units of the container (1024 = 1 vCPU)",
        low=128,
        high=196608,
        high_why="192 vCPUs, the most of any GPU instance",
    ),
    Key(
        "memory_mib",
        int,
        True,
        "host memory, the container's hard limit",
        low=6,
        high=4194304,
        high_why="4 TiB, more than any GPU instance has",
    ),
    Key(
        "gpu_budget_mib",
        int,
        True,
        "the container's MPS GPU memory budget",
        low=1,
        high=1048576,
        high_why="1 TiB, more than any GPU has",
    ),
    Key(
        "max_tasks",
        int,
        False,
        "task auto scaling: the most tasks (desired_count is the least); the plan counts this many",
        low=1,
        high=MAX_TASKS_PER_SERVICE,
        high_why='the ECS quota "tasks per service"',
    ),
    Key("scale_on_cpu_percent", int, False, "with max_tasks: target tracking on the service's CPU", low=1, high=100),
    Key("max_compute_percent", int, False, "an MPS compute ceiling, not a reservation", low=1, high=100),
    Key("port", int, False, "container port", low=1, high=65535),
    Key("environment", dict, False, "environment variables (strings); not NVIDIA_*, CUDA_VISIBLE_DEVICES, CUDA_MPS_*"),
    Key("command", list, False, "the container's command, a list of strings (the image's by default)"),
    Key(
        "health_check",
        list,
        False,
        'a container health check command, such as ["CMD-SHELL", "curl -f localhost:8080/health"]',
    ),
    Key(
        "shm_size_mib",
        int,
        False,
        "shared memory (/dev/shm) for the container, as vLLM and PyTorch data loaders need",
        low=1,
        high=4194304,
        high_why="4 TiB, more than any GPU instance has",
    ),
    Key(
        "stop_timeout_seconds",
        int,
        False,
        "seconds a container gets to stop before it is killed",
        low=2,
        high=120,
        high_why="ECS's most for stopTimeout",
    ),
    Key("secrets", dict, False, "variable name -> 'ssm:/parameter/name' or 'secretsmanager:secret-name'"),
    Key(
        "model_bucket",
        str,
        False,
        "an S3 bucket of model weights the task may read",
        pattern=re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"),
        example="team-model-weights",
    ),
)
_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "a table", bool: "true or false"}
_JSON_TYPES = {str: "string", int: "integer", list: "array", dict: "object", bool: "boolean"}


class _Problems:
    """Every problem of one file, collected so they are reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, message: str) -> None:
        self.lines.append(f"{self.source}: {message}")

    def raise_if_any(self) -> None:
        if self.lines:
            raise FleetSpecError("\n".join(dict.fromkeys(self.lines)))


def _check_table(problems: _Problems, where: str, table: Mapping[str, Any], keys: tuple[Key, ...]) -> dict[str, Any]:
    """The table's well-typed, in-range values; every problem is added to ``problems``."""
    known = {k.name: k for k in keys}
    good: dict[str, Any] = {}
    for name in table:
        if name not in known:
            shown = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else repr(name)
            problems.add(f"unknown key {where}{shown}; the keys here are: {', '.join(known)}")
    for key in keys:
        if key.name not in table:
            if key.required:
                problems.add(f"missing key {where}{key.name} ({_TYPE_NAMES[key.kind]}): {key.doc}")
            continue
        value = table[key.name]
        if (isinstance(value, bool) and key.kind is not bool) or not isinstance(value, key.kind):
            problems.add(f"{where}{key.name} must be {_TYPE_NAMES[key.kind]}, got {value!r} ({type(value).__name__})")
            continue
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and ((key.low is not None and value < key.low) or (key.high is not None and value > key.high))
        ):
            span = f"from {key.low} to {key.high}" if key.high is not None else f">= {key.low}"
            why = f" ({key.high_why})" if key.high is not None and value > key.high and key.high_why else ""
            problems.add(f"{where}{key.name} must be {span}{why}, got {value}")
            continue
        if key.pattern is not None and isinstance(value, str) and not key.pattern.match(value):
            problems.add(f"{where}{key.name} {value!r} is malformed; write it like {key.example!r}")
            continue
        good[key.name] = value
    return good


def _check_name(problems: _Problems, kind: str, name: str) -> bool:
    if _NAME.match(name):
        return True
    problems.add(
        f"{kind}.{name!r} is not a usable name; use letters, digits and '-', starting with a letter, at most 40 "
        "characters"
    )
    return False


def _capacities(problems: _Problems, tables: Mapping[str, Any]) -> dict[str, CapacitySpec]:
    capacities: dict[str, CapacitySpec] = {}
    for name, table in tables.items():
        where = f"capacity.{name}."
        if not _check_name(problems, "capacity", name):
            continue
        if not isinstance(table, dict):
            problems.add(f"capacity.{name} must be a table")
            continue
        before = len(problems.lines)
        good = _check_table(problems, where, table, CAPACITY)
        types = good.get("instance_types")
        if types is not None and (not types or not all(isinstance(t, str) for t in types)):
            problems.add(f"{where}instance_types must be a non-empty list of strings, got {types!r}")
            types = None
        kind = good.get("kind", EC2)
        release = good.get("ami_release", DEFAULT_AMI_RELEASE)
        if kind == MANAGED_INSTANCES:
            for key in ("ami_release", "ami_release_verified", "min_instances"):
                if key in table:
                    why = (
                        "AWS owns and patches the host image there: there is no AMI to pin"
                        if key.startswith("ami")
                        else "Managed Instances keeps no minimum of hosts"
                    )
                    problems.add(f'{where}{key} does not apply to kind = "managed-instances": {why}; remove it')
        else:
            try:
                check_release(release, verified=good.get("ami_release_verified", False))
            except GpuSharingError as error:
                problems.add(f"{where}ami_release: {error}")
        min_i, max_i = good.get("min_instances", 0), good.get("max_instances")
        if max_i is not None and max_i < min_i:
            problems.add(
                f"{where}max_instances {max_i} is below min_instances {min_i}; raise it or lower min_instances"
            )
        if types is None or len(problems.lines) > before:
            continue
        try:
            facts = host_facts(
                types,
                gpu_margin_mib=good.get("gpu_margin_mib", DEFAULT_GPU_MARGIN_MIB),
                ecs_gpu_memory_mib=good.get("ecs_gpu_memory_mib"),
                owner=f"capacity.{name}",
            )
        except GpuSharingError as error:
            problems.add(str(error))
            continue
        capacities[name] = CapacitySpec(
            name=name,
            instance_types=tuple(types),
            kind=kind,
            ami_release=release,
            ami_release_verified=good.get("ami_release_verified", False),
            min_instances=min_i,
            max_instances=max_i,
            ecs_gpu_memory_mib=good.get("ecs_gpu_memory_mib"),
            facts=facts,
        )
    return capacities


def _environment(problems: _Problems, where: str, env: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in env.items():
        if not _ENV_NAME.match(key):
            problems.add(
                f"{where}environment key {key!r} is not a usable variable name; use letters, digits and '_', not "
                "starting with a digit"
            )
        elif GPU_ENVIRONMENT.match(key):
            problems.add(f"{where}environment.{key} would steer the GPU: {GPU_ENVIRONMENT_REASON}")
        elif not isinstance(value, str):
            problems.add(f"{where}environment.{key} must be a string, got {value!r}")
        else:
            out[key] = value
    return out


def _services(
    problems: _Problems, tables: Mapping[str, Any], capacities: Mapping[str, Any], declared: Sequence[str]
) -> dict[str, ServiceSpec]:
    """The services; one on a capacity that is declared but broken is left out (its capacity's problem says why)."""
    services: dict[str, ServiceSpec] = {}
    for name, table in tables.items():
        where = f"service.{name}."
        if not _check_name(problems, "service", name):
            continue
        if not isinstance(table, dict):
            problems.add(f"service.{name} must be a table")
            continue
        before = len(problems.lines)
        good = _check_table(problems, where, table, SERVICE)
        capacity = good.get("capacity")
        if capacity is not None and capacity not in declared:
            problems.add(
                f"{where}capacity names {capacity!r}, which is not defined; defined capacities: "
                f"{', '.join(declared) or '(none)'}"
            )
        env = _environment(problems, where, good.get("environment", {}))
        if "max_tasks" in good and "desired_count" in good and good["max_tasks"] < good["desired_count"]:
            problems.add(
                f"{where}max_tasks {good['max_tasks']} is below desired_count {good['desired_count']} (the least); "
                "raise max_tasks"
            )
        if "scale_on_cpu_percent" in good and "max_tasks" not in good:
            problems.add(f"{where}scale_on_cpu_percent needs max_tasks (the most tasks scaling may reach)")
        if len(problems.lines) > before or capacity not in capacities:
            continue
        services[name] = ServiceSpec(
            name=name,
            capacity=good["capacity"],
            image=good["image"],
            desired_count=good["desired_count"],
            cpu_units=good["cpu_units"],
            memory_mib=good["memory_mib"],
            gpu_budget_mib=good["gpu_budget_mib"],
            max_compute_percent=good.get("max_compute_percent"),
            port=good.get("port"),
            environment=env,
            command=_strings(problems, f"{where}command", good.get("command", [])),
            health_check=_strings(problems, f"{where}health_check", good.get("health_check", [])),
            shm_size_mib=good.get("shm_size_mib"),
            stop_timeout_seconds=good.get("stop_timeout_seconds"),
            secrets=_secrets(problems, where, good.get("secrets", {}), env),
            model_bucket=good.get("model_bucket"),
            max_tasks=good.get("max_tasks"),
            scale_on_cpu_percent=good.get("scale_on_cpu_percent"),
        )
    return services


def _strings(problems: _Problems, where: str, values: list[Any]) -> tuple[str, ...]:
    if not all(isinstance(v, str) and v for v in values):
        problems.add(f"{where} must be a list of non-empty strings, got {values!r}")
        return ()
    return tuple(values)


_SECRET = re.compile(r"^(ssm:/[A-Za-z0-9_.\-/]+|secretsmanager:[A-Za-z0-9/_+=.@\-]+)$")


def _secrets(problems: _Problems, where: str, secrets: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for name, ref in secrets.items():
        if not _ENV_NAME.match(name) or GPU_ENVIRONMENT.match(name):
            problems.add(f"{where}secrets key {name!r} is not a usable variable name (or would steer the GPU)")
        elif name in env:
            problems.add(f"{where}secrets.{name} is also in environment; give each variable once")
        elif not isinstance(ref, str) or not _SECRET.match(ref):
            problems.add(
                f"{where}secrets.{name} must be 'ssm:/parameter/name' or 'secretsmanager:secret-name', got {ref!r}"
            )
        else:
            out[name] = ref
    return out


# Which fleet-file key a fit rule's finding is about, so the message names what to edit.
_RULE_KEYS = {
    "ecs-gpu-sharing:TaskExceedsGpuMemory": "gpu_budget_mib",
    "ecs-gpu-sharing:TaskExceedsHostCpu": "cpu_units",
    "ecs-gpu-sharing:TaskExceedsHostMemory": "memory_mib",
}


def parse(doc: Mapping[str, Any], *, source: str = "<fleet>") -> FleetSpec:
    """A fleet spec from a parsed TOML document; refuses anything malformed, every problem at once, each naming
    ``source`` and the key. A task that can never fit its capacity is refused here too, naming the key to edit."""
    problems = _Problems(source)
    if not isinstance(doc, Mapping):
        raise FleetSpecError(f"{source}: not a TOML table of keys")
    top = _check_table(problems, "", doc, TOP)
    if ("account" in doc) != ("region" in doc):
        problems.add("account and region go together; give both, or neither for an offline synth")
    if "vpc_id" in doc and "account" not in doc:
        problems.add("vpc_id needs account and region (the VPC is looked up in that account at synth)")
    capacities = _capacities(problems, top.get("capacity", {}))
    if "capacity" in top and not top["capacity"]:
        problems.add("no [capacity.<name>] table; a fleet needs at least one capacity")
    declared = [name for name in top.get("capacity", {}) if isinstance(name, str) and _NAME.match(name)]
    services = _services(problems, top.get("service", {}), capacities, declared)
    if "service" in top and not top["service"]:
        problems.add("no [service.<name>] table; a fleet needs at least one service to plan")
    problems.raise_if_any()
    spec = FleetSpec(
        name=top["name"],
        capacities=capacities,
        services=services,
        source=source,
        account=top.get("account"),
        region=top.get("region"),
        vpc_id=top.get("vpc_id"),
    )
    task_rules = {rule.rule_id for rule in TASK_RULES}
    for finding in assess(spec.capacity_inputs(), spec.service_inputs()).errors:
        if finding.rule_id not in task_rules:
            continue  # counts against max_instances: the plan shows them, with the plan
        key = _RULE_KEYS.get(finding.rule_id, "")
        where = f"{finding.kind}.{finding.subject}" + (f".{key}" if key else "")
        problems.add(f"{where}: {finding.message} [{finding.rule_id}]")
    problems.raise_if_any()
    return spec


def load(path: str | Path) -> FleetSpec:
    """Reads and checks a fleet file."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except IsADirectoryError:
        raise FleetSpecError(f"{p}: is a folder, not a fleet file; give the path of a .toml file") from None
    except OSError as error:
        raise FleetSpecError(f"{p}: cannot read the fleet file ({error.strerror}); check the path") from None
    except UnicodeDecodeError as error:
        raise FleetSpecError(f"{p}: not UTF-8 text (byte {error.start}); save the fleet file as UTF-8") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise FleetSpecError(f"{p}: not valid TOML ({error})") from None
    return parse(doc, source=str(p))


def json_schema() -> dict[str, Any]:
    """The fleet file's JSON Schema (draft 2020-12), generated from the key table: for editors (taplo, Even Better
    TOML) that complete and check keys. ``fleet.schema.json`` at the repository root is this, committed."""

    def props(keys: tuple[Key, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in keys:
            p: dict[str, Any] = {"type": _JSON_TYPES[k.kind], "description": k.doc}
            if k.low is not None:
                p["minimum"] = k.low
            if k.high is not None:
                p["maximum"] = k.high
            if k.pattern is not None:
                p["pattern"] = k.pattern.pattern
            if k.default is not None:
                p["default"] = k.default
            if k.name == "instance_types":
                p["items"] = {"type": "string"}
                p["minItems"] = 1
            if k.name == "environment":
                p["additionalProperties"] = {"type": "string"}
                p["propertyNames"] = {"pattern": _ENV_NAME.pattern, "not": {"pattern": GPU_ENVIRONMENT.pattern}}
            out[k.name] = p
        return out

    def table(keys: tuple[Key, ...]) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": [k.name for k in keys if k.required],
            "properties": props(keys),
        }

    root = table(TOP)
    root["properties"]["capacity"] = {
        "type": "object",
        "description": "the GPU capacities, one table each",
        "minProperties": 1,
        "propertyNames": {"pattern": _NAME.pattern},
        "additionalProperties": table(CAPACITY),
    }
    root["properties"]["service"] = {
        "type": "object",
        "description": "the services, one table each",
        "minProperties": 1,
        "propertyNames": {"pattern": _NAME.pattern},
        "additionalProperties": table(SERVICE),
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ecs-gpu-sharing fleet file",
        "description": "Generated by `ecs-gpu-sharing fleet schema`; do not edit.",
        **root,
    }
