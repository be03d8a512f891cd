"""The rules checked outside the plan (task definitions, templates, guards, hardening, limits): each family declares
its rows beside its checks (``core.rule_family``); this module lists the families, in the order of the reference.

The families checked only on a synthesized app or a written template (the containers' guards, tenancy, the written
templates' fit, the service rules) are imported when the table is first read (``families``): ``plan`` reads no row
of them unless a fleet file acknowledges a warning, and their 18 modules were a tenth of the library's import, ahead
of every plan (docs/planning.md)."""

from __future__ import annotations

from functools import cache

from .. import capacity_facts, escalation, hardening, quotas, shape
from ..rule_family import Family, Level, Source
from .model import Rule

RUNNER = Family("the rule runner")
RULE_FAILED = RUNNER.declare(
    "ecs-gpu-sharing:RuleFailed",
    Level.ERROR,
    "capacity",
    Source.PLAN,
    "a rule that fails while checking is reported as an error, naming the rule and the failure (a bug to report)",
)  # assess (core.rules) reports it


@cache
def families() -> tuple[Family, ...]:
    """Every family of rules checked outside the plan, in the reference's order (its modules imported on first read)."""
    from .. import container_guards, service_rules, tenancy, written_fit

    return (
        shape.RULES,
        container_guards.RULES,
        tenancy.RULES,
        written_fit.RULES,
        escalation.RULES,
        hardening.RULES,
        capacity_facts.RULES,
        quotas.RULES,
        service_rules.RULES,
        RUNNER,
    )


@cache
def rows() -> tuple[Rule, ...]:
    """The families' rows, as rows of the rule table."""
    return tuple(
        Rule(row.rule_id, row.level, row.about, row.explanation, None, row.source) for f in families() for row in f.rows
    )
