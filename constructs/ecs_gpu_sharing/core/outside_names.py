"""What a CDK app's task definitions name outside their templates: private ECR images, Secrets Manager secrets and
SSM parameters given as secrets, and the log groups the awslogs driver writes to; and the AWS managed policies its
roles attach (IAM refuses a role whose managed policy does not exist, and the stack fails to deploy) and the ACM
certificates its listeners take (ELB creates no listener without one that is there and issued). Pure Python:
templates in, names out; ``stacks references`` looks each one up in the account.

Each is needed when a task starts, not when the stack deploys: a missing secret or image stops the task
(``ResourceInitializationError``, ``CannotPullContainerError``), and the awslogs driver refuses to start a container
whose log group does not exist unless ``awslogs-create-group`` is ``true`` (Docker's awslogs driver,
``awslogs-create-group``: "the log driver returns an error by default if the log group does not exist"). A name the
templates make themselves (a resource of theirs, or a log group one of them names) is not looked up, nor one that
cannot be read before deploy (a parameter, a condition).

The other way round, ``names_made``: the names the templates give resources they make, which must not be taken
already (``stacks names`` looks each one up).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .fleet import ecr_image
from .service_rules.base import Resource, Templates, _containers, construct_path
from .shape import camel_keys


@dataclass(frozen=True)
class OutsideName:
    owner: str  # the container that names it: "<construct path> container <name>"
    kind: str  # image, secret, parameter, log group, policy (an AWS managed policy a role attaches), certificate
    name: str
    region: str | None  # where to look it up, where the name says (an ARN's, an image's, awslogs-region)


def _text(ctx: Templates, value: Any, stack: str, pseudo: Mapping[str, str]) -> str | None:
    """A value as it will read once deployed, the pseudo parameters filled in; ``None`` where any part is not known
    before deploy (a resource of the templates, a parameter, a condition)."""
    text = ctx.text(value, stack)
    for name, filled in pseudo.items():
        text = text.replace("${" + name + "}", filled)
    return None if "${" in text else text


def _secret_arn(value: str) -> str:
    """A Secrets Manager ARN without the JSON key, version stage and version id ECS takes after it."""
    return ":".join(value.split(":")[:7])


def _log_groups_made(ctx: Templates, stack: str, pseudo: Mapping[str, str]) -> set[str]:
    """The names of the log groups a stack makes, as they will read once deployed."""
    return {
        name
        for group in ctx.of_type("AWS::Logs::LogGroup")
        if group.stack == stack and (name := _text(ctx, group.props.get("LogGroupName"), stack, pseudo)) is not None
    }


def outside_names(
    templates: Mapping[str, Mapping[str, Any]],
    pseudo: Mapping[str, Mapping[str, str]],
    published: Collection[str] = (),
) -> list[OutsideName]:
    """Each name, once a container; ``pseudo`` gives each stack's pseudo parameters that are known (its region,
    the account, ``AWS::Partition``, ``AWS::URLSuffix``). ``published``: the ``repository:tag`` of each image the
    deploy publishes first (the app's image assets), which are not looked up."""
    ctx = Templates(templates)
    every_made = {name for stack in templates for name in _log_groups_made(ctx, stack, pseudo.get(stack, {}))}
    out: list[OutsideName] = []
    for task in ctx.of_type("AWS::ECS::TaskDefinition"):
        known = pseudo.get(task.stack, {})
        for c in _containers(task):
            out += [n for n in _named_by(ctx, task, c, known, every_made) if not _published(n, published)]
    for role in ctx.of_type("AWS::IAM::Role"):
        known = pseudo.get(role.stack, {})
        arns = role.props.get("ManagedPolicyArns")
        for value in arns if isinstance(arns, list) else []:
            arn = _text(ctx, value, role.stack, known)
            if arn and _AWS_MANAGED.fullmatch(arn):
                out.append(OutsideName(construct_path(role), "policy", arn, None))
    for kind in ("AWS::ElasticLoadBalancingV2::Listener", "AWS::ElasticLoadBalancingV2::ListenerCertificate"):
        for listener in ctx.of_type(kind):
            certificates = listener.props.get("Certificates")
            for entry in certificates if isinstance(certificates, list) else []:
                arn = _text(
                    ctx, camel_keys(entry).get("certificateArn"), listener.stack, pseudo.get(listener.stack, {})
                )
                if arn and arn.startswith("arn:") and arn.split(":")[2] == "acm":
                    out.append(OutsideName(construct_path(listener), "certificate", arn, arn.split(":")[3]))
    return out


_AWS_MANAGED = re.compile(r"arn:[a-z-]+:iam::aws:policy/\S+")  # AWS's own: a customer's names the account


def _published(named: OutsideName, published: Collection[str]) -> bool:
    ecr = ecr_image(named.name) if named.kind == "image" else None
    return ecr is not None and f"{ecr.repository}:{ecr.reference}" in published


def _named_by(
    ctx: Templates, task: Resource, c: Mapping[str, Any], pseudo: Mapping[str, str], made: set[str]
) -> Iterator[OutsideName]:
    owner = f"{construct_path(task)} container {c.get('name')}"
    region = pseudo.get("AWS::Region")
    image = _text(ctx, c.get("image"), task.stack, pseudo)
    ecr = ecr_image(image) if image else None
    if image and ecr is not None:
        yield OutsideName(owner, "image", image, ecr.region)
    for secret in c.get("secrets") or []:
        value = _text(ctx, camel_keys(secret).get("valueFrom"), task.stack, pseudo)
        if not value:
            continue
        parts = value.split(":")
        if value.startswith("arn:") and len(parts) > 3 and parts[2] == "secretsmanager":
            yield OutsideName(owner, "secret", _secret_arn(value), parts[3])
        else:  # an SSM parameter, by name or ARN
            yield OutsideName(owner, "parameter", value, parts[3] if value.startswith("arn:") else region)
    logging = camel_keys(c.get("logConfiguration"))
    options: Mapping[str, Any] = logging["options"] if isinstance(logging.get("options"), Mapping) else {}
    if logging.get("logDriver") == "awslogs" and str(options.get("awslogs-create-group", "")).lower() != "true":
        group = _text(ctx, options.get("awslogs-group"), task.stack, pseudo)
        where = _text(ctx, options.get("awslogs-region"), task.stack, pseudo) or region
        if group and group not in made:
            yield OutsideName(owner, "log group", group, where)


@dataclass(frozen=True)
class MadeName:
    owner: str  # the construct path of the resource that makes it
    stack: str  # its stack (a nested one's path: ``<parent>/<logical id>``)
    logical_id: str
    kind: str  # its CloudFormation type
    name: str


NAME_PROPERTIES = {  # a type that takes a name of the template's -> the property that gives it
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::ECR::Repository": "RepositoryName",
    "AWS::SecretsManager::Secret": "Name",
}
REF_IS_NAME = {  # a type whose Ref returns the name that property gives (a secret's Ref is its ARN)
    "AWS::ECS::Cluster": "ClusterName",
    **{kind: key for kind, key in NAME_PROPERTIES.items() if kind != "AWS::SecretsManager::Secret"},
}


def names_made(templates: Mapping[str, Mapping[str, Any]], pseudo: Mapping[str, Mapping[str, str]]) -> list[MadeName]:
    """The resources of ``NAME_PROPERTIES`` the templates make under a name known before deploy (written, pseudo
    parameters filled in, or read through a resource named in the template): CloudFormation refuses to make one whose
    name is taken already. A log group kept from an earlier deploy is the common case (CDK keeps a log group when its
    stack is deleted: ``RemovalPolicy.RETAIN``, aws-logs ``LogGroupProps.removalPolicy``; buckets and repositories
    too); IAM's names are the account's in every region, a bucket's every account's, and a secret deleted keeps its
    name for its recovery window. A name built from a resource whose name CloudFormation makes (a cluster's generated
    name) is new with it, and not listed."""
    ctx = Templates(templates)
    out = []
    for kind, key in NAME_PROPERTIES.items():
        for made in sorted(ctx.of_type(kind), key=lambda r: (r.stack, r.logical_id)):
            text = _REFERENCE.sub(lambda m: _named(ctx, m), ctx.text(made.props.get(key), made.stack))
            for name, filled in pseudo.get(made.stack, {}).items():
                text = text.replace("${" + name + "}", filled)
            if "${" not in text:
                out.append(MadeName(construct_path(made), made.stack, made.logical_id, kind, text))
    return out


_REFERENCE = re.compile(r"\$\{([^}.]+/[^}./]+)\}")  # Templates.text's ${stack/logical id} (no attribute)


def _named(ctx: Templates, match: re.Match[str]) -> str:
    """A reference to a resource whose ``Ref`` is its name, where the template gives that name (a cluster named in
    code: aws-ecs's ``cluster_name`` is still written as a ``Ref``), else the reference as it was."""
    stack, _, logical_id = match.group(1).rpartition("/")
    resource = ctx.resource(stack, logical_id)
    named = resource.props.get(REF_IS_NAME.get(resource.kind, "")) if resource is not None else None
    return named if isinstance(named, str) else match.group(0)
