"""``ami verify``: proves, before deploy, that a pinned AL2023 GPU AMI release exists where the fleet runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import ami_release
from ..core.capacity_facts import ROOT_VOLUME_MIN_GIB
from .aws import aws_errors


@dataclass(frozen=True)
class RegionResult:
    region: str
    image_id: str | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def inspect_region(ssm: Any, ec2: Any, release: str, root_gib: int = ROOT_VOLUME_MIN_GIB) -> RegionResult:
    """Resolves the release's public SSM parameter and checks the image it names (name, x86_64, available, the root
    device the launch templates size, and a root snapshot no larger than ``root_gib``, the smallest root volume a
    capacity gives it: by default the least the constructs take)."""
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
    root: dict[str, Any] = next(
        (m for m in image.get("BlockDeviceMappings") or [] if m.get("DeviceName") == ami_release.ROOT_DEVICE), {}
    )
    snapshot_gib = (root.get("Ebs") or {}).get("VolumeSize")
    if isinstance(snapshot_gib, int) and snapshot_gib > root_gib:
        # EC2 API Reference, EbsBlockDevice, VolumeSize: "You can specify a volume size that is equal to or larger
        # than the snapshot size": a smaller root volume launches no host.
        return RegionResult(
            region,
            image_id,
            f"{image_id}'s root snapshot is {snapshot_gib} GiB, and EC2 launches no root volume smaller than its "
            f"snapshot: a root_volume_gib of {root_gib} launches no host; give root_volume_gib {snapshot_gib} or more",
        )
    return RegionResult(region, image_id, None)


def verify(release: str, regions: list[str], clients: Any, root_gib: int = ROOT_VOLUME_MIN_GIB) -> list[RegionResult]:
    """Checks ``release`` (refused below the floor before any call) in every region, for root volumes of at least
    ``root_gib``.

    ``clients(service, region)`` makes a boto3 client.
    """
    ami_release.check_release(release, verified=True)  # this command is how an unlisted release gets verified
    return [inspect_region(clients("ssm", region), clients("ec2", region), release, root_gib) for region in regions]
