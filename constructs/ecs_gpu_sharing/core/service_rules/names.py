"""Every AWS service: a custom name is claimed by one resource.

CloudFormation User Guide, "Name type": "Resource names must be unique across all your active stacks". Two resources
of one stack that write the same name are one name claimed twice: the service refuses the second ("already exists")
or, for the services whose create call writes over (a dashboard, an alarm), both resources manage one thing and
deleting either deletes it. Only names within one template are compared: stacks of one app may be deployed to other
regions or accounts, which their templates do not say, unless a part of the name refers to a resource of the
templates: then both are in that resource's account and region.

Two sources say what identifies a resource. CloudFormation's registry schemas give each type a primary identifier
and maybe more; where the template writes every property of one (none is read back from AWS), a second resource with
the same values fails to create with AlreadyExists (CloudFormation CLI User Guide, "Contract tests for resource
types", contract_create_create). ``core/data/resource_schemas.json`` holds them, written from the schemas by
``scripts/resource_schemas.py``: one set of capacity provider associations a cluster, one policy a bucket, one
scalable target a service's task count. ``NAMED`` adds the names that are unique though a type's identifier is an ARN
or an id AWS makes (a service's name in its cluster, a target group's name).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

from ..rule_family import PREFIX
from .base import ECS_API, PLACEHOLDER, UNKNOWN_TEXT, Finding, Resource, ServiceRule, Templates, construct_path

NAME_CLAIMED_TWICE = f"{PREFIX}NameClaimedTwice"
ECS_NAMES = f"{PREFIX}EcsNames"
# ECS's names: a cluster's, a service's, a task definition family's, a capacity provider's, a container's (ECS API
# Reference: "Up to 255 letters (uppercase and lowercase), numbers, underscores, and hyphens are allowed").
ECS_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")
_ECS_NAME_CHARACTER = re.compile(r"[A-Za-z0-9_-]")
_ECS_NAMED = {
    "AWS::ECS::Cluster": ("ClusterName", "cluster name"),
    "AWS::ECS::Service": ("ServiceName", "service name"),
    "AWS::ECS::TaskDefinition": ("Family", "task definition family"),
    "AWS::ECS::CapacityProvider": ("Name", "capacity provider name"),
}

# The names that are unique though the type's registry schema identifies it by what AWS makes (an ARN, an id), so the
# schemas do not say them: resource type -> (its name property, the property that scopes the name, if names are
# unique only within it). A test fails on an entry the schemas give, which then goes.
NAMED: Mapping[str, tuple[str, str | None]] = {
    "AWS::EC2::LaunchTemplate": ("LaunchTemplateName", None),
    "AWS::ECS::Service": ("ServiceName", "Cluster"),
    "AWS::ElasticLoadBalancingV2::LoadBalancer": ("Name", None),
    "AWS::ElasticLoadBalancingV2::TargetGroup": ("Name", None),
    "AWS::Events::Rule": ("Name", "EventBusName"),
    "AWS::IAM::ManagedPolicy": ("ManagedPolicyName", None),
    "AWS::SNS::Topic": ("TopicName", None),
    "AWS::SQS::Queue": ("QueueName", None),
    "AWS::SecretsManager::Secret": ("Name", None),
    "AWS::ServiceDiscovery::Service": ("Name", "NamespaceId"),
}


_PARTS = re.compile(r"\$\{([^}/]+)/([^}]+)\}")  # how Templates.text writes a resource of the templates

Identity = tuple[tuple[str, bool], ...]  # each property with whether it must be written (a name's scope need not be)


@functools.cache
def resource_schemas() -> Mapping[str, Mapping[str, list[Any]]]:
    """``core/data/resource_schemas.json``: each type's written identifiers and create-only properties."""
    found: Mapping[str, Mapping[str, list[Any]]] = json.loads(
        resources.files("ecs_gpu_sharing.core").joinpath("data/resource_schemas.json").read_text()
    )
    return found


@functools.cache
def identities() -> Mapping[str, tuple[Identity, ...]]:
    """Each type's identities: the identifiers its schema says a template writes whole, and ``NAMED``'s name with
    its scope."""
    raw = resource_schemas()
    out = {
        kind: [tuple((prop, True) for prop in found) for found in facts["identifiers"]] for kind, facts in raw.items()
    }
    for kind, (prop, scope) in NAMED.items():  # none of them is the schemas' (a test holds it)
        out.setdefault(kind, []).append(((scope, False), (prop, True)) if scope else ((prop, True),))
    return {kind: tuple(found) for kind, found in out.items()}


def _values(ctx: Templates, resource: Resource, identity: Identity) -> tuple[str | None, ...] | None:
    """An identity's values as they will read once deployed (a scope left out: ``None``, the default cluster or
    bus); ``None`` where it is not known to be alike: a property left to CloudFormation, a part that cannot be read."""
    values: list[str | None] = []
    for prop, required in identity:
        written = resource.props.get(prop)
        if written is None and required:
            return None
        text = None if written is None else ctx.text(written, resource.stack)
        if text is not None and UNKNOWN_TEXT in text:
            return None
        values.append(text)
    return tuple(values)


def name_claimed_twice(ctx: Templates) -> Iterator[Finding]:
    claimed: dict[tuple[str | None, str, Identity, tuple[str | None, ...]], Resource] = {}
    known = identities()
    for resource in sorted(ctx.all(), key=lambda r: (r.kind, r.stack, r.logical_id)):
        if "Condition" in resource.attributes:
            continue  # created only where its condition holds: two such may never meet
        kind = resource.kind
        for identity in known.get(kind, ()):
            values = _values(ctx, resource, identity)
            if values is None:
                continue
            shared = any(v is not None and _PARTS.search(v) for v in values)
            first = claimed.setdefault((None if shared else resource.stack, kind, identity, values), resource)
            if first is not resource:
                yield resource, _message(ctx, identity, values, first, kind)
                break  # one finding a resource


def _shown(ctx: Templates, text: str) -> str:
    """A value for a message: each resource it refers to by its construct path."""

    def path(match: re.Match[str]) -> str:
        stack, logical_id = match.group(1), match.group(2).split(".")[0]
        found = ctx.resource(stack, logical_id)
        return construct_path(found) if found is not None else match.group(0)

    return _PARTS.sub(path, text)


def _message(ctx: Templates, identity: Identity, values: tuple[str | None, ...], first: Resource, kind: str) -> str:
    written = [(prop, _shown(ctx, v)) for (prop, _), v in zip(identity, values, strict=True) if v is not None]
    other = construct_path(first)
    if identity[-1][0].endswith("Name"):  # a name, maybe within a scope (its cluster, its role, its log group)
        names = [f"{p} {v}" for p, v in written if p.endswith("Name")]
        scope = [f"{p} {v}" for p, v in written if not p.endswith("Name")]
        within = f" (within {', '.join(scope)})" if scope else ""
        return (
            f"its {' and '.join(names)}{within} {'is' if len(names) == 1 else 'are'} also {other}'s: the service "
            "refuses the second (AlreadyExists) or both manage one resource; give each its own name, or leave the "
            "name out and let CloudFormation make one"
        )
    said = ", ".join(f"{prop} {value}" for prop, value in written)
    return (
        f"it and {other} are one {kind} to AWS ({said}), which keeps one for those values: the second fails to create "
        "(AlreadyExists) or both manage one resource; merge them into one"
    )


def ecs_names(ctx: Templates) -> Iterator[Finding]:
    """Each literal character of an ECS name as the template writes it; its length where it is all literal (a stack's
    name, a parameter, a reference is judged where it is written, not here)."""
    for kind, (prop, what) in _ECS_NAMED.items():
        for resource in ctx.of_type(kind):
            if prop not in resource.props:
                continue
            text = ctx.text(resource.props[prop], resource.stack)
            if text == UNKNOWN_TEXT:
                continue
            literal = PLACEHOLDER.sub("", text)  # a stack's name is letters, digits and hyphens: not judged either
            bad = sorted({c for c in literal if not _ECS_NAME_CHARACTER.fullmatch(c)})
            if bad:
                yield (
                    resource,
                    f"its {what} {text!r} has {', '.join(repr(c) for c in bad)}, and ECS takes letters, digits, "
                    "underscores and hyphens only; spell it with those",
                )
            elif literal == text and not ECS_NAME.fullmatch(text):
                yield resource, f"its {what} has {len(text)} characters; ECS takes 1 to 255"


NAME_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        ECS_NAMES,
        "Amazon ECS",
        "a cluster's, service's, task definition family's and capacity provider's name is 1 to 255 letters, digits, "
        "underscores and hyphens",
        f"{ECS_API}, CreateCluster clusterName, CreateService serviceName, RegisterTaskDefinition family, "
        'CreateCapacityProvider name: "Up to 255 letters (uppercase and lowercase), numbers, underscores, and '
        'hyphens are allowed"; RegisterTaskDefinition answers ClientException "Family contains invalid characters" '
        "(aws/amazon-ecs-cli#542)",
        ecs_names,
    ),
    ServiceRule(
        NAME_CLAIMED_TWICE,
        "every AWS service that takes a name",
        "a custom name (a log group's, a role's, a dashboard's, ...), or an identifier the template writes whole (a "
        "cluster's capacity provider associations, a bucket's policy, a scalable target), is written by one resource "
        "of a stack, or of the stacks whose values refer to one resource",
        "AWS CloudFormation Template Reference, 'CloudFormation resource custom naming': \"Resource names must be "
        "unique across all your active stacks\"; CloudFormation CLI User Guide, 'Contract tests for resource types', "
        'contract_create_create: a second create of the same primary identifier fails "with the AlreadyExists error '
        'code", tested where no identifier is read-only (the registry schemas, in core/data/resource_schemas.json)',
        name_claimed_twice,
        rehearsal="partly: moto refuses some names twice (a log group) and writes over others (a dashboard)",
    ),
)
