"""Which grants let a task's code raise its own permissions or reach other tenants: one classification for the fleet
file and for the rendered policies of any task role on a GPU capacity. Pure Python.

Sources: the published lists of IAM privilege-escalation methods (Rhino Security Labs, "AWS IAM Privilege Escalation
- Methods and Mitigation"; Salesforce's cloudsplaining ``privilege_escalation`` checks, which follow it), and what
this project's own guarantees rest on (the ECS agent's actions, service tags that name a plan's service, the
evidence and stopped-task log groups). The action names are concrete (``core/data/escalation.json``, written from
botocore's models by ``scripts/escalation_actions.py``), so a wildcard such as ``iam:Put*`` or ``s?s:*`` is judged by
what it matches, in any case.

Classes:
- IAM writes (every IAM action but reads): a role that can change IAM can change itself.
- STS: assuming another role, federating, tagging a session.
- ``iam:PassRole`` together with an action that runs code under a passed role (Lambda, EC2, ECS, CloudFormation,
  Glue, SageMaker, CodeBuild, Data Pipeline, Step Functions, Auto Scaling).
- SSM commands, sessions, automations and associations: code on other hosts, GPU hosts among them.
- ECS: tagging (a tag names a plan's service to ``evaluate``), the container agent's actions (registering hosts,
  state changes, attributes such as the GPU-sharing one), exec into containers, running and changing tasks and
  services.
- Writes to this project's evidence and stopped-task log groups: what ``evaluate`` believes.
- An ``Allow`` with ``NotAction``: everything but a list.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from .rule_family import Family, Level, Source
from .telemetry import EVIDENCE_LOG_GROUP_PREFIX, STOPPED_TASKS_LOG_GROUP_PREFIX
from .text import few
from .tokens import is_intrinsic, text_pattern

RULES = Family("task-role escalation")
TASK_ROLE_ESCALATION = RULES.declare(
    "ecs-gpu-sharing:TaskRoleEscalation",
    Level.ERROR,
    "task definition",
    Source.TEMPLATE,
    "a task role on a GPU capacity may not change IAM, assume roles, pass a role to a service that runs code, run "
    "SSM commands, tag or act as the ECS agent, or write the evidence and stopped-task log groups "
    "(core.escalation); FleetPlan.allow, or the fleet file's acknowledge, permits it with a reason",
)
TASK_ROLE_WILDCARD = RULES.declare(
    "ecs-gpu-sharing:TaskRoleWildcard",
    Level.ERROR,
    "service",
    Source.FLEET_FILE,
    "a wildcard in a fleet file's task_role_statements fails the deployable app's cdk-nag check (AwsSolutions-IAM5); "
    "the service's acknowledge permits it with a reason, which the app writes into cdk-nag's acknowledgment",
)
TASK_ROLE_REFUSED_POLICY = RULES.declare(
    "ecs-gpu-sharing:TaskRoleAdministratorPolicy",
    Level.ERROR,
    "task definition",
    Source.TEMPLATE,
    "AdministratorAccess, PowerUserAccess and IAMFullAccess never go on a task role on a GPU capacity",
)

# AWS managed policies that hand a model's task the whole account or IAM itself: refused, never allowed.
REFUSED_MANAGED_POLICIES = frozenset(
    {
        "AdministratorAccess",
        "AdministratorAccess-Amplify",
        "AdministratorAccess-AWSElasticBeanstalk",
        "IAMFullAccess",
        "PowerUserAccess",
    }
)

CODE_RUNNERS = (
    "lambda:CreateFunction",
    "lambda:UpdateFunctionConfiguration",
    "ec2:RunInstances",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateLaunchTemplateVersion",
    "autoscaling:CreateLaunchConfiguration",
    "autoscaling:CreateAutoScalingGroup",
    "ecs:RunTask",
    "ecs:StartTask",
    "ecs:RegisterTaskDefinition",
    "ecs:CreateService",
    "ecs:UpdateService",
    "cloudformation:CreateStack",
    "cloudformation:UpdateStack",
    "cloudformation:CreateChangeSet",
    "cloudformation:CreateStackSet",
    "glue:CreateDevEndpoint",
    "glue:UpdateDevEndpoint",
    "glue:CreateJob",
    "glue:UpdateJob",
    "sagemaker:CreateNotebookInstance",
    "sagemaker:CreateTrainingJob",
    "sagemaker:CreateProcessingJob",
    "codebuild:CreateProject",
    "codebuild:UpdateProject",
    "datapipeline:CreatePipeline",
    "states:CreateStateMachine",
    "states:UpdateStateMachine",
)

SSM_REMOTE = (
    "ssm:SendCommand",
    "ssm:StartSession",
    "ssm:ResumeSession",
    "ssm:StartAutomationExecution",
    "ssm:CreateAssociation",
    "ssm:CreateAssociationBatch",
    "ssm:UpdateAssociation",
    "ssm:StartAssociationsOnce",
    "ssm:CreateDocument",
    "ssm:UpdateDocument",
)

ECS_CONTROL = (
    "ecs:TagResource",
    "ecs:UntagResource",
    "ecs:PutAttributes",
    "ecs:DeleteAttributes",
    "ecs:RegisterContainerInstance",
    "ecs:DeregisterContainerInstance",
    "ecs:DiscoverPollEndpoint",
    "ecs:Poll",
    "ecs:StartTelemetrySession",
    "ecs:SubmitAttachmentStateChanges",
    "ecs:SubmitContainerStateChange",
    "ecs:SubmitTaskStateChange",
    "ecs:UpdateContainerAgent",
    "ecs:UpdateContainerInstancesState",
    "ecs:ExecuteCommand",
    "ecs:StopTask",
    "ecs:DeleteService",
    *(a for a in CODE_RUNNERS if a.startswith("ecs:")),
)


@cache
def _data() -> Mapping[str, tuple[str, ...]]:
    raw = json.loads(resources.files(__package__).joinpath("data/escalation.json").read_text())
    return {key: tuple(values) for key, values in raw.items()}


@dataclass(frozen=True)
class Grant:
    """One statement as written: effect, actions (or not-actions) and resources, values as the template has them."""

    effect: str
    actions: tuple[Any, ...]
    not_action: bool
    resources: tuple[Any, ...]


def unreadable_document(document: Any) -> str | None:
    """Why a policy document cannot be judged at synth (text that is not JSON, a document or its statements known only
    at deploy), or ``None``: what cannot be read could grant anything."""
    if isinstance(document, str):
        try:
            json.loads(document)
        except ValueError:
            return "a policy document that is not JSON could grant anything; write it as an object"
        return None
    body = {str(k).lower(): v for k, v in document.items()} if isinstance(document, Mapping) else {}
    statements = body.get("statement")
    parts = statements if isinstance(statements, list) else [statements]
    if is_intrinsic(document) or any(is_intrinsic(part) for part in parts):
        return (
            f"a policy document or statement known only at deploy ({json.dumps(document)[:80]}) could grant anything; "
            "write its statements literally"
        )
    return None


def grants(document: Any) -> list[Grant]:
    """The statements of a policy document (``{"Statement": [...]}``, one statement, a list, or its JSON text), keys
    in any case. An Effect known only at deploy reads as Allow, and an Allow with NotResource as on every resource."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    if isinstance(document, Mapping):
        body = {str(k).lower(): v for k, v in document.items()}
        statements = body.get("statement", [document] if "effect" in body else [])
    else:
        statements = document if isinstance(document, list) else []
    out = []
    for raw in statements if isinstance(statements, list) else [statements]:
        if not isinstance(raw, Mapping):
            continue
        s = {str(k).lower(): v for k, v in raw.items()}
        not_action = "notaction" in s
        actions = s.get("notaction" if not_action else "action", [])
        resources_ = s.get("resource", ["*"]) if "notresource" not in s else ["*"]  # all but a few is nearly all
        effect = s.get("effect", "Allow")
        out.append(
            Grant(
                effect if isinstance(effect, str) else "Allow",  # known only at deploy: it could allow
                tuple(actions if isinstance(actions, list) else [actions]),
                not_action,
                tuple(resources_ if isinstance(resources_, list) else [resources_]),
            )
        )
    return out


def _matches(pattern: Any, actions: Iterable[str]) -> list[str]:
    """The concrete actions ``pattern`` (an IAM action with ``*``/``?`` wildcards, any case) names."""
    if not isinstance(pattern, str):
        return []  # a deploy-time value: ``escalations`` refuses it as any action
    wanted = pattern.strip().lower()
    return [a for a in actions if fnmatch.fnmatchcase(a.lower(), wanted)]


WRITES_EVIDENCE = "can write the evidence or stopped-task log groups evaluate believes"
"""How a finding says a grant reaches the groups ``evaluate`` reads (``core.tenancy`` adds where it comes from)."""


def _log_group_resource(resource: Any) -> bool:
    """Whether a resource pattern can name this project's evidence or stopped-task log groups."""
    if not isinstance(resource, str):
        text = json.dumps(resource)
        if any(p in text for p in (EVIDENCE_LOG_GROUP_PREFIX, STOPPED_TASKS_LOG_GROUP_PREFIX)):
            return True
        resource = text_pattern(resource)  # a part known at deploy could be any group's name
    if resource.strip() == "*":
        return True
    name = resource.split(":log-group:", 1)[1] if ":log-group:" in resource else resource
    name = name.split(":log-stream:", 1)[0]
    head = name.split("*", 1)[0].split("?", 1)[0]  # what the pattern fixes before its first wildcard
    wild = head != name
    return any(
        name.startswith(prefix) or (wild and prefix.startswith(head))
        for prefix in (EVIDENCE_LOG_GROUP_PREFIX, STOPPED_TASKS_LOG_GROUP_PREFIX)
    )


def _every_role(resource: Any) -> bool:
    """Whether a resource pattern names every role of an account (``*``, ``...:role/*``, any account)."""
    if not isinstance(resource, str):
        return True  # a deploy-time value: it could be any role
    r = resource.strip()
    return (
        r == "*"
        or (":role/" in r and r.endswith("*") and r.split(":role/", 1)[1] in ("*", ""))
        or (r.startswith("arn:aws:iam::*") and r.endswith("*"))
    )


def escalations(documents: Sequence[Any]) -> list[str]:
    """Why the allow statements of ``documents`` (all the policies of one role) let its holder escalate, one line each;
    ``[]`` when they do not."""
    data = _data()
    allows = [g for doc in documents for g in grants(doc) if g.effect.strip().lower() == "allow"]
    out: list[str] = [why for doc in documents if (why := unreadable_document(doc)) is not None]
    for g in allows:
        if g.not_action:
            out.append(f"an Allow with NotAction {list(g.actions)} allows every other action; name the actions instead")
            continue
        for pattern in g.actions:
            if not isinstance(pattern, str):
                out.append(f"action {json.dumps(pattern)[:80]} is known only at deploy and could be any action")
                continue
            if pattern.strip() in ("*", "*:*"):
                out.append(f"action {pattern} allows every action")
                continue
            for label, actions in (
                ("changes IAM, the task's own role included", data["iam_writes"]),
                ("takes another role's or a federated identity's permissions", data["sts"]),
                ("runs commands or sessions on other hosts (GPU hosts among them)", SSM_REMOTE),
                (
                    "acts as the ECS agent, tags services (a tag names a plan's service to evaluate), execs into or "
                    "changes other tenants' tasks",
                    ECS_CONTROL,
                ),
            ):
                hit = _matches(pattern, actions)
                if hit:
                    out.append(f"action {pattern} {label} ({few(hit)})")
            if any(_log_group_resource(r) for r in g.resources):
                hit = _matches(pattern, data["logs_writes"])
                if hit:
                    out.append(
                        f"action {pattern} on {few([str(r) for r in g.resources])} {WRITES_EVIDENCE} "
                        f"({few(hit)}); name the task's own log groups"
                    )
    for g in allows:
        if g.not_action or not any(_every_role(r) for r in g.resources):
            continue
        for pattern in g.actions:
            if _matches(pattern, ("iam:PassRole",)):
                out.append(f"action {pattern} on every role lets the task hand any role of the account to a service")
    passes = [p for g in allows if not g.not_action for p in g.actions if _matches(p, ("iam:PassRole",))]
    runners = sorted({a for g in allows if not g.not_action for p in g.actions for a in _matches(p, CODE_RUNNERS)})
    if passes and runners:
        out.append(
            f"action {passes[0]} together with {few(runners)} runs code under another role it passes; drop one of them"
        )
    return list(dict.fromkeys(out))


def nag_wildcards(actions: Iterable[str], resources: Iterable[str]) -> list[str]:
    """cdk-nag's AwsSolutions-IAM5 findings on an Allow statement of these literal actions and resources: each one
    holding a ``*``, as ``Action::<action>`` and ``Resource::<resource>`` (cdk-nag 3's ``IAMNoWildcardPermissions``
    writes them so, and its acknowledgments are named by them)."""
    return [f"Action::{a}" for a in actions if "*" in a] + [f"Resource::{r}" for r in resources if "*" in r]


def unread_managed_policy(name: str) -> str | None:
    """Why an AWS managed policy cannot be let through unread, or ``None`` for a read-only one: its statements are not
    in the templates, and a policy that writes (``AmazonSSMFullAccess`` has ``ssm:SendCommand``,
    ``AmazonECS_FullAccess`` has ``iam:PassRole`` and ``ecs:TagResource``) may hold any of the classes above."""
    if name in REFUSED_MANAGED_POLICIES or "ReadOnly" in name:
        return None
    return (
        f"the AWS managed policy {name} is not read-only and its statements are not in the templates, so what it "
        "grants cannot be judged; name the actions and resources instead"
    )


def refused_managed_policy(name: str) -> str | None:
    """Why an AWS managed policy may never go on a task role, or ``None``."""
    if name in REFUSED_MANAGED_POLICIES:
        return (
            f"{name} gives the model's code (and anyone who reaches it) the account or IAM itself; name the actions "
            "and resources it needs"
        )
    return None
