"""A CDK app's cloud assembly (``cdk.out``): its stacks, their templates and regions, for the commands that compare
what an app synthesized with an account (``stacks replacements``, ``stacks references``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import AwsOperationError


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
