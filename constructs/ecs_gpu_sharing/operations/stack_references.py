"""``stacks references``: before a deploy, whether what a CDK app's task definitions name outside their templates
exists in the account: private ECR images, secrets and parameters, awslogs log groups (``core.outside_names`` reads
them from ``cdk.out``; the lookups are ``fleet references``'s, and one for log groups). For any CDK app, the
construct road's included, where ``fleet references`` reads a fleet file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.outside_names import outside_names
from .assembly import AssemblyStack, assembly_stacks, published_images, with_nested_stacks
from .aws import Clients, aws_errors
from .references import LOOKUPS, Found, Reference


def _log_group(clients: Clients, region: str | None, name: str) -> Found:
    client = clients("logs", region)
    groups = client.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
    if any(g["logGroupName"] == name for g in groups):
        return None, None
    return (
        f"no log group {name!r} in {client.meta.region_name} and awslogs-create-group is not true: the awslogs "
        "driver would not start the container; create the log group (in the templates or before the deploy), or set "
        "awslogs-create-group to true (the execution role then needs logs:CreateLogGroup)",
        None,
    )


def pseudo_parameters(clients: Clients, region: str | None) -> dict[str, str]:
    """The pseudo parameters an environment-agnostic stack reads, as this caller's deploy would fill them."""
    sts = clients("sts", region)
    identity = sts.get_caller_identity()  # needs no permission: what fails here fails every lookup after it
    partition = identity["Arn"].split(":")[1]
    found = {"AWS::AccountId": identity["Account"], "AWS::Partition": partition}
    found["AWS::URLSuffix"] = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    if region or sts.meta.region_name:
        found["AWS::Region"] = region or sts.meta.region_name
    return found


def stack_pseudo_parameters(
    clients: Clients, stacks: Sequence[AssemblyStack], region: str | None
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The caller's pseudo parameters (``pseudo_parameters``), and each stack's: the caller's, with the stack's own
    region where its environment names one."""
    with aws_errors("reading the caller's account (sts GetCallerIdentity)"):
        caller = pseudo_parameters(clients, region)
    return caller, {s.name: {**caller, **({"AWS::Region": s.region} if s.region else {})} for s in stacks}


def check(clients: Clients, cdk_out: Path, region: str | None) -> list[Reference]:
    """Each name, looked up once (by kind, region and name), with what is wrong with it."""
    stacks, templates = with_nested_stacks(assembly_stacks(cdk_out))
    caller, pseudo = stack_pseudo_parameters(clients, stacks, region)
    published = set()  # the image assets cdk deploy publishes first, their placeholders filled as for their stack
    for artifact, images in published_images(cdk_out).items():
        filled = pseudo.get(next((s.name for s in stacks if s.artifact == artifact), ""), caller)
        for image in images:
            for name, value in filled.items():
                image = image.replace("${" + name + "}", value)
            published.add(image)
    lookups = {**LOOKUPS, "log group": _log_group}
    seen: dict[tuple[str, str | None, str], Found] = {}
    out = []
    for named in outside_names(templates, pseudo, published):
        key = (named.kind, named.region or region, named.name)
        if key not in seen:
            with aws_errors(f"looking up {named.kind} {named.name}"):
                seen[key] = lookups[named.kind](clients, named.region or region, named.name)
        out.append(Reference(named.owner, named.kind, named.name, seen[key][0]))
    return out


def report(found: list[Reference]) -> list[str]:
    lines = [f"{r.service}: {r.kind} {r.name}: {r.problem or 'found'}" for r in found]
    return lines or [
        "the stacks name no private ECR image, secret, parameter, log group, AWS managed policy or certificate outside "
        "themselves"
    ]


def to_json(found: list[Reference]) -> list[dict[str, Any]]:
    return [r.to_json() for r in found]
