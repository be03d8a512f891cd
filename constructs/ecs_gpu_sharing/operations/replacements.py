"""``stacks replacements``: before a deploy, what the synthesized stacks would do to the deployed ones that
CloudFormation refuses: replace a resource under a custom name it keeps (``core.replacement``), remove or change an
export another stack imports (``core.exports_in_use``), or update a resource in a way its service refuses in place
(``core.update_refusals``). Reads the cloud assembly and calls CloudFormation's
GetTemplate and ListImports. Works for any CDK app's ``cdk.out``, the fleet app's and a team's own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import AwsOperationError
from ..core.exports_in_use import ExportInUse, export_names, exports_in_use
from ..core.nested_stacks import read_nested
from ..core.replacement import Replacement, replacements
from ..core.update_refusals import UpdateRefusal, update_refusals
from .assembly import assembly_stacks
from .aws import Clients, aws_errors
from .deployed import physical_ids, template_of

Finding = Replacement | ExportInUse | UpdateRefusal


def importers(cloudformation: Any, export: str) -> list[str]:
    """The stacks that import an export (``ListImports``); none where CloudFormation says nothing imports it."""
    try:
        pages = cloudformation.get_paginator("list_imports").paginate(ExportName=export)
        return [name for page in pages for name in page["Imports"]]
    except cloudformation.exceptions.ClientError as error:
        if "is not imported by any stack" in str(error):  # ListImports' ValidationError for an export no one imports
            return []
        raise


@dataclass(frozen=True)
class Result:
    found: list[Finding]
    not_deployed: list[str]  # stacks with nothing deployed to compare
    not_checked: list[str]  # what CloudFormation would not answer: "<stack>: <why>"


def check(clients: Clients, cdk_out: Path, region: str | None) -> Result:
    """What the assembly's stacks would meet, the stacks not deployed yet, and what could not be read."""
    result = Result([], [], [])
    for stack in assembly_stacks(cdk_out):
        cloudformation = clients("cloudformation", stack.region or region)
        with aws_errors(f"reading stack {stack.name}'s deployed template"):
            deployed = template_of(cloudformation, stack.name)
        if deployed is None:
            result.not_deployed.append(stack.name)
            continue
        new = json.loads(stack.template.read_text())
        result.found.extend(replacements(stack.name, deployed, new))
        result.found.extend(update_refusals(stack.name, deployed, new))
        _nested(cloudformation, stack.name, new, stack.template, result)
        try:
            with aws_errors(f"reading who imports stack {stack.name}'s exports (ListImports)"):
                imported = {name: importers(cloudformation, name) for name in export_names(stack.name, deployed)}
        except AwsOperationError as error:  # a caller without cloudformation:ListImports: said, not fatal
            result.not_checked.append(f"{stack.name}: its exports in use were not checked: {error}")
            continue
        result.found.extend(exports_in_use(stack.name, deployed, new, imported))
    return result


def _nested(cloudformation: Any, name: str, template: dict[str, Any], file: Path, result: Result) -> None:
    """The replacements in the stack's nested stacks (``cdk.NestedStack``), each named ``<stack>/<its logical id>``:
    CloudFormation updates them with their parent and refuses the same replacements there. A nested stack's deployed
    template is that of the stack its parent's resource names (ListStackResources' physical id, the nested stack's
    ARN)."""
    deployed_as = {name: name}  # a template's key -> the deployed stack to read (a name, or a nested stack's ARN)
    ids: dict[str, dict[str, str]] = {}  # a deployed parent's physical ids, read once
    nested = read_nested({name: template}, {name: file}, lambda parent, id_, _file: f"{parent}/{id_}")
    for (parent, logical_id), (child, _, new) in nested.items():  # a parent before the stacks nested in it
        if parent not in deployed_as:
            continue  # its parent is not deployed yet
        with aws_errors(f"reading stack {child}'s deployed template"):
            if parent not in ids:
                ids[parent] = physical_ids(cloudformation, deployed_as[parent]) or {}
            arn = ids[parent].get(logical_id)
            deployed = template_of(cloudformation, arn) if arn else None
        if deployed is None:
            result.not_deployed.append(child)
            continue
        deployed_as[child] = arn  # type: ignore[assignment]
        result.found.extend(replacements(child, deployed, new))
        result.found.extend(update_refusals(child, deployed, new))


def report(result: Result) -> list[str]:
    lines = [f.problem for f in result.found]
    lines += [f"{name}: not deployed yet (nothing is replaced)" for name in result.not_deployed]
    lines += result.not_checked
    return lines or [
        "no resource is replaced under a name it keeps, no export in use changes, and no update is one AWS refuses"
    ]


def to_json(result: Result) -> dict[str, Any]:
    return {
        "replacements": [f.to_json() for f in result.found if isinstance(f, Replacement)],
        "exports_in_use": [f.to_json() for f in result.found if isinstance(f, ExportInUse)],
        "update_refusals": [f.to_json() for f in result.found if isinstance(f, UpdateRefusal)],
        "not_deployed": result.not_deployed,
        "not_checked": result.not_checked,
    }
