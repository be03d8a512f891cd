"""The rules checked outside the plan (task definitions, templates, guards, hardening, limits): each family declares
its rows beside its checks (``core.rule_family``); this module lists the families, in the order of the reference."""

from __future__ import annotations

from .. import (
    capacity_facts,
    container_guards,
    escalation,
    hardening,
    quotas,
    service_rules,
    shape,
    tenancy,
    written_fit,
)
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

FAMILIES: tuple[Family, ...] = (
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

OTHER_RULES: tuple[Rule, ...] = tuple(
    Rule(row.rule_id, row.level, row.about, row.explanation, None, row.source)
    for family in FAMILIES
    for row in family.rows
)
