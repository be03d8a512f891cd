"""The plan document, typed: ``gpu-fleet-plan.json`` (a synth that passed) and ``ecs-gpu-sharing plan --json``.

Each part is a frozen dataclass and each field says what it means where it is declared; the JSON keys are the field
names, in their order. ``PlanDocument.to_json`` writes a document, ``load`` is its one reader (every command that
takes a plan file goes through it, with one set of messages), and ``markdown`` writes ``docs/plan-json.md``. Pure
Python: the builder is ``plan_report.document``, costs are added by ``cost.add_cost``.

Change a field only with a version note: CI scripts read these files (``plan diff``, ``evaluate --plan``). A reader
ignores keys it does not know (a newer writer's), and takes a field marked *optional* as null or empty when an older
plan lacks it; every other field must be there, of its type and in its range.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from . import text
from .errors import GpuSharingError, PlanError
from .files import read_json
from .headroom import ORDER_HEADROOM_PERCENT
from .markdown import table

LARGEST = 10**9  # no whole number of a plan comes near it
FIX = "give a gpu-fleet-plan.json or plan --json output as the library wrote it, unedited"
_MISSING: Any = dataclasses.MISSING


def _field(meaning: str, *, low: int | None = None, optional: bool = False, empty: bool = False) -> Any:
    """A field with its meaning; ``low``: a whole number's least value (a reader divides by or counts with it);
    ``optional``: null where an older plan lacks it; ``empty``: an empty list where an older plan lacks it."""
    metadata = {"doc": meaning, "low": low}
    if optional:
        return dataclasses.field(default=None, metadata=metadata)
    if empty:
        return dataclasses.field(default=(), metadata=metadata)
    return dataclasses.field(metadata=metadata)


class _Part:
    """What every part of the document does: write itself as JSON."""

    @classmethod
    def json_names(cls) -> tuple[str, ...]:
        """The part's fields, in order: what it is written as (``to_json``, and ``files.json_text`` from the part)."""
        names = _NAMES.get(cls)
        if names is None:  # read once a part: dataclasses.fields builds its tuple on each call (thousands a plan)
            names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        return names

    def to_json(self) -> dict[str, Any]:
        return {name: _json(getattr(self, name)) for name in self.json_names()}


_NAMES: dict[type, tuple[str, ...]] = {}  # each part's field names, in order


def _json(value: Any) -> Any:
    if isinstance(value, _Part):
        return value.to_json()
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    return value


@dataclass(frozen=True, kw_only=True)
class GpuTasks(_Part):
    """One service's tasks on one GPU."""

    service: str = _field("the service's name")
    tasks: int = _field("its tasks on this GPU", low=0)
    task_gpu_budget_mib: int = _field("one task's GPU memory: the sum of its containers' budgets", low=0)
    containers: int = _field("one task's MPS clients (its containers with a budget)", low=0)


@dataclass(frozen=True, kw_only=True)
class Gpu(_Part):
    """One GPU of a host."""

    tasks: tuple[GpuTasks, ...] = _field("the tasks on the GPU, by service")
    used_gpu_memory_mib: int = _field("the budgets on the GPU, added", low=0)
    whole: bool = _field("the GPU is held whole by one task (gpu_count), not shared")


@dataclass(frozen=True, kw_only=True)
class HostTasks(_Part):
    """One service's tasks on one host that use no GPU."""

    service: str = _field("the service's name")
    tasks: int = _field("its tasks on one host", low=0)


@dataclass(frozen=True, kw_only=True)
class InstanceGroup(_Part):
    """A group of identical hosts."""

    count: int = _field("hosts in the group", low=0)
    gpus: tuple[Gpu, ...] = _field("each GPU of one host of the group")
    cpu_units_used: int = _field("CPU units the tasks of one host take", low=0)
    memory_mib_used: int = _field("memory the tasks of one host take", low=0)
    tasks_without_gpu: tuple[HostTasks, ...] = _field("tasks on the host that use no GPU, by service", empty=True)


@dataclass(frozen=True, kw_only=True)
class CapacityCost(_Part):
    """What a capacity costs."""

    instance_type: str = _field("the instance type priced")
    on_demand_per_hour: float = _field("its on-demand price per hour")
    per_hour: float = _field("at the plan's instances, per hour")
    per_month: float = _field("at the plan's instances, per month (730 hours)")
    at_max_per_hour: float = _field("at max_instances, per hour")
    at_max_per_month: float = _field("at max_instances, per month")
    expected_per_hour: float | None = _field(
        "at the instances ECS is expected to keep (the plan's, where not modelled)", optional=True
    )
    expected_per_month: float | None = _field("the same, per month", optional=True)


@dataclass(frozen=True, kw_only=True)
class Capacity(_Part):
    """One GPU capacity and how its hosts are filled."""

    name: str = _field("the capacity's name (fleet-file table, construct id or name=)")
    kind: str = _field("the capacity kind: ec2 (an Auto Scaling group) or managed-instances")
    instance_type: str = _field("the allowed instance type whose figures the plan uses (the one that holds the least)")
    instance_types: tuple[str, ...] = _field("every allowed instance type")
    gpus_per_instance: int = _field("GPUs on one host", low=1)
    ec2_gpu_memory_mib: int = _field("one GPU's memory as EC2 lists it")
    registered_gpu_memory_mib: int = _field("one GPU's memory as ECS registers it: the figure in use", low=1)
    gpu_margin_mib: int = _field("per-GPU memory kept free below the registered figure", low=0)
    gpu_memory_basis: str = _field("how sure the registered figure is: measured, table or fallback")
    gpu_memory_source: str = _field("where the registered figure comes from")
    usable_gpu_memory_mib: int = _field("what plans may fill on one GPU: registered less margin", low=1)
    host_cpu_units: int = _field("CPU units one host offers to planned tasks (daemons' share taken off)", low=1)
    host_memory_mib: int = _field(
        "memory one host offers to planned tasks (daemons' share and the agent's ECS_RESERVED_MEMORY taken off)", low=1
    )
    daemons: tuple[str, ...] = _field("daemon services whose one task per host the host figures leave out", empty=True)
    min_instances: int = _field("instances kept running", low=0)
    max_instances: int | None = _field(
        f"given, or derived so a deployment's surge fits, packed and as ECS places it (with {ORDER_HEADROOM_PERCENT}% "
        "headroom); null on Managed Instances without one",
        low=0,
    )
    surge_instances: int = _field("instances a rolling deployment's surge needs, as the plan packs it", low=0)
    ecs_placement_instances: int | None = _field(
        "instances ECS's own placement needs at the peak of fleet-wide rollouts run one after another "
        "(core.placement); null where not modelled (Managed Instances, a capacity whose tasks do not fit)",
        low=0,
        optional=True,
    )
    availability_zones: int | None = _field(
        "Availability Zones its hosts' subnets span, over which ECS's placement is replayed (2 where the plan cannot "
        "read them: `ecs-gpu-sharing plan` on a fleet with a vpc_id); null where not modelled",
        low=1,
        optional=True,
    )
    expected_instances: int | None = _field(
        "instances ECS is expected to keep running after rollouts and scale-in of empty ones (the median replay, at "
        "the given max_instances where there is one); null where not modelled",
        low=0,
        optional=True,
    )
    instance_lower_bound: int = _field("no placement of these tasks uses fewer instances", low=0)
    gpu_lower_bound: int = _field("no placement of these tasks uses fewer GPUs", low=0)
    optimal: bool = _field("the plan's instances equal the lower bound")
    instances: tuple[InstanceGroup, ...] = _field("groups of identical hosts")
    cost: CapacityCost | None = _field(
        "with prices: what the capacity costs; null without a price for its instance type", optional=True
    )

    @property
    def instance_count(self) -> int:
        """Hosts of every group, added."""
        return sum(g.count for g in self.instances)

    @property
    def gpus_used(self) -> int:
        """GPUs holding at least one task."""
        return sum(g.count * sum(1 for gpu in g.gpus if gpu.tasks) for g in self.instances)


@dataclass(frozen=True, kw_only=True)
class TaskFigures(_Part):
    """One task's shape."""

    cpu_units: int = _field("CPU units of one task", low=0)
    memory_mib: int = _field("memory of one task", low=0)
    gpu_budgets_mib: tuple[int, ...] = _field("each MPS container's GPU memory budget", low=0)
    whole_gpus: int = _field("whole GPUs one task holds", low=0)


@dataclass(frozen=True, kw_only=True)
class Evidence(_Part):
    """What was measured of a service's GPU memory."""

    peak_mib: int = _field("the highest GPU memory measured", low=0)
    p99_mib: int | None = _field("the 99th percentile measured, or null", low=0)
    measured_on: str = _field("the day it was measured (ISO date)")
    source: str = _field("how it was measured (evaluate, load-test, ...)")
    image: str | None = _field("the image it was measured on, or null")
    headroom_mib: int = _field("the task's GPU budget less the measured peak")


@dataclass(frozen=True, kw_only=True)
class Allocation(_Part):
    """A service's allocation note: what its budget must cover."""

    residency_mib: int = _field("GPU memory the model keeps resident", low=0)
    peak_working_mib: int = _field("peak working GPU memory over the request mix", low=0)
    need_mib: int = _field("residency plus peak working memory", low=0)
    headroom_mib: int = _field("the task's GPU budget less the need")
    compute_percent: int | None = _field("the compute share it needs, or null", low=0)
    shared_failure: str = _field(
        "what happens when the MPS server or the host restarts, or another client of its GPU faults"
    )
    isolation_group: str | None = _field("its isolation group, or null (the common group)")
    isolate_host: bool = _field("its group is kept off other groups' hosts")
    evidence: Evidence | None = _field("what was measured, or null (the budget is a guess)")


@dataclass(frozen=True, kw_only=True)
class DeployedAs(_Part):
    """Where a service's stack records it."""

    stack: str = _field("the stack's name")
    logical_id: str = _field("the service's logical id in that stack, or in the last of nested_stacks")
    nested_stacks: tuple[str, ...] = _field(
        "for a service of a nested stack: the logical id of each nested stack resource from that stack down to the "
        "service's (a nested stack's name is made at deploy)",
        empty=True,
    )


@dataclass(frozen=True, kw_only=True)
class ServiceCost(_Part):
    """A service's share of its capacity's cost."""

    per_hour: float = _field("its share per hour")
    per_month: float = _field("its share per month")
    basis: str = _field("how the share is taken: GPU memory held")


@dataclass(frozen=True, kw_only=True)
class Service(_Part):
    """One planned service."""

    name: str = _field("the service's name in the plan")
    capacity: str = _field("the capacity it runs on")
    tasks: int = _field("the count planned: its largest (auto scaling maximum or desired count)", low=0)
    count_source: str = _field("where the count comes from")
    max_percent: int = _field(
        "its deployment's maximum percent, as planned (200 for a blue/green, linear or canary deployment)", low=0
    )
    surge_tasks: int = _field("its tasks at the peak of a rolling deployment", low=0)
    placement: tuple[str, ...] | None = _field(
        "its ECS placement strategies in order ([] is ECS's default: zones, then fewest tasks); null where not "
        "modelled",
        optional=True,
    )
    placed: int = _field("tasks the plan placed (less than tasks when they do not fit)", low=0)
    task: TaskFigures = _field("one task's shape")
    allocation: Allocation | None = _field("its allocation note, or null", optional=True)
    evidence: Evidence | None = _field(
        "what was measured: the note's evidence, or the service's own; null: the budget is a guess", optional=True
    )
    deployed_as: DeployedAs | None = _field(
        "the ECS service as its stack records it, which evaluate reads from CloudFormation; null from the CLI",
        optional=True,
    )
    cost: ServiceCost | None = _field(
        "with prices: its share of its capacity's cost by GPU memory held; null without", optional=True
    )


@dataclass(frozen=True, kw_only=True)
class OutsidePlan(_Part):
    """A service on a GPU capacity that the plan cannot count."""

    name: str = _field("the service's name")
    capacity: str = _field("the capacity it runs on")
    reason: str = _field("why the plan cannot count it")


@dataclass(frozen=True, kw_only=True)
class Allowance(_Part):
    """What FleetPlan.allow permitted on a GPU host."""

    resource: str = _field("the construct path of the resource permitted")
    rule_id: str = _field("the allow-list rule it may break")
    reason: str = _field("why, as given")


@dataclass(frozen=True, kw_only=True)
class NotJudged(_Part):
    """A resource the allow-list could not read."""

    resource: str = _field("the construct path of the service or task definition")
    reason: str = _field("what could not be read")


@dataclass(frozen=True, kw_only=True)
class Finding(_Part):
    """One rule's verdict."""

    rule_id: str = _field("the rule's id")
    level: str = _field("error or warning")
    about: str = _field("what the subject is: service or capacity")
    subject: str = _field("the service's or capacity's name")
    message: str = _field("what is wrong, with the numbers, and what to do")
    acknowledged: str | None = _field("the reason a warning was accepted, or null")


@dataclass(frozen=True, kw_only=True)
class FleetCost(_Part):
    """What the fleet costs."""

    currency: str = _field("the prices' currency")
    region: str = _field("the prices' region")
    prices_retrieved_on: str = _field("the day the prices were read (ISO date)")
    per_hour: float = _field("at the plan, per hour")
    per_month: float = _field("at the plan, per month")
    at_max_per_hour: float = _field("at every capacity's max_instances, per hour")
    at_max_per_month: float = _field("at every capacity's max_instances, per month")
    expected_per_hour: float | None = _field(
        "at the instances ECS is expected to keep after rollouts, per hour", optional=True
    )
    expected_per_month: float | None = _field("the same, per month", optional=True)
    unpriced_instance_types: tuple[str, ...] = _field("instance types the prices file has no price for")


@dataclass(frozen=True, kw_only=True)
class Summary(_Part):
    """The whole fleet."""

    instances: int = _field("instances of every capacity, added", low=0)
    instance_lower_bound: int = _field("the capacities' lower bounds, added", low=0)
    gpus: int = _field("GPUs the plan uses", low=0)
    gpu_lower_bound: int = _field("the capacities' GPU lower bounds, added", low=0)
    whole_gpu_gpus: int = _field("GPUs the same tasks would hold without sharing", low=0)
    fits: bool = _field("every task placed and no error")
    cost: FleetCost | None = _field("with prices: the fleet's cost; null without", optional=True)
    cost_note: str = _field("what the cost is based on, or how to get prices")


@dataclass(frozen=True, kw_only=True)
class PlanDocument(_Part):
    """A fleet's plan: its capacities and services, what the rules found, and the totals."""

    capacities: tuple[Capacity, ...] = _field("one entry per GPU capacity")
    services: tuple[Service, ...] = _field("one entry per planned service")
    outside_plan: tuple[OutsidePlan, ...] = _field("services on a GPU capacity that the plan cannot count", empty=True)
    allowances: tuple[Allowance, ...] = _field(
        "what FleetPlan.allow permitted on a GPU host, each with its reason ([] from the CLI)", empty=True
    )
    not_judged: tuple[NotJudged, ...] = _field(
        "resources on (or maybe on) a GPU capacity the allow-list could not read, and why ([] from the CLI)",
        empty=True,
    )
    findings: tuple[Finding, ...] = _field("every rule's verdict (docs/rules.md)", empty=True)
    summary: Summary = _field("the whole fleet")

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.level == "error")


Part = TypeVar("Part", bound=_Part)


def load(doc: Any, *, source: str) -> PlanDocument:
    """The one reader of a plan file's JSON: a ``PlanDocument``, or one ``PlanError`` line naming the file, the field
    (``capacities[].usable_gpu_memory_mib``), its value and what it should be."""
    return _read(PlanDocument, doc, "", source)


def read_file(path: str, option: str = "") -> PlanDocument:
    """A plan file (``option``: the command's option that named it, if one did), read by ``load``; one ``PlanError``
    line naming the file where it cannot be read as JSON."""
    try:
        doc = read_json(path, what="plan", option=option)
    except GpuSharingError as error:
        raise PlanError(f"{error}; {FIX}") from None
    return load(doc, source=f"{option} {path}" if option else path)


def _refuse(source: str, path: str, what: str) -> PlanError:
    return PlanError(f"{source}: not a fleet plan as the library writes it: {path or 'the document'} {what}; {FIX}")


def _shown(value: Any) -> str:
    shown = text.one_line(repr(value))
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _read(cls: type[Part], value: Any, path: str, source: str) -> Part:
    if not isinstance(value, Mapping):
        raise _refuse(source, path, f"is {_shown(value)}, not an object")
    hints = typing.get_type_hints(cls)
    found: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        where = f"{path}.{f.name}" if path else f.name
        if f.name not in value:
            if f.default is _MISSING:
                raise _refuse(source, where, "is missing")
            continue
        found[f.name] = _value(hints[f.name], value[f.name], where, source, f.metadata.get("low"))
    return cls(**found)


def _value(hint: Any, value: Any, path: str, source: str, low: int | None) -> Any:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (hint,) = [a for a in args if a is not type(None)]
        args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list):
            raise _refuse(source, path, f"is {_shown(value)}, not a list")
        return tuple(_value(args[0], item, f"{path}[]", source, low) for item in value)
    if isinstance(hint, type) and issubclass(hint, _Part):
        return _read(hint, value, path, source)
    if hint is bool:
        if not isinstance(value, bool):
            raise _refuse(source, path, f"is {_shown(value)}, not true or false")
        return value
    if hint is int:
        least = -LARGEST if low is None else low
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= LARGEST:
            raise _refuse(source, path, f"is {_shown(value)}, not a whole number from {least} to {LARGEST}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not -LARGEST <= value <= LARGEST:
            raise _refuse(source, path, f"is {_shown(value)}, not a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _refuse(source, path, f"is {_shown(value)}, not text")
        return value
    raise TypeError(f"plan_document: no reader for {hint!r} at {path}")  # a field declared with a type not handled


def _kind(hint: Any, low: int | None) -> str:
    """A field's type in words, for the reference."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(hint) if a is not type(None)]
        return f"{_kind(inner, low)}, or null"
    if typing.get_origin(hint) is tuple:
        return f"list of {_kind(typing.get_args(hint)[0], low)}"
    if isinstance(hint, type) and issubclass(hint, _Part):
        return "object"
    if hint is int:
        return "whole number" if low is None else f"whole number from {low}"
    return {bool: "true or false", float: "number", str: "text"}[hint]


def fields(cls: type[_Part] = PlanDocument, prefix: str = "") -> Iterator[tuple[str, str, str, bool]]:
    """Every field path of the document (``[]`` steps into a list's items) with its type in words, its meaning, and
    whether an older plan may lack it."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        path = f"{prefix}.{f.name}" if prefix else f.name
        hint, low = hints[f.name], f.metadata.get("low")
        yield path, _kind(hint, low), str(f.metadata["doc"]), f.default is not _MISSING
        inner, step = hint, ""
        if typing.get_origin(inner) in (typing.Union, types.UnionType):
            (inner,) = [a for a in typing.get_args(inner) if a is not type(None)]
        if typing.get_origin(inner) is tuple:
            inner, step = typing.get_args(inner)[0], "[]"
        if isinstance(inner, type) and issubclass(inner, _Part):
            yield from fields(inner, path + step)


def markdown() -> str:
    """``docs/plan-json.md``: every field with its type and meaning."""
    lines = [
        "# The plan JSON",
        "",
        "`cdk.out/gpu-fleet-plan.json` (written by a synth that passed) and `ecs-gpu-sharing plan --json` write",
        "the same document. Generated from the dataclasses of `ecs_gpu_sharing.core.plan_document` by `make docs`;",
        "do not edit. A path names a field from the root; `[]` steps into each item of a list.",
        "",
        "Every command that reads a plan (`plan FILE`, `plan diff`, `evaluate --plan`) reads it with",
        "`plan_document.load`: it ignores a key it does not know, takes a field marked *optional* as null (or an",
        "empty list) where an older plan lacks it, and refuses any other field missing, of another type or out of",
        "range, in one line naming it.",
        "",
        *table(
            ("field", "type", "meaning"),
            (
                (f"`{path}`", kind, meaning + (" (*optional*)" if optional else ""))
                for path, kind, meaning, optional in fields()
            ),
        ),
    ]
    return "\n".join(lines) + "\n"
