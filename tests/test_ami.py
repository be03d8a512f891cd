"""AMI releases (pure rules) and GpuAmi's three pins."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from ecs_gpu_sharing import AmiError, GpuAmi
from ecs_gpu_sharing.core import ami_release, dates

from conftest import new_app


def test_default_release_is_a_known_release_at_or_after_the_floor() -> None:
    assert ami_release.check_release(ami_release.DEFAULT_AMI_RELEASE) == "20261113"
    assert max(ami_release.known_releases()) == ami_release.DEFAULT_AMI_RELEASE
    assert all(r >= ami_release.AMI_RELEASE_FLOOR for r in ami_release.known_releases())
    assert ami_release.known_releases()["20261113"].ecs_agent_version == "1.108.3"


@pytest.mark.parametrize("release", ["20261019", "20261020", "20261112"])
def test_a_release_not_in_the_table_is_refused_listing_the_known_ones(release: str) -> None:
    with pytest.raises(AmiError) as raised:
        ami_release.check_release(release)
    message = str(raised.value)
    assert f"AMI release '{release}' is not a release this library knows to be published" in message
    assert "known: 20261022, 20261027, 20261029, 20261030, 20261031, 20261113" in message
    assert f"ecs-gpu-sharing ami verify --release {release}" in message and "verified=True" in message


def test_a_verified_release_is_accepted_and_still_checked() -> None:
    assert ami_release.check_release("20261120", verified=True) == "20261120"
    assert GpuAmi.release("20261120", verified=True).release_id == "20261120"
    with pytest.raises(AmiError, match="older than 20261019"):
        ami_release.check_release("20261001", verified=True)
    with pytest.raises(AmiError, match="in the future"):
        ami_release.check_release("20990101", verified=True)


def test_a_release_dated_today_anywhere_is_not_in_the_future() -> None:
    """A release built on a date that has begun east of the checking machine is not refused as in the future."""
    ahead = dates.latest_today()
    assert ami_release.check_release(ahead.strftime("%Y%m%d"), verified=True) == ahead.strftime("%Y%m%d")
    with pytest.raises(AmiError, match="in the future"):
        ami_release.check_release((ahead + datetime.timedelta(days=1)).strftime("%Y%m%d"), verified=True)


@pytest.mark.parametrize(
    ("utc", "latest"),
    [("2026-12-05T09:59", "2026-12-05"), ("2026-12-05T10:00", "2026-12-06"), ("2026-12-31T23:00", "2027-01-01")],
)
def test_the_latest_today_is_utc_plus_14(utc: str, latest: str) -> None:
    moment = datetime.datetime.fromisoformat(utc).replace(tzinfo=datetime.UTC)
    assert dates.latest_today(moment) == datetime.date.fromisoformat(latest)


def test_gpuami_refuses_an_unlisted_release_when_built() -> None:
    with pytest.raises(AmiError, match="'20261020' is not a release this library knows"):
        GpuAmi.release("20261020")


def test_ami_name_and_ssm_parameter_derive_from_the_release() -> None:
    assert ami_release.ami_name("20261113") == "al2023-ami-ecs-gpu-hvm-2023.0.20261113-kernel-6.1-x86_64-ebs"
    assert ami_release.ssm_parameter("20261113") == (
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/"
        "al2023-ami-ecs-gpu-hvm-2023.0.20261113-kernel-6.1-x86_64-ebs/image_id"
    )
    assert ami_release.release_of(ami_release.ami_name("20261027")) == "20261027"
    assert ami_release.release_of("al2023-ami-ecs-hvm-2023.0.20261027-kernel-6.1-x86_64") is None


def test_refuses_a_release_before_the_floor_and_states_the_floor() -> None:
    with pytest.raises(
        AmiError,
        match=r"'20260929' is older than 20261019, the AL2023 GPU AMI release AWS names as required.*agent >= 1\.107\.0",
    ):
        ami_release.check_release("20260929")


@pytest.mark.parametrize("release", ["2026-11-13", "261113", "202611130", 20261113, None, "latest"])
def test_refuses_a_malformed_release(release: Any) -> None:
    with pytest.raises(AmiError, match="is malformed: give the release date as 'YYYYMMDD'"):
        ami_release.check_release(release)


@pytest.mark.parametrize("release", ["20261301", "20261131", "20270229"])
def test_refuses_an_impossible_date(release: str) -> None:
    with pytest.raises(AmiError, match="is not a real date"):
        ami_release.check_release(release)


def test_versions() -> None:
    assert ami_release.parse_version("1.108.3") == (1, 108, 3)
    assert ami_release.parse_version("v1.107.0-abc") == (1, 107, 0)
    assert ami_release.parse_version("unknown") is None


def _stack(**env: str) -> cdk.Stack:
    return cdk.Stack(new_app(), "Test", env=cdk.Environment(**env) if env else None)


def test_release_pin_resolves_through_its_ssm_parameter() -> None:
    stack = _stack()
    image = GpuAmi.release("20261027").machine_image(stack).get_image(stack)
    resolved = stack.resolve(image.image_id)
    (parameter,) = [p for p in stack.node.find_all() if isinstance(p, cdk.CfnParameter)]
    assert resolved == {"Ref": stack.resolve(parameter.logical_id)}
    assert "2023.0.20261027-kernel-6.1-x86_64-ebs/image_id" in str(parameter.default)


def test_release_pin_refuses_before_the_floor_when_built() -> None:
    with pytest.raises(AmiError, match="older than 20261019"):
        GpuAmi.release("20261001")


def test_image_ids_pin_writes_a_mapping() -> None:
    stack = _stack()
    image = GpuAmi.image_ids({"us-east-1": "ami-0123456789abcdef0", "eu-west-1": "ami-0fedcba9876543210"})
    resolved = stack.resolve(image.machine_image(stack).get_image(stack).image_id)
    assert "Fn::FindInMap" in resolved


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ({}, "non-empty mapping"),
        ({"us-east-1": "ami-xyz"}, "'ami-xyz' for us-east-1 is not an AMI id"),
        ({"useast1": "ami-0123456789abcdef0"}, "'useast1' is not a region name"),
    ],
)
def test_image_ids_refuses_bad_input(ids: dict[str, str], message: str) -> None:
    with pytest.raises(AmiError, match=message):
        GpuAmi.image_ids(ids)


def test_image_ids_refuses_a_stack_region_it_lacks() -> None:
    stack = _stack(account="111111111111", region="eu-central-1")
    with pytest.raises(AmiError, match="no AMI for the stack's region eu-central-1"):
        GpuAmi.image_ids({"us-east-1": "ami-0123456789abcdef0"}).machine_image(stack)


@pytest.mark.parametrize(("env", "warned"), [({}, True), ({"account": "111111111111", "region": "us-east-1"}, False)])
def test_image_ids_in_an_environment_agnostic_stack_warn_of_the_regions_they_lack(
    env: dict[str, str], warned: bool
) -> None:
    """The stack's region is known only at deploy, where Fn::FindInMap fails for a region the map lacks."""
    from aws_cdk.assertions import Annotations, Match

    stack = _stack(**env)
    cdk.CfnWaitConditionHandle(stack, "Something")  # a template of no resource is refused by CloudFormation
    GpuAmi.image_ids({"us-east-1": "ami-0123456789abcdef0"}).machine_image(stack)
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("AmiIdsForSomeRegions"))
    assert bool(found) is warned
    if warned:
        assert "us-east-1 only" in json.dumps(found[0].entry.data)


def test_lookup_pin_needs_an_environment_bound_stack() -> None:
    stack = _stack()
    with pytest.raises(AmiError, match=r"GpuAmi.lookup\('20261113'\) needs a stack with an explicit account"):
        GpuAmi.lookup().machine_image(stack)


def test_lookup_pin_asks_for_the_exact_name_owned_by_amazon() -> None:
    stack = _stack(account="111111111111", region="us-east-1")
    image = GpuAmi.lookup("20261113").machine_image(stack)
    assert isinstance(image, ec2.LookupMachineImage)
    # No cached answer yet: CDK records a context lookup instead of calling AWS.
    cdk.CfnResource(
        stack,
        "Uses",
        type="AWS::SSM::Parameter",
        properties={"Type": "String", "Value": image.get_image(stack).image_id},
    )
    app = stack.node.root
    assert isinstance(app, cdk.App)
    manifest = json.loads((Path(app.synth().directory) / "manifest.json").read_text())
    (missing,) = manifest["missing"]
    assert missing["provider"] == "ami"
    props = missing["props"]
    assert props["owners"] == ["amazon"]
    assert props["filters"]["name"] == ["al2023-ami-ecs-gpu-hvm-2023.0.20261113-kernel-6.1-x86_64-ebs"]
    assert props["filters"]["architecture"] == ["x86_64"]
