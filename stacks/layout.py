"""Where each service lives: its services stack (shard), its ALB rule priority and its target group, stable under
edits. Pure Python.

A shard is filled by counted resources, not by a service count, up to ``STACK_RESOURCE_HEADROOM`` of
CloudFormation's 500. Membership and priorities are kept in a layout file beside the fleet file
(``fleet.layout.json`` for ``fleet.toml``), which the app writes when it changes and the team commits, as CDK does
with ``cdk.context.json``: adding, removing or reordering services never moves another service to another stack
(CloudFormation would delete and recreate it, restarting its tasks) nor renumbers its listener rule (two rules
cannot hold one priority while CloudFormation updates them one by one).

A service moved to another load balancer gets a new target group and a free priority there. A target group serves one
load balancer (Elastic Load Balancing User Guide, "Create a target group": "To use a target group with a load
balancer, you must verify that the target group is not in use by a listener for any other load balancer"), and
CloudFormation makes the new route before it deletes the old one: the same group on both would be refused
(TargetGroupAssociationLimit) and the stack rolled back. So the layout records each service's balancer, and counts
its moves in the target group's construct id.

It also records whether each balancer faces the internet. CloudFormation replaces a balancer whose scheme changes
(``Scheme`` is a create-only property), and its listener with it; the services stacks reach the listener through
``Fn::GetStackOutput``, read only when a stack deploys, and their templates do not change, so they would not be
deployed again and would route to the old listener. A scheme that changes under one name is refused: a new name is a
new balancer whose outputs are new, and its services move to it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecs_gpu_sharing import RESOURCES_PER_STACK, STACK_RESOURCE_HEADROOM, FleetSpecError
from ecs_gpu_sharing.core.fleet import AWSVPC, ServiceSpec

LAYOUT_VERSION = 1
PRIORITY_STEP = 10
STACK_OVERHEAD = 1  # AWS::CDK::Metadata
SHARD_BUDGET = int(RESOURCES_PER_STACK.number * STACK_RESOURCE_HEADROOM) - STACK_OVERHEAD


def service_resources(spec: ServiceSpec, *, service_connect: bool) -> int:
    """An upper bound of the CloudFormation resources the fleet app writes for one service (a test holds it to the
    synthesized count): task definition, task and execution roles with their policies, log group, service, route,
    scaling, Service Connect's log group and an awsvpc service's security group with its rules."""
    count = 6  # task definition, task role, execution role and its policy, log group, service
    if spec.model_bucket or spec.task_role_statements:
        count += 1  # the task role's policy
    if spec.load_balancer is not None:
        count += 2  # target group, and a listener rule (ALB) or a listener (NLB)
    if spec.network_mode == AWSVPC:
        # Its security group and the rules on it: the balancer's way in, Service Connect's to a listener (an ALB's
        # way out to its awsvpc targets is one rule in the cluster stack).
        count += 1 + (spec.load_balancer is not None) + (service_connect and spec.port is not None)
    if spec.max_tasks is not None:
        count += 1 + sum(
            x is not None for x in (spec.scale_on_cpu_percent, spec.scale_on_requests_per_target, spec.scale_on_metric)
        )
    if service_connect:
        count += 1  # Service Connect's log group
    return count


@dataclass(frozen=True)
class Layout:
    shards: Mapping[str, int]  # service name -> shard number, from 1
    priorities: Mapping[str, int]  # service name -> its ALB listener rule's priority
    balancers: Mapping[str, str] = field(default_factory=dict)  # service name -> the load balancer it is routed by
    targets: Mapping[str, int] = field(default_factory=dict)  # service name -> its moves between balancers (absent: 0)
    schemes: Mapping[str, bool] = field(default_factory=dict)  # balancer name -> internet-facing when last synthesized

    def to_json(self) -> str:
        doc = {
            "version": LAYOUT_VERSION,
            "comment": "written by the fleet app: which services stack holds each service, each ALB rule's priority, "
            "and the balancer each service is routed by (a move gets a new target group); commit it. Edit a service's "
            "shard or priority here to move it on purpose.",
            "services": {
                name: {
                    "shard": self.shards[name],
                    **({"priority": self.priorities[name]} if name in self.priorities else {}),
                    **({"load_balancer": self.balancers[name]} if name in self.balancers else {}),
                    **({"target_group": self.targets[name]} if self.targets.get(name) else {}),
                }
                for name in sorted(self.shards)
            },
            **(
                {"load_balancers": {n: {"internet_facing": self.schemes[n]} for n in sorted(self.schemes)}}
                if self.schemes
                else {}
            ),
        }
        return json.dumps(doc, indent=2) + "\n"

    def shard_members(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for name, shard in self.shards.items():
            out.setdefault(shard, []).append(name)
        return dict(sorted(out.items()))


def plan_layout(
    services: Sequence[ServiceSpec],
    previous: Layout | None,
    *,
    application_balancers: frozenset[str] = frozenset(),
    internet_facing: Mapping[str, bool] | None = None,
    service_connect: bool = False,
    budget: int = SHARD_BUDGET,
) -> Layout:
    """Keeps each known service's shard and priority; places new services, in file order, in the lowest shard with
    room (by counted resources), else a new one, and gives a new ALB route the next priority on its balancer. A
    service routed by another balancer than the layout records is a new route there, through a new target group."""
    previous = previous or Layout({}, {})
    names = {s.name for s in services}
    shards = {n: s for n, s in previous.shards.items() if n in names}
    priorities = {n: p for n, p in previous.priorities.items() if n in names}
    targets = {n: t for n, t in previous.targets.items() if n in names}
    balancers: dict[str, str] = {}
    by_name = {s.name: s for s in services}
    for spec in services:
        if spec.load_balancer is None:
            targets.pop(spec.name, None)  # its group goes; one made later is new anyway
            continue
        was = previous.balancers.get(spec.name)
        if was is not None and was != spec.load_balancer:
            targets[spec.name] = targets.get(spec.name, 0) + 1
            priorities.pop(spec.name, None)
        balancers[spec.name] = spec.load_balancer

    def size(name: str) -> int:
        return service_resources(by_name[name], service_connect=service_connect)

    used: dict[int, int] = {}
    for name, shard in shards.items():
        used[shard] = used.get(shard, 0) + size(name)
    for spec in services:
        if spec.name not in shards:
            need = size(spec.name)
            shard = next((k for k in sorted(used) if used[k] + need <= budget), max(used, default=0) + 1)
            shards[spec.name] = shard
            used[shard] = used.get(shard, 0) + need
        if spec.load_balancer in application_balancers and spec.name not in priorities:
            taken = [p for n, p in priorities.items() if by_name[n].load_balancer == spec.load_balancer]
            priorities[spec.name] = max(taken, default=0) + PRIORITY_STEP
        elif spec.load_balancer not in application_balancers:
            priorities.pop(spec.name, None)
    return Layout(shards, priorities, balancers, targets, dict(internet_facing or {}))


def layout_path(fleet_file: Path) -> Path:
    return fleet_file.with_name(f"{fleet_file.stem}.layout.json")


def read_layout(path: Path) -> Layout | None:
    """The layout file, or None when there is none yet; a malformed one is refused, naming the file."""
    if not path.is_file():
        return None
    try:
        doc: Any = json.loads(path.read_text())
        if (
            not isinstance(doc, dict)
            or doc.get("version") != LAYOUT_VERSION
            or not isinstance(doc.get("services"), dict)
        ):
            raise ValueError(f"expected version {LAYOUT_VERSION} and a services table")
        shards: dict[str, int] = {}
        priorities: dict[str, int] = {}
        balancers: dict[str, str] = {}
        targets: dict[str, int] = {}
        schemes: dict[str, bool] = {}
        recorded = doc.get("load_balancers", {})
        if not isinstance(recorded, dict):
            raise ValueError("load_balancers must be a table of balancers")
        for name, entry in recorded.items():
            facing = entry.get("internet_facing") if isinstance(entry, dict) else None
            if not isinstance(facing, bool):
                raise ValueError(f"load_balancers.{name}.internet_facing must be true or false")
            schemes[name] = facing
        for name, entry in doc["services"].items():
            shard = entry.get("shard") if isinstance(entry, dict) else None
            if not isinstance(shard, int) or isinstance(shard, bool) or shard < 1:
                raise ValueError(f"services.{name}.shard must be an integer >= 1")
            shards[name] = shard
            if "priority" in entry:
                priority = entry["priority"]
                if not isinstance(priority, int) or isinstance(priority, bool) or not 1 <= priority <= 50000:
                    raise ValueError(f"services.{name}.priority must be an integer from 1 to 50000")
                priorities[name] = priority
            if "load_balancer" in entry:
                if not isinstance(entry["load_balancer"], str):
                    raise ValueError(f"services.{name}.load_balancer must be a load balancer's name")
                balancers[name] = entry["load_balancer"]
            if "target_group" in entry:
                moves = entry["target_group"]
                if not isinstance(moves, int) or isinstance(moves, bool) or moves < 0:
                    raise ValueError(f"services.{name}.target_group must be an integer >= 0")
                targets[name] = moves
    except (ValueError, OSError) as error:
        raise FleetSpecError(
            f"{path}: not a layout file the fleet app can read ({error}); fix it, or delete it to lay the services "
            "out afresh (every service may then move stacks)"
        ) from None
    return Layout(shards, priorities, balancers, targets, schemes)


def check_schemes(previous: Layout | None, internet_facing: Mapping[str, bool], path: Path | None) -> None:
    """A balancer keeps its scheme under its name (the module's docstring says why)."""
    for name, facing in sorted(internet_facing.items()):
        was = previous.schemes.get(name) if previous is not None else None
        if was is not None and was != facing:
            raise FleetSpecError(
                f"{path or 'layout'}: load_balancer.{name}: internet_facing was {str(was).lower()} when last "
                f"synthesized, and is {str(facing).lower()}: CloudFormation replaces a balancer whose scheme changes "
                "(a new DNS name), and the services stacks, whose templates do not change, would not be deployed "
                "again and would keep routing to the old listener; give the balancer a new name instead (its "
                "services move to it through new target groups)"
            )


def check_priorities(layout: Layout, services: Sequence[ServiceSpec], path: Path | None) -> None:
    """Two services on one balancer cannot share a priority (an edited layout file could say so)."""
    seen: dict[tuple[str | None, int], str] = {}
    by_name = {s.name: s for s in services}
    for name, priority in sorted(layout.priorities.items()):
        key = (by_name[name].load_balancer, priority)
        if key in seen:
            raise FleetSpecError(
                f"{path or 'layout'}: services {seen[key]} and {name} both hold priority {priority} on load balancer "
                f"{key[0]}; give one another priority"
            )
        seen[key] = name


def write_layout(path: Path, layout: Layout) -> bool:
    """Writes the layout when it changed, atomically, keeping an existing file's mode. Returns whether it wrote."""
    text = layout.to_json()
    if path.is_file() and path.read_text() == text:
        return False
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
