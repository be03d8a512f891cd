"""What a new account has before a deploy that moto lacks: public AMI parameters, certificates, images."""

# This module completes moto (an emulator) at run time: it replaces methods of moto's models and registers models
# of its own, which mypy cannot type against moto's classes.
# mypy: disable-error-code="assignment,method-assign,attr-defined,abstract,arg-type,call-overload,unused-ignore,misc"
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ecs_gpu_sharing.core.ami_release import ROOT_DEVICE

from .report import ACCOUNT, REGION

_AMI_PARAMETER = re.compile(r"^/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/(?P<name>[^/]+)/image_id$")


def seed_public_amis(templates: Mapping[str, Any], *, account: str = ACCOUNT, region: str = REGION) -> list[str]:
    """Registers the pinned AMI releases that moto's copy of AWS's public SSM parameters does not have (it stops at
    release 20260922), with their public parameter, inside the in-process moto backend. Returns what was seeded."""
    import boto3
    from moto.ssm.models import Parameter, ssm_backends

    ec2 = boto3.client("ec2", region_name=region)
    ssm = boto3.client("ssm", region_name=region)
    seeded = []
    for template in templates.values():
        for parameter in (template.get("Parameters") or {}).values():
            match = _AMI_PARAMETER.match(str(parameter.get("Default", "")))
            if match is None:
                continue
            name = parameter["Default"]
            try:
                ssm.get_parameter(Name=name)
                continue
            except ssm.exceptions.ParameterNotFound:
                pass
            image = ec2.register_image(
                Name=match["name"], Architecture="x86_64", RootDeviceName=ROOT_DEVICE, VirtualizationType="hvm"
            )["ImageId"]
            from moto.ec2.models import ec2_backends

            seeded_image = ec2_backends[account][region].amis[image]
            seeded_image.architecture = "x86_64"  # moto's RegisterImage drops it,
            seeded_image.root_device_name = ROOT_DEVICE  # and this, as AWS lists it for these images
            # AWS reserves /aws/ names, and so does moto's API: add it the way moto loads its public parameters.
            store = ssm_backends[account][region]._parameters
            store._check_loading_status(name)
            super(type(store), store).__getitem__(name).append(
                Parameter(
                    account_id=account,
                    name=name,
                    value=image,
                    parameter_type="String",
                    description=None,
                    allowed_pattern=None,
                    keyid=None,
                    last_modified_date=0,
                    version=1,
                    data_type="aws:ec2:image",
                )
            )
            seeded.append(f"AMI {match['name']} as {image}, with its public SSM parameter (newer than moto's copy)")
    return seeded


def seed_certificates(templates: Mapping[str, Any], *, account: str = ACCOUNT, region: str = REGION) -> list[str]:
    """Puts each ACM certificate a listener names into moto's ACM under that ARN (AWS would hold the team's own
    certificate there), as a self-signed certificate for the listener's host."""
    from moto.acm.models import CertBundle, acm_backends

    backend = acm_backends[account][region]
    seeded = []
    for template in templates.values():
        for resource in (template.get("Resources") or {}).values():
            for certificate in (resource.get("Properties") or {}).get("Certificates") or []:
                arn = certificate.get("CertificateArn")
                if (
                    not isinstance(arn, str)
                    or not arn.startswith(f"arn:aws:acm:{region}:")
                    or arn in backend._certificates
                ):
                    continue
                bundle = CertBundle.generate_cert("rehearsal.example.com", account_id=account, region=region)
                bundle.arn = arn
                backend._certificates[arn] = bundle
                seeded.append(f"certificate {arn} (self-signed; AWS would hold your own)")
    return seeded


def seed_container_images(assembly: Path, *, region: str = REGION) -> list[str]:
    """Puts a manifest under each Docker image asset's tag in moto's ECR, those of the app's stages included, so
    cdk-assets finds it published and does not build it (no Docker daemon here): the image's contents are not
    rehearsed."""
    import boto3

    ecr = boto3.client("ecr", region_name=region)
    seeded = []
    # A stage's assets are in its nested assembly, a folder assembly-<stage> (and its stages' in folders within).
    for assets in sorted([*assembly.glob("*.assets.json"), *assembly.glob("assembly-*/**/*.assets.json")]):
        for asset_id, asset in (json.loads(assets.read_text()).get("dockerImages") or {}).items():
            for destination in asset["destinations"].values():
                repository = (
                    destination["repositoryName"]
                    .replace("${AWS::AccountId}", ACCOUNT)
                    .replace("${AWS::Region}", region)
                )
                manifest = {
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                    "config": {
                        "mediaType": "application/vnd.docker.container.image.v1+json",
                        "size": 0,
                        "digest": "sha256:" + asset_id[:64].ljust(64, "0"),
                    },
                    "layers": [],
                }
                try:
                    ecr.put_image(
                        repositoryName=repository, imageManifest=json.dumps(manifest), imageTag=destination["imageTag"]
                    )
                except ecr.exceptions.ImageAlreadyExistsException:
                    continue
                seeded.append(f"image {asset.get('displayName', asset_id)} tagged in ECR, not built (no Docker here)")
    return seeded
