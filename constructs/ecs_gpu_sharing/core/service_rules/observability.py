"""Amazon CloudWatch, EventBridge and CloudWatch Logs."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from .base import Finding, Resource, Templates, listed, literal_number, statements

# --- Amazon CloudWatch, EventBridge, CloudWatch Logs ---------------------------------------------------------------

ALARM_PERIOD = f"{PREFIX}AlarmPeriod"
ALARM_DATAPOINTS = f"{PREFIX}AlarmDatapointsWithinPeriods"
RULE_TARGETS = f"{PREFIX}TargetsPerEventRule"
LOG_RETENTION = f"{PREFIX}LogRetentionDays"
ALARM_TOPIC_PUBLISH = f"{PREFIX}AlarmTopicAdmitsCloudWatch"
LOG_GROUP_KEY = f"{PREFIX}LogGroupKeyAdmitsCloudWatchLogs"

_RETENTION_DAYS = frozenset(
    (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)
)


def alarm_period(ctx: Templates) -> Iterator[Finding]:
    for alarm in ctx.of_type("AWS::CloudWatch::Alarm"):
        period, periods = (
            literal_number(alarm.props.get("Period")),
            literal_number(alarm.props.get("EvaluationPeriods")),
        )
        if period is not None and period not in (10, 20, 30) and (period < 60 or period % 60):
            yield alarm, f"its period is {period} s; use 10, 20, 30 or a multiple of 60"
        if period is not None and periods is not None and period * periods > 86_400:
            yield alarm, f"it evaluates {periods} periods of {period} s, over one day (86,400 s)"


def alarm_datapoints(ctx: Templates) -> Iterator[Finding]:
    for alarm in ctx.of_type("AWS::CloudWatch::Alarm"):
        points, periods = (
            literal_number(alarm.props.get("DatapointsToAlarm")),
            literal_number(alarm.props.get("EvaluationPeriods")),
        )
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
        days = literal_number(group.props.get("RetentionInDays"))
        if days is not None and days not in _RETENTION_DAYS:
            yield group, f"its retention of {days} days is not one CloudWatch Logs offers ({sorted(_RETENTION_DAYS)})"


# --- alarm notifications: what SNS and KMS let CloudWatch do -------------------------------------------------------

_CLOUDWATCH = "cloudwatch.amazonaws.com"
_ACTIONS = ("AlarmActions", "OKActions", "InsufficientDataActions")


def _matches(patterns: list[Any], action: str) -> bool:
    """Whether an action (lowercase) is one of IAM's action patterns (``*`` and ``?`` wildcards, any case)."""
    return any(fnmatch.fnmatchcase(action, str(p).lower()) for p in patterns)


Service = str | re.Pattern[str]  # a service principal, or a pattern of its regional names


Read = Callable[[Any], str]  # a template value as text (``Templates.text`` in the policy's stack)


def _names_service(principal: Mapping[str, Any], service: Service, read: Read) -> bool:
    names = [read(n) for n in listed(principal.get("Service"))]
    if isinstance(service, str):
        return service in names
    return any(service.fullmatch(n) for n in names)


def _covers(statement: Mapping[str, Any], service: Service, actions: tuple[str, ...], read: Read) -> bool:
    """Whether a statement applies to ``service`` for every one of ``actions``: its principal names the service or
    everyone, and its Action matches them (or its NotAction matches none)."""
    principal = statement.get("Principal")
    if principal != "*":
        if not isinstance(principal, Mapping):
            return False
        if not _names_service(principal, service, read) and "*" not in listed(principal.get("AWS")):
            return False
    if "NotAction" in statement:
        return not any(_matches(listed(statement["NotAction"]), a.lower()) for a in actions)
    return all(_matches(listed(statement.get("Action")), a.lower()) for a in actions)


def _admits(policy: list[Mapping[str, Any]], service: Service, actions: tuple[str, ...], read: Read) -> bool:
    """Whether a policy's statements let ``service`` do every one of ``actions``: an Allow covers them, and no Deny
    without a condition does (a condition is taken as met for an Allow and as unmet for a Deny: the rule fails only a
    policy that cannot work)."""
    allows = [s for s in policy if s.get("Effect") == "Allow"]
    denies = [s for s in policy if s.get("Effect") == "Deny" and not s.get("Condition")]
    return all(
        any(_covers(s, service, (a,), read) for s in allows)
        and not any(_covers(s, service, (a,), read) for s in denies)
        for a in actions
    )


def alarm_topic_admits_cloudwatch(ctx: Templates) -> Iterator[Finding]:
    """An alarm's SNS topic lets CloudWatch publish: a topic policy replaces SNS's default one, which admitted the
    account's services, and an encrypted topic's key must let CloudWatch use it."""
    alarms: dict[tuple[str, str], tuple[Resource, str]] = {}  # topic -> (topic, the first alarm that notifies it)
    for alarm in ctx.of_type("AWS::CloudWatch::Alarm"):
        for key in _ACTIONS:
            for action in listed(alarm.props.get(key)):
                topic = ctx.target(action, alarm.stack)
                if topic is not None and topic.kind == "AWS::SNS::Topic":
                    alarms.setdefault((topic.stack, topic.logical_id), (topic, alarm.logical_id))
    policies = list(ctx.of_type("AWS::SNS::TopicPolicy"))
    for topic, first in alarms.values():
        covering = [p for p in policies if any(ctx.target(t, p.stack) is topic for t in listed(p.props.get("Topics")))]
        policy = [s for p in covering for s in statements(p.props.get("PolicyDocument"))]
        if covering and not _admits(
            policy, _CLOUDWATCH, ("sns:Publish",), functools.partial(ctx.text, stack=topic.stack)
        ):
            yield (
                topic,
                f"alarm {first} notifies it, but its topic policy (which replaces SNS's default) allows no "
                f'{_CLOUDWATCH} to sns:Publish, so each notification fails ("not authorized to perform: '
                f'SNS:Publish"); add an Allow of sns:Publish for the service principal {_CLOUDWATCH}',
            )
        yield from _key_admits_cloudwatch(ctx, topic, first)


def _key_admits_cloudwatch(ctx: Templates, topic: Resource, alarm: str) -> Iterator[Finding]:
    key_id = topic.props.get("KmsMasterKeyId")
    if isinstance(key_id, str) and key_id.endswith("alias/aws/sns"):
        yield (
            topic,
            f"alarm {alarm} notifies it, but it is encrypted with the AWS managed key alias/aws/sns, whose policy lets "
            "no service use it, so CloudWatch cannot publish; encrypt it with a customer managed key that allows "
            f"{_CLOUDWATCH} kms:Decrypt and kms:GenerateDataKey*",
        )
        return
    key = ctx.target(key_id, topic.stack)
    if key is None or key.kind != "AWS::KMS::Key":
        return  # unencrypted, or a key outside the templates: not judged
    needed = ("kms:Decrypt", "kms:GenerateDataKey")
    if not _admits(
        statements(key.props.get("KeyPolicy")), _CLOUDWATCH, needed, functools.partial(ctx.text, stack=key.stack)
    ):
        yield (
            topic,
            f"alarm {alarm} notifies it, but its key {key.logical_id} does not let {_CLOUDWATCH} use it, so CloudWatch "
            f"cannot publish; allow {_CLOUDWATCH} kms:Decrypt and kms:GenerateDataKey* in the key policy",
        )


# CloudWatch Logs' principal is regional (logs.<region>.amazonaws.com, as its guide writes it; deploys that named
# logs.amazonaws.com are reported refused the same way); a reference stands for the region.
_LOGS = re.compile(r"logs\.([a-z]{2}(-[a-z]+)+-\d+|\$\{[^}]+\})\.amazonaws\.com")
_LOGS_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


def log_group_key(ctx: Templates) -> Iterator[Finding]:
    """A log group encrypted with a key of the templates: the key's policy lets CloudWatch Logs use it."""
    for group in ctx.of_type("AWS::Logs::LogGroup"):
        key = ctx.target(group.props.get("KmsKeyId"), group.stack)
        if key is None or key.kind != "AWS::KMS::Key":
            continue  # unencrypted, or a key outside the templates: not judged
        read = functools.partial(ctx.text, stack=key.stack)
        if not _admits(statements(key.props.get("KeyPolicy")), _LOGS, _LOGS_KEY_ACTIONS, read):
            yield (
                group,
                f"it is encrypted with key {key.logical_id}, whose policy does not let CloudWatch Logs use it, so "
                "CloudWatch Logs refuses to create the group with it; allow the service principal "
                "logs.<region>.amazonaws.com (not logs.amazonaws.com) kms:Encrypt*, kms:Decrypt*, kms:ReEncrypt*, "
                "kms:GenerateDataKey* and kms:Describe* in the key policy "
                "(key.grant_encrypt_decrypt(ServicePrincipal(f'logs.{region}.amazonaws.com')))",
            )
