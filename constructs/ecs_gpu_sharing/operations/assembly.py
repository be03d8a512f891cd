"""A CDK app's cloud assembly (``cdk.out``): its stacks, their templates and regions, for the commands that compare
what an app synthesized with an account (``stacks replacements``, ``stacks references``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.errors import AwsOperationError
from ..core.nested_stacks import joined, read_nested


@dataclass(frozen=True)
class AssemblyStack:
    name: str  # the stack's name in CloudFormation
    artifact: str  # its artifact id in the assembly
    template: Path
    region: str | None  # None: environment-agnostic, deployed to the caller's region
    account: str | None = None  # None: deployed to the caller's account


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
            account, _, region = str(artifact.get("environment", "")).removeprefix("aws://").partition("/")
            found.append(
                AssemblyStack(
                    properties.get("stackName") or artifact_id,
                    artifact_id,
                    directory / properties["templateFile"],
                    None if region in ("", "unknown-region") else region,
                    None if account in ("", "unknown-account") else account,
                )
            )
    return found


def with_nested_stacks(stacks: list[AssemblyStack]) -> tuple[list[AssemblyStack], dict[str, Any]]:
    """``stacks`` and their nested stacks (``cdk.NestedStack``: each named ``<parent>/<its logical id>``, in its
    parent's account and region), and every template by name as the checks read them, each nested one joined to its
    parent (``core.nested_stacks``): what runs in a nested stack is deployed with its parent."""
    written: dict[str, Any] = {s.name: json.loads(s.template.read_text()) for s in stacks}
    nested = read_nested(written, {s.name: s.template for s in stacks}, lambda parent, id_, _file: f"{parent}/{id_}")
    by_name = {s.name: s for s in stacks}
    for (parent, _), (child, path, template) in nested.items():  # a parent before the stacks nested in it
        by_name[child] = replace(by_name[parent], name=child, template=path)
        written[child] = template
    joinable = {at: (child, template) for at, (child, _, template) in nested.items()}
    return list(by_name.values()), joined(written, joinable)


def published_images(directory: Path) -> dict[str, set[str]]:
    """The container images ``cdk deploy`` publishes before it deploys each stack (its asset manifest's
    ``dockerImages``), by the stack's asset manifest artifact id, as ``repository:tag`` with CloudFormation's
    placeholders (``${AWS::AccountId}``) as written."""
    manifest = json.loads((directory / "manifest.json").read_text())
    found: dict[str, set[str]] = {}
    for artifact_id, artifact in sorted((manifest.get("artifacts") or {}).items()):
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "cdk:cloud-assembly":
            found.update(published_images(directory / properties["directoryName"]))
        elif artifact.get("type") == "cdk:asset-manifest":
            assets = json.loads((directory / properties["file"]).read_text())
            found[artifact_id.removesuffix(".assets")] = {
                f"{d['repositoryName']}:{d['imageTag']}"
                for image in (assets.get("dockerImages") or {}).values()
                for d in (image.get("destinations") or {}).values()
            }
    return found
