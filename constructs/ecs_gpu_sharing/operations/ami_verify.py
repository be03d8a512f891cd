"""``ami verify``: proves, before deploy, that a pinned AL2023 GPU AMI release exists where the fleet runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import ami_release
from .aws import aws_errors


@dataclass(frozen=True)
class RegionResult:
    region: str
    image_id: str | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def inspect_region(ssm: Any, ec2: Any, release: str) -> RegionResult:
    """Resolves the release's public SSM parameter and checks the image it names (name, x86_64, available, and the
    root device the launch templates size)."""
    region = ssm.meta.region_name
    parameter = ami_release.ssm_parameter_unchecked(release)
    with aws_errors(f"{region}: reading SSM parameter {parameter}"):
        try:
            image_id = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
        except ssm.exceptions.ParameterNotFound:
            return RegionResult(region, None, f"no public SSM parameter {parameter}: the release is not published here")
    with aws_errors(f"{region}: describing image {image_id}"):
        images = ec2.describe_images(ImageIds=[image_id])["Images"]
    if not images:
        return RegionResult(region, image_id, f"the parameter names {image_id}, which DescribeImages does not find")
    image = images[0]
    expected = ami_release.AMI_NAME_TEMPLATE.format(release=release)
    if image.get("Name") != expected:
        return RegionResult(region, image_id, f"{image_id} is named {image.get('Name')!r}, not {expected!r}")
    if image.get("Architecture") != "x86_64":
        return RegionResult(region, image_id, f"{image_id} is {image.get('Architecture')}, not x86_64")
    if image.get("State", "available") != "available":
        return RegionResult(region, image_id, f"{image_id} is {image.get('State')}, not available")
    if image.get("RootDeviceName") != ami_release.ROOT_DEVICE:
        return RegionResult(
            region,
            image_id,
            f"{image_id}'s root device is {image.get('RootDeviceName')}, not {ami_release.ROOT_DEVICE}, which the "
            "launch templates map to size the root volume (root_volume_gib): there it would be a second disk and the "
            "images and model caches would fill the AMI's own root; pin a release whose image checks out",
        )
    return RegionResult(region, image_id, None)


def verify(release: str, regions: list[str], clients: Any) -> list[RegionResult]:
    """Checks ``release`` (refused below the floor before any call) in every region.

    ``clients(service, region)`` makes a boto3 client.
    """
    ami_release.check_release(release, verified=True)  # this command is how an unlisted release gets verified
    return [inspect_region(clients("ssm", region), clients("ec2", region), release) for region in regions]
