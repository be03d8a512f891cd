"""Amazon CloudWatch, EventBridge and CloudWatch Logs."""

from __future__ import annotations

from collections.abc import Iterator

from ..rule_family import PREFIX
from .base import Finding, Templates, _int

# --- Amazon CloudWatch, EventBridge, CloudWatch Logs ---------------------------------------------------------------

ALARM_PERIOD = f"{PREFIX}AlarmPeriod"
ALARM_DATAPOINTS = f"{PREFIX}AlarmDatapointsWithinPeriods"
RULE_TARGETS = f"{PREFIX}TargetsPerEventRule"
LOG_RETENTION = f"{PREFIX}LogRetentionDays"

_RETENTION_DAYS = frozenset(
    (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)
)


def alarm_period(ctx: Templates) -> Iterator[Finding]:
    for alarm in ctx.of_type("AWS::CloudWatch::Alarm"):
        period, periods = _int(alarm.props.get("Period")), _int(alarm.props.get("EvaluationPeriods"))
        if period is not None and period not in (10, 20, 30) and (period < 60 or period % 60):
            yield alarm, f"its period is {period} s; use 10, 20, 30 or a multiple of 60"
        if period is not None and periods is not None and period * periods > 86_400:
            yield alarm, f"it evaluates {periods} periods of {period} s, over one day (86,400 s)"


def alarm_datapoints(ctx: Templates) -> Iterator[Finding]:
    for alarm in ctx.of_type("AWS::CloudWatch::Alarm"):
        points, periods = _int(alarm.props.get("DatapointsToAlarm")), _int(alarm.props.get("EvaluationPeriods"))
        if points is not None and periods is not None and points > periods:
            yield (
                alarm,
                f"it alarms on {points} datapoints out of {periods} evaluation periods; keep datapoints <= periods",
            )


def rule_targets(ctx: Templates) -> Iterator[Finding]:
    for rule in ctx.of_type("AWS::Events::Rule"):
        targets = rule.props.get("Targets")
        if isinstance(targets, list) and len(targets) > 5:
            yield rule, f"it has {len(targets)} targets; an EventBridge rule takes at most 5"


def log_retention(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::Logs::LogGroup"):
        days = _int(group.props.get("RetentionInDays"))
        if days is not None and days not in _RETENTION_DAYS:
            yield group, f"its retention of {days} days is not one CloudWatch Logs offers ({sorted(_RETENTION_DAYS)})"
