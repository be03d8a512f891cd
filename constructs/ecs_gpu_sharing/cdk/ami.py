"""``GpuAmi``: how a GPU launch template's AMI is pinned. Never the floating ``recommended`` parameter."""

from __future__ import annotations

import re
from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from ..core import ami_release
from ..core.capacity_facts import AMI_IDS_FOR_SOME_REGIONS
from ..core.errors import AmiError

_AMI_ID = re.compile(r"^ami-[0-9a-f]{8}([0-9a-f]{9})?$", re.ASCII)
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$", re.ASCII)


class GpuAmi:
    """A pinned ECS-optimized Amazon Linux 2023 GPU AMI. Build one with a class method.

    - :meth:`release`: a release, resolved at deploy time through its public SSM parameter (offline synth).
    - :meth:`image_ids`: explicit AMI ids per region, written into the template (the strictest pin).
    - :meth:`lookup`: EC2 DescribeImages by exact name at synth, cached in ``cdk.context.json``
      (environment-bound stacks only).
    """

    def __init__(
        self,
        *,
        kind: str,
        description: str,
        release: str | None = None,
        ids: Mapping[str, str] | None = None,
        verified: bool = False,
    ) -> None:
        self.kind = kind
        self.verified = verified
        self.description = description
        self.release_id = release
        self._ids = dict(ids or {})

    @classmethod
    def release(cls, release: str = ami_release.DEFAULT_AMI_RELEASE, *, verified: bool = False) -> GpuAmi:
        """The AMI of ``release`` (YYYYMMDD, at or after the floor), through its public SSM parameter.

        A release must be in the library's table of known, published releases, unless ``verified`` states that
        ``ecs-gpu-sharing ami verify --release ...`` found it. The per-release GPU parameter path is unconfirmed
        (see ``ami_release.SSM_PARAMETER_TEMPLATE``): run ``ami verify`` before deploy.
        """
        parameter = ami_release.ssm_parameter(release, verified=verified)
        return cls(
            kind="release", description=f"release {release} (SSM {parameter})", release=release, verified=verified
        )

    @classmethod
    def image_ids(cls, ids_by_region: Mapping[str, str]) -> GpuAmi:
        """Explicit AMI ids by region, such as ``{"us-east-1": "ami-0123456789abcdef0"}``."""
        if not isinstance(ids_by_region, Mapping) or not ids_by_region:
            raise AmiError(f"GpuAmi.image_ids needs a non-empty mapping of region to AMI id, got {ids_by_region!r}")
        for region, image_id in ids_by_region.items():
            if not isinstance(region, str) or not _REGION.fullmatch(region):
                raise AmiError(f"GpuAmi.image_ids: {region!r} is not a region name such as 'us-east-1'")
            if not isinstance(image_id, str) or not _AMI_ID.fullmatch(image_id):
                raise AmiError(
                    f"GpuAmi.image_ids: {image_id!r} for {region} is not an AMI id such as 'ami-0123456789abcdef0'"
                )
        regions = ", ".join(sorted(ids_by_region))
        return cls(kind="image_ids", description=f"explicit AMI ids ({regions})", ids=ids_by_region)

    @classmethod
    def lookup(cls, release: str = ami_release.DEFAULT_AMI_RELEASE, *, verified: bool = False) -> GpuAmi:
        """The AMI named for ``release``, found by EC2 DescribeImages (owner Amazon) and cached in context."""
        name = ami_release.ami_name(release, verified=verified)
        return cls(kind="lookup", description=f"lookup of {name}", release=release, verified=verified)

    def machine_image(self, scope: Construct) -> ec2.IMachineImage:
        """The CDK machine image for a launch template in ``scope``'s stack."""
        if self.kind == "release":
            assert self.release_id is not None
            return ec2.MachineImage.from_ssm_parameter(
                ami_release.ssm_parameter(self.release_id, verified=self.verified), os=ec2.OperatingSystemType.LINUX
            )
        stack = cdk.Stack.of(scope)
        if self.kind == "image_ids":
            if not cdk.Token.is_unresolved(stack.region) and stack.region not in self._ids:
                raise AmiError(
                    f"{scope.node.path}: GpuAmi.image_ids has no AMI for the stack's region {stack.region} "
                    f"(it has {', '.join(sorted(self._ids))}); add that region's AMI id"
                )
            if cdk.Token.is_unresolved(stack.region):
                regions = ", ".join(sorted(self._ids))
                cdk.Annotations.of(scope).add_warning_v2(
                    AMI_IDS_FOR_SOME_REGIONS,
                    f"GpuAmi.image_ids has AMIs for {regions} only, and the stack is environment-agnostic: deployed "
                    "to any other region, its launch template's Fn::FindInMap finds no AMI and the stack fails; give "
                    f"the stack env= or an AMI id for each region you deploy to, or acknowledge "
                    f"'{AMI_IDS_FOR_SOME_REGIONS}'",
                )
            return ec2.MachineImage.generic_linux(self._ids)
        assert self.release_id is not None
        if cdk.Token.is_unresolved(stack.account) or cdk.Token.is_unresolved(stack.region):
            raise AmiError(
                f"{scope.node.path}: GpuAmi.lookup({self.release_id!r}) needs a stack with an explicit account "
                "and region (env=...); use GpuAmi.release(...) for an environment-agnostic stack"
            )
        return ec2.MachineImage.lookup(
            name=ami_release.ami_name(self.release_id, verified=self.verified),
            owners=[ami_release.AMI_OWNER],
            filters={"architecture": ["x86_64"]},
        )

    def __repr__(self) -> str:
        return f"GpuAmi({self.description})"
