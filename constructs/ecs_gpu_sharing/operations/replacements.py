"""``stacks replacements``: before a deploy, which resources the synthesized stacks would replace under a custom name
they keep, compared with the templates deployed (``core.replacement`` judges; this reads the cloud assembly and calls
CloudFormation's GetTemplate). Works for any CDK app's ``cdk.out``, the fleet app's and a team's own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import AwsOperationError
from ..core.replacement import Replacement, replacements
from .aws import Clients, aws_errors
from .deployed import template_of


@dataclass(frozen=True)
class AssemblyStack:
    name: str  # the stack's name in CloudFormation
    template: Path
    region: str | None  # None: environment-agnostic, deployed to the caller's region


def assembly_stacks(directory: Path) -> list[AssemblyStack]:
    """The stacks of a cloud assembly (``cdk.out``), those of nested assemblies (stages) included."""
    manifest_file = directory / "manifest.json"
    if not manifest_file.is_file():
        raise AwsOperationError(f"{directory} has no manifest.json: run cdk synth first, or give --cdk-out")
    manifest = json.loads(manifest_file.read_text())
    found = []
    for artifact_id, artifact in sorted((manifest.get("artifacts") or {}).items()):
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "cdk:cloud-assembly":
            found += assembly_stacks(directory / properties["directoryName"])
        elif artifact.get("type") == "aws:cloudformation:stack":
            region = str(artifact.get("environment", "")).rsplit("/", 1)[-1]
            found.append(
                AssemblyStack(
                    properties.get("stackName") or artifact_id,
                    directory / properties["templateFile"],
                    None if region in ("", "unknown-region") else region,
                )
            )
    return found


def check(clients: Clients, cdk_out: Path, region: str | None) -> tuple[list[Replacement], list[str]]:
    """The replacements the assembly's stacks would meet, and the stacks not deployed yet (nothing to compare)."""
    found: list[Replacement] = []
    new_stacks = []
    for stack in assembly_stacks(cdk_out):
        with aws_errors(f"reading stack {stack.name}'s deployed template"):
            deployed = template_of(clients("cloudformation", stack.region or region), stack.name)
        if deployed is None:
            new_stacks.append(stack.name)
            continue
        found += replacements(stack.name, deployed, json.loads(stack.template.read_text()))
    return found, new_stacks


def report(found: list[Replacement], new_stacks: list[str]) -> list[str]:
    lines = [r.problem for r in found]
    lines += [f"{name}: not deployed yet (nothing is replaced)" for name in new_stacks]
    return lines or ["no resource is replaced under a name it keeps"]


def to_json(found: list[Replacement], new_stacks: list[str]) -> dict[str, Any]:
    return {"replacements": [r.to_json() for r in found], "not_deployed": new_stacks}
