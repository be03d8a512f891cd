"""``stacks replacements``: before a deploy, which resources the synthesized stacks would replace under a custom name
they keep, compared with the templates deployed (``core.replacement`` judges; this reads the cloud assembly and calls
CloudFormation's GetTemplate). Works for any CDK app's ``cdk.out``, the fleet app's and a team's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.replacement import Replacement, replacements
from .assembly import assembly_stacks
from .aws import Clients, aws_errors
from .deployed import template_of


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
