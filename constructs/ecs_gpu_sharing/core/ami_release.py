"""ECS-optimized Amazon Linux 2023 GPU AMI releases: the floor, the default, the name. Pure Python.

Facts (the ECS GPU sharing announcement, 2026-10-27; the amazon-ecs-ami releases): AWS names the AL2023 GPU AMI
release 20261019 or later and ECS agent 1.107.0 or later as required. That floor is what AWS requires, not the first
release carrying agent 1.107.0 (20260922 already did). The AMI exists for x86_64 only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from typing import Any

from .dates import latest_today
from .errors import AmiError

AMI_RELEASE_FLOOR = "20261019"
"""The AL2023 GPU AMI release AWS names as required for ECS GPU sharing (MPS)."""

DEFAULT_AMI_RELEASE = "20261113"
"""The newest release this library knows (ECS agent 1.108.3); a test keeps it in the table of known releases."""

RELEASES_FILE = "ami_releases.json"
VERIFY_HINT = (
    "run `ecs-gpu-sharing ami verify --release {release}` and then state that it was verified "
    "(GpuAmi.release(..., verified=True); fleet key ami_release_verified = true), or "
    "`ecs-gpu-sharing ami refresh` to add published releases to the table"
)


@dataclass(frozen=True)
class KnownRelease:
    """A published AL2023 GPU AMI release at or above the floor: its ECS agent, and where the fact comes from."""

    release: str
    ecs_agent_version: str | None
    source: str


def releases_path() -> Any:
    return resources.files("ecs_gpu_sharing.core") / "data" / RELEASES_FILE


def parse_releases(text: str) -> dict[str, KnownRelease]:
    rows = json.loads(text)["releases"]
    return {r: KnownRelease(r, row.get("ecs_agent_version"), row["source"]) for r, row in rows.items()}


def render_releases(releases: dict[str, KnownRelease]) -> str:
    """The data file's text: one release a line, sorted, so a refreshed file diffs by release."""
    lines = [
        f"  {json.dumps(r)}: " + json.dumps({"ecs_agent_version": k.ecs_agent_version, "source": k.source})
        for r, k in sorted(releases.items())
    ]
    return '{\n "generated_by": "ecs-gpu-sharing ami refresh",\n "releases": {\n' + ",\n".join(lines) + "\n }\n}\n"


@cache
def known_releases() -> dict[str, KnownRelease]:
    """The table of known releases (``data/ami_releases.json``), by release."""
    return parse_releases(releases_path().read_text(encoding="utf-8"))


ECS_AGENT_FLOOR = (1, 107, 0)
"""The first ECS container agent version with GPU sharing."""

AMI_NAME_TEMPLATE = "al2023-ami-ecs-gpu-hvm-2023.0.{release}-kernel-6.1-x86_64-ebs"
AMI_OWNER = "amazon"
# The images' root device, which the launch templates map to size the root volume: a mapping of another name is a
# second disk. AWS lists /dev/xvda for every AL2023 ECS GPU image in moto's copy of its data; `ami verify` checks the
# pinned image's own RootDeviceName in each region.
ROOT_DEVICE = "/dev/xvda"

# Per-release public SSM parameter. This GPU path is not confirmed for releases at or above the floor: AWS's
# public parameter list as moto 5.2 ships it has exactly this path for GPU releases up to 20260922 (older than
# the floor), so the pattern holds there; releases from 20261019 on are newer than that copy. Run
# `ecs-gpu-sharing ami verify` before deploy, or pin with GpuAmi.image_ids / GpuAmi.lookup. Correct it here.
SSM_PARAMETER_TEMPLATE = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/{ami_name}/image_id"

_RELEASE = re.compile(r"^\d{8}$", re.ASCII)
_NAME = re.compile(r"^al2023-ami-ecs-gpu-hvm-2023\.0\.(\d{8})-kernel-6\.1-x86_64-ebs$", re.ASCII)


def check_release(release: Any, *, verified: bool = False) -> str:
    """``release`` as a valid YYYYMMDD string, not in the future, at or after the floor, and known to be published
    (in the table of known releases) unless ``verified`` states that it was checked; refuses anything else."""
    what = f"AMI release {release!r}"
    if not isinstance(release, str) or not _RELEASE.fullmatch(release):
        raise AmiError(f"{what} is malformed: give the release date as 'YYYYMMDD', such as '{DEFAULT_AMI_RELEASE}'")
    try:
        date(int(release[:4]), int(release[4:6]), int(release[6:]))
    except ValueError:
        raise AmiError(f"{what} is not a real date: give the release date as 'YYYYMMDD'") from None
    if release > latest_today().strftime("%Y%m%d"):
        raise AmiError(
            f"{what} is in the future: no AMI is published for it yet; use a published release, such as "
            f"{DEFAULT_AMI_RELEASE} (ecs-gpu-sharing ami verify --release checks one)"
        )
    if release < AMI_RELEASE_FLOOR:
        raise AmiError(
            f"{what} is older than {AMI_RELEASE_FLOOR}, the AL2023 GPU AMI release AWS names as required for "
            f"GPU sharing (with ECS agent >= {format_version(ECS_AGENT_FLOOR)}); use {AMI_RELEASE_FLOOR} or later, "
            f"such as {DEFAULT_AMI_RELEASE}"
        )
    if not verified and release not in known_releases():
        known = ", ".join(sorted(known_releases()))
        raise AmiError(
            f"{what} is not a release this library knows to be published (known: {known}); use one of them, or "
            + VERIFY_HINT.format(release=release)
        )
    return release


def ami_name(release: str, *, verified: bool = False) -> str:
    return AMI_NAME_TEMPLATE.format(release=check_release(release, verified=verified))


def release_of(name: str) -> str | None:
    """The release of an AL2023 GPU AMI name; ``None`` when the name is not of that pattern."""
    match = _NAME.fullmatch(name)
    return match.group(1) if match else None


def ssm_parameter(release: str, *, verified: bool = False) -> str:
    return SSM_PARAMETER_TEMPLATE.format(ami_name=ami_name(release, verified=verified))


def ssm_parameter_unchecked(release: str) -> str:
    """The parameter path of any well-formed release, the floor not applied (for inspecting old releases)."""
    return SSM_PARAMETER_TEMPLATE.format(ami_name=AMI_NAME_TEMPLATE.format(release=release))


def format_version(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def parse_version(text: str) -> tuple[int, ...] | None:
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", text.strip())
    return tuple(int(part) for part in match.groups()) if match else None
