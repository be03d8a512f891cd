"""The plan JSON's contract, as one table: every field of ``gpu-fleet-plan.json`` and ``ecs-gpu-sharing plan --json``
with what it means. ``docs/plan-json.md`` is generated from it, and a test holds the JSON the plan writes to it both
ways (no field unlisted, none listed that the plan never writes). Pure Python.

A path names a field from the document's root; ``[]`` steps into each item of a list. Change a field only with a
version note: CI scripts read these files (``plan diff``, ``evaluate --plan``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .errors import PlanError
from .markdown import table

_CAP = "capacities[]"
_GROUP = f"{_CAP}.instances[]"
_GPU = f"{_GROUP}.gpus[]"
_SVC = "services[]"
_ALLOC = f"{_SVC}.allocation"
_COST = "summary.cost"

FIELDS: tuple[tuple[str, str], ...] = (
    ("capacities", "one entry per GPU capacity"),
    (f"{_CAP}.name", "the capacity's name (fleet-file table, construct id or name=)"),
    (f"{_CAP}.kind", "the capacity kind: ec2 (an Auto Scaling group) or managed-instances"),
    (f"{_CAP}.instance_type", "the allowed instance type whose figures the plan uses (the one that holds the least)"),
    (f"{_CAP}.instance_types", "every allowed instance type"),
    (f"{_CAP}.gpus_per_instance", "GPUs on one host"),
    (f"{_CAP}.ec2_gpu_memory_mib", "one GPU's memory as EC2 lists it"),
    (f"{_CAP}.registered_gpu_memory_mib", "one GPU's memory as ECS registers it: the figure in use"),
    (f"{_CAP}.gpu_margin_mib", "per-GPU memory kept free below the registered figure"),
    (f"{_CAP}.gpu_memory_basis", "how sure the registered figure is: measured, table or fallback"),
    (f"{_CAP}.gpu_memory_source", "where the registered figure comes from"),
    (f"{_CAP}.usable_gpu_memory_mib", "what plans may fill on one GPU: registered less margin"),
    (f"{_CAP}.host_cpu_units", "CPU units one host offers to planned tasks (daemons' share taken off)"),
    (f"{_CAP}.host_memory_mib", "memory one host offers to planned tasks (daemons' share taken off)"),
    (f"{_CAP}.daemons", "daemon services whose one task per host the host figures leave out"),
    (f"{_CAP}.min_instances", "instances kept running"),
    (f"{_CAP}.max_instances", "given, or derived so a deployment's surge fits; null on Managed Instances without one"),
    (f"{_CAP}.surge_instances", "instances a rolling deployment's surge needs, as the plan packs it"),
    (
        f"{_CAP}.ecs_placement_instances",
        "instances ECS's own placement needs at the peak of a fleet-wide rollout (core.placement); null where not "
        "modelled (Managed Instances, a capacity whose tasks do not fit)",
    ),
    (
        f"{_CAP}.expected_instances",
        "instances ECS is expected to keep running after a rollout and scale-in of empty ones (the median replay); "
        "null where not modelled",
    ),
    (f"{_CAP}.instance_lower_bound", "no placement of these tasks uses fewer instances"),
    (f"{_CAP}.gpu_lower_bound", "no placement of these tasks uses fewer GPUs"),
    (f"{_CAP}.optimal", "the plan's instances equal the lower bound"),
    (f"{_CAP}.instances", "groups of identical hosts"),
    (f"{_GROUP}.count", "hosts in the group"),
    (f"{_GROUP}.gpus", "each GPU of one host of the group"),
    (f"{_GPU}.tasks", "the tasks on the GPU, by service"),
    (f"{_GPU}.tasks[].service", "the service's name"),
    (f"{_GPU}.tasks[].tasks", "its tasks on this GPU"),
    (f"{_GPU}.tasks[].task_gpu_budget_mib", "one task's GPU memory: the sum of its containers' budgets"),
    (f"{_GPU}.tasks[].containers", "one task's MPS clients (its containers with a budget)"),
    (f"{_GPU}.used_gpu_memory_mib", "the budgets on the GPU, added"),
    (f"{_GPU}.whole", "the GPU is held whole by one task (gpu_count), not shared"),
    (f"{_GROUP}.cpu_units_used", "CPU units the tasks of one host take"),
    (f"{_GROUP}.memory_mib_used", "memory the tasks of one host take"),
    (f"{_GROUP}.tasks_without_gpu", "tasks on the host that use no GPU, by service"),
    (f"{_GROUP}.tasks_without_gpu[].service", "the service's name"),
    (f"{_GROUP}.tasks_without_gpu[].tasks", "its tasks on one host"),
    (f"{_CAP}.cost", "with prices: what the capacity costs; null without a price for its instance type"),
    (f"{_CAP}.cost.instance_type", "the instance type priced"),
    (f"{_CAP}.cost.on_demand_per_hour", "its on-demand price per hour"),
    (f"{_CAP}.cost.per_hour", "at the plan's instances, per hour"),
    (f"{_CAP}.cost.per_month", "at the plan's instances, per month (730 hours)"),
    (f"{_CAP}.cost.at_max_per_hour", "at max_instances, per hour"),
    (f"{_CAP}.cost.at_max_per_month", "at max_instances, per month"),
    (f"{_CAP}.cost.expected_per_hour", "at the instances ECS is expected to keep (the plan's, where not modelled)"),
    (f"{_CAP}.cost.expected_per_month", "the same, per month"),
    ("services", "one entry per planned service"),
    (f"{_SVC}.name", "the service's name in the plan"),
    (f"{_SVC}.capacity", "the capacity it runs on"),
    (f"{_SVC}.tasks", "the count planned: its largest (auto scaling maximum or desired count)"),
    (f"{_SVC}.count_source", "where the count comes from"),
    (f"{_SVC}.max_percent", "its deployment's maximum percent"),
    (f"{_SVC}.surge_tasks", "its tasks at the peak of a rolling deployment"),
    (
        f"{_SVC}.placement",
        "its ECS placement strategies in order ([] is ECS's default: zones, then fewest tasks); null where not "
        "modelled",
    ),
    (f"{_SVC}.placed", "tasks the plan placed (less than tasks when they do not fit)"),
    (f"{_SVC}.task", "one task's shape"),
    (f"{_SVC}.task.cpu_units", "CPU units of one task"),
    (f"{_SVC}.task.memory_mib", "memory of one task"),
    (f"{_SVC}.task.gpu_budgets_mib", "each MPS container's GPU memory budget"),
    (f"{_SVC}.task.whole_gpus", "whole GPUs one task holds"),
    (_ALLOC, "its allocation note, or null"),
    (f"{_ALLOC}.residency_mib", "GPU memory the model keeps resident"),
    (f"{_ALLOC}.peak_working_mib", "peak working GPU memory over the request mix"),
    (f"{_ALLOC}.need_mib", "residency plus peak working memory"),
    (f"{_ALLOC}.headroom_mib", "the task's GPU budget less the need"),
    (f"{_ALLOC}.compute_percent", "the compute share it needs, or null"),
    (f"{_ALLOC}.shared_failure", "what happens when the MPS server or the host restarts"),
    (f"{_ALLOC}.isolation_group", "its isolation group, or null (the common group)"),
    (f"{_ALLOC}.isolate_host", "its group is kept off other groups' hosts"),
    (f"{_ALLOC}.evidence", "what was measured, or null (the budget is a guess)"),
    (f"{_ALLOC}.evidence.peak_mib", "the highest GPU memory measured"),
    (f"{_ALLOC}.evidence.p99_mib", "the 99th percentile measured, or null"),
    (f"{_ALLOC}.evidence.measured_on", "the day it was measured (ISO date)"),
    (f"{_ALLOC}.evidence.source", "how it was measured (evaluate, load-test, ...)"),
    (f"{_ALLOC}.evidence.image", "the image it was measured on, or null"),
    (f"{_ALLOC}.evidence.headroom_mib", "the task's GPU budget less the measured peak"),
    (f"{_SVC}.evidence", "what was measured: the note's evidence, or the service's own; null: the budget is a guess"),
    (f"{_SVC}.evidence.peak_mib", "the highest GPU memory measured"),
    (f"{_SVC}.evidence.p99_mib", "the 99th percentile measured, or null"),
    (f"{_SVC}.evidence.measured_on", "the day it was measured (ISO date)"),
    (f"{_SVC}.evidence.source", "how it was measured (evaluate, load-test, ...)"),
    (f"{_SVC}.evidence.image", "the image it was measured on, or null"),
    (f"{_SVC}.evidence.headroom_mib", "the task's GPU budget less the measured peak"),
    (
        f"{_SVC}.deployed_as",
        "the ECS service as its stack records it, which evaluate reads from CloudFormation; null from the CLI",
    ),
    (f"{_SVC}.deployed_as.stack", "the stack's name"),
    (f"{_SVC}.deployed_as.logical_id", "the service's logical id in that stack"),
    (f"{_SVC}.cost", "with prices: its share of its capacity's cost by GPU memory held; null without"),
    (f"{_SVC}.cost.per_hour", "its share per hour"),
    (f"{_SVC}.cost.per_month", "its share per month"),
    (f"{_SVC}.cost.basis", "how the share is taken: GPU memory held"),
    ("outside_plan", "services on a GPU capacity that the plan cannot count"),
    ("outside_plan[].name", "the service's name"),
    ("outside_plan[].capacity", "the capacity it runs on"),
    ("outside_plan[].reason", "why the plan cannot count it"),
    ("allowances", "what FleetPlan.allow permitted on a GPU host, each with its reason ([] from the CLI)"),
    ("allowances[].resource", "the construct path of the resource permitted"),
    ("allowances[].rule_id", "the allow-list rule it may break"),
    ("allowances[].reason", "why, as given"),
    (
        "not_judged",
        "resources on (or maybe on) a GPU capacity the allow-list could not read, and why ([] from the CLI)",
    ),
    ("not_judged[].resource", "the construct path of the service or task definition"),
    ("not_judged[].reason", "what could not be read"),
    ("findings", "every rule's verdict (docs/rules.md)"),
    ("findings[].rule_id", "the rule's id"),
    ("findings[].level", "error or warning"),
    ("findings[].about", "what the subject is: service or capacity"),
    ("findings[].subject", "the service's or capacity's name"),
    ("findings[].message", "what is wrong, with the numbers, and what to do"),
    ("findings[].acknowledged", "the reason a warning was accepted, or null"),
    ("summary", "the whole fleet"),
    ("summary.instances", "instances of every capacity, added"),
    ("summary.instance_lower_bound", "the capacities' lower bounds, added"),
    ("summary.gpus", "GPUs the plan uses"),
    ("summary.gpu_lower_bound", "the capacities' GPU lower bounds, added"),
    ("summary.whole_gpu_gpus", "GPUs the same tasks would hold without sharing"),
    ("summary.fits", "every task placed and no error"),
    (_COST, "with prices: the fleet's cost; null without"),
    (f"{_COST}.currency", "the prices' currency"),
    (f"{_COST}.region", "the prices' region"),
    (f"{_COST}.prices_retrieved_on", "the day the prices were read (ISO date)"),
    (f"{_COST}.per_hour", "at the plan, per hour"),
    (f"{_COST}.per_month", "at the plan, per month"),
    (f"{_COST}.at_max_per_hour", "at every capacity's max_instances, per hour"),
    (f"{_COST}.at_max_per_month", "at every capacity's max_instances, per month"),
    (f"{_COST}.expected_per_hour", "at the instances ECS is expected to keep after a rollout, per hour"),
    (f"{_COST}.expected_per_month", "the same, per month"),
    (f"{_COST}.unpriced_instance_types", "instance types the prices file has no price for"),
    ("summary.cost_note", "what the cost is based on, or how to get prices"),
)

PATHS = frozenset(path for path, _ in FIELDS)


def paths(doc: Any, prefix: str = "") -> Iterator[str]:
    """Every field path in a plan document (the forms ``FIELDS`` names)."""
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path
            yield from paths(value, path)
    elif isinstance(doc, list):
        for item in doc:
            yield from paths(item, f"{prefix}[]")


def markdown() -> str:
    """``docs/plan-json.md``: the contract as a table."""
    lines = [
        "# The plan JSON",
        "",
        "`cdk.out/gpu-fleet-plan.json` (written by a synth that passed) and `ecs-gpu-sharing plan --json` write the",
        "same document. Generated from `ecs_gpu_sharing.core.plan_contract.FIELDS` by `make docs`; do not edit.",
        "A path names a field from the root; `[]` steps into each item of a list.",
        "",
        *table(("field", "meaning"), ((f"`{path}`", meaning) for path, meaning in FIELDS)),
    ]
    return "\n".join(lines) + "\n"


# Figures a reader divides by or counts with: a plan written by the library never has them out of range, so one that
# does was edited or forged, and is refused in one line rather than dividing by zero.
POSITIVE = frozenset(
    {
        f"{_CAP}.usable_gpu_memory_mib",
        f"{_CAP}.registered_gpu_memory_mib",
        f"{_CAP}.gpus_per_instance",
        f"{_CAP}.host_cpu_units",
        f"{_CAP}.host_memory_mib",
    }
)
NON_NEGATIVE = frozenset(
    {
        f"{_GROUP}.count",
        f"{_GPU}.used_gpu_memory_mib",
        f"{_GPU}.tasks[].tasks",
        f"{_GPU}.tasks[].task_gpu_budget_mib",
        f"{_SVC}.tasks",
        f"{_SVC}.placed",
        f"{_SVC}.surge_tasks",
        f"{_SVC}.task.gpu_budgets_mib[]",
        f"{_SVC}.task.memory_mib",
        f"{_SVC}.task.cpu_units",
        f"{_CAP}.surge_instances",
        f"{_CAP}.min_instances",
    }
)
NULLABLE = frozenset(
    {f"{_CAP}.max_instances", f"{_CAP}.ecs_placement_instances", f"{_CAP}.expected_instances"}
)  # whole numbers from 0, or null where not modelled
LARGEST = 10**9  # no figure of a plan comes near it


def _values(doc: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path, value
            yield from _values(value, path)
    elif isinstance(doc, list):
        for item in doc:
            yield f"{prefix}[]", item
            yield from _values(item, f"{prefix}[]")


def check(doc: Mapping[str, Any], *, source: str) -> None:
    """Refuses, in one ``PlanError`` line, a plan document whose counts and GPU figures are not whole numbers in
    range (``usable_gpu_memory_mib: 0``, a negative count, ``1e300``)."""
    for path, value in _values(doc):
        low = 1 if path in POSITIVE else 0 if path in NON_NEGATIVE or path in NULLABLE else None
        if low is None or (value is None and path in NULLABLE):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= LARGEST:
            raise PlanError(
                f"{source}: {path} is {value!r}, not a whole number from {low} to {LARGEST}; give a plan as the "
                "library wrote it (gpu-fleet-plan.json or plan --json), unedited"
            )
