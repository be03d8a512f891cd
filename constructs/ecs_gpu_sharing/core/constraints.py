"""The placement constraints the plan understands. Pure Python.

ECS places a service's tasks only on hosts its ``memberOf`` expressions match ("Amazon ECS task placement
constraints"). The plan models two kinds: the isolation groups' terms, which keep a group's services off the hosts of
the others' (the plan keeps the groups apart itself), and the MPS capability, which every host of a GPU capacity has.
Any other expression narrows the hosts in a way the plan does not count (``PlacementConstraintNotPlanned``).

Nor does the plan replay ECS's Availability Zone rebalancing, which moves a service's running tasks between zones
(``zone_rebalancing``: where ECS does it, ``ZoneRebalancingNotReplayed``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .mps import MPS_HOSTS_EXPRESSION
from .placement_strategies import SPREAD_ZONE, ZONE_ATTRIBUTE

ISOLATION_JOIN = " and "


def isolation_term(ecs_service_name: str) -> str:
    """The memberOf term that keeps a service off the hosts running ``ecs_service_name``'s tasks: an isolation group's
    services are kept apart from each other group's by one such term each, joined by ISOLATION_JOIN."""
    return f"not(task:group == service:{ecs_service_name})"


_ISOLATION_TERM = re.compile(r"^not\(task:group == service:[^()\s]+\)$")


def planned_member_of(expression: str) -> bool:
    """Whether the plan models what a memberOf ``expression`` does: isolation groups' terms (the plan keeps the groups
    apart itself) and the MPS capability, which every host of a GPU capacity has. Any other narrows the hosts ECS may
    use in a way the plan does not count."""
    if expression.strip() == MPS_HOSTS_EXPRESSION:
        return True
    return all(_ISOLATION_TERM.match(term.strip()) for term in expression.split(ISOLATION_JOIN))


_INSTANCE_TYPE_TERM = re.compile(r"^attribute:ecs\.instance-type\s*(?:==\s*([\w.-]+)|in\s*\[([^\]]*)\])$")


def instance_types_required(expression: str) -> frozenset[str] | None:
    """The instance types a memberOf ``expression`` lets a task land on, where it says so plainly: terms joined by
    ``and``, each type named by ``attribute:ecs.instance-type == T`` or ``in [T, ...]`` (ECS Developer Guide, "Create
    expressions to define container instances for Amazon ECS tasks"). ``None`` where it names no type, or in a way
    not read here (``or``, ``not``, a ``=~`` pattern)."""
    lowered = f" {expression.lower()} "
    if " or " in lowered or "not(" in lowered.replace(" ", "") or "=~" in expression:
        return None
    found: frozenset[str] | None = None
    for term in expression.split(" and "):
        match = _INSTANCE_TYPE_TERM.match(term.strip())
        if match is None:
            continue
        named = {match.group(1)} if match.group(1) else {t.strip() for t in match.group(2).split(",") if t.strip()}
        found = frozenset(named) if found is None else found & named
    return found


def zone_rebalancing(value: object, strategy: Sequence[str], max_percent: int, member_of: Sequence[str] = ()) -> bool:
    """Whether ECS rebalances the service's tasks over Availability Zones: stops tasks in the zone with the most and
    starts them in the zone with the fewest. ``value`` is its ``AvailabilityZoneRebalancing`` as written: ENABLED (in
    any case), or a value not known at synth, is taken as on. Left out, ECS turns it on for a new service (botocore's
    ECS model, CreateService availabilityZoneRebalancing; CloudFormation's schema default ENABLED) where it can: the
    service spreads over zones first or has no strategy, its maximum percent is over 100, and no ``member_of``
    expression names the zone attribute (the limits aws-cdk's Ec2Service holds ENABLED to, aws-cdk PR 32263; AWS's
    notice of 2025-06: services it cannot rebalance, such as binpack's, default to off)."""
    if value is not None:
        return not (isinstance(value, str) and value.upper() == "DISABLED")
    zoned = any(ZONE_ATTRIBUTE in expression for expression in member_of)
    return max_percent > 100 and not zoned and (not strategy or strategy[0] == SPREAD_ZONE)
