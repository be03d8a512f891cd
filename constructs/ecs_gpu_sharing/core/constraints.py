"""The placement constraints the plan understands. Pure Python.

ECS places a service's tasks only on hosts its ``memberOf`` expressions match ("Amazon ECS task placement
constraints"). The plan models two kinds: the isolation groups' terms, which keep a group's services off the hosts of
the others' (the plan keeps the groups apart itself), and the MPS capability, which every host of a GPU capacity has.
Any other expression narrows the hosts in a way the plan does not count (``PlacementConstraintNotPlanned``).
"""

from __future__ import annotations

import re

from .mps import MPS_HOSTS_EXPRESSION

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
