"""Amazon EC2 Auto Scaling and CloudFormation's update policy."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from ..capacity_facts import ecs_settings
from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import (
    CAPACITY_METADATA,
    PLACEHOLDER,
    Finding,
    Resource,
    ServiceRule,
    Templates,
    literal_number,
    provider_group,
    user_data_text,
)

# --- Amazon EC2 Auto Scaling and CloudFormation's update policy ----------------------------------------------------

ROLL_BELOW_MAX_SIZE = f"{PREFIX}RollingUpdateBelowMaxSize"
GROUP_SIZES = f"{PREFIX}AutoScalingGroupSizes"
ROLL_PAUSE_TIME = f"{PREFIX}RollingUpdatePauseTime"
GROUP_ONE_LAUNCH_SOURCE = f"{PREFIX}AutoScalingGroupOneLaunchSource"
WARM_POOL_ON_ECS_CAPACITY = f"{PREFIX}WarmPoolOnEcsCapacity"
USER_DATA_SIZE = f"{PREFIX}UserDataSize"
_WARM_POOLS_CHECK = "ECS_WARM_POOLS_CHECK"
USER_DATA_BYTES = 16_384  # EC2's limit on user data, before base64


def roll_below_max_size(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        roll = (group.attributes.get("UpdatePolicy") or {}).get("AutoScalingRollingUpdate") or {}
        keep, high = literal_number(roll.get("MinInstancesInService")), literal_number(group.props.get("MaxSize"))
        if keep is not None and high is not None and keep >= high:
            yield (
                group,
                (
                    f"its rolling update keeps {keep} instances in service with MaxSize {high}; CloudFormation needs "
                    "MinInstancesInService below MaxSize to launch a replacement: raise max_instances above "
                    "min_instances"
                ),
            )


def group_sizes(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        low, high = literal_number(group.props.get("MinSize")), literal_number(group.props.get("MaxSize"))
        desired = literal_number(group.props.get("DesiredCapacity"))
        if low is not None and high is not None and low > high:
            yield group, f"MinSize {low} is above MaxSize {high}; raise max_instances"
        if desired is not None and ((low is not None and desired < low) or (high is not None and desired > high)):
            yield group, f"DesiredCapacity {desired} is outside MinSize {low} .. MaxSize {high}"


_DURATION = re.compile(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?$")


def roll_pause_time(ctx: Templates) -> Iterator[Finding]:
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        roll = (group.attributes.get("UpdatePolicy") or {}).get("AutoScalingRollingUpdate") or {}
        pause = roll.get("PauseTime")
        if not isinstance(pause, str):
            continue
        match = _DURATION.match(pause)
        if match is None or pause == "PT":
            yield group, f"its rolling update's PauseTime {pause!r} is not an ISO 8601 duration (PT#H#M#S)"
            continue
        hours, minutes, seconds = (int(x or 0) for x in match.groups())
        if hours * 3600 + minutes * 60 + seconds > 3600:
            yield group, f"its rolling update's PauseTime {pause} is over one hour (PT1H), the most allowed"


def group_one_launch_source(ctx: Templates) -> Iterator[Finding]:
    sources = ("LaunchTemplate", "LaunchConfigurationName", "MixedInstancesPolicy", "InstanceId")
    for group in ctx.of_type("AWS::AutoScaling::AutoScalingGroup"):
        given = [s for s in sources if group.props.get(s) is not None]
        if len(given) != 1:
            yield group, f"it names {', '.join(given) or 'no launch source'}; name exactly one of {', '.join(sources)}"


_ASG = "Amazon EC2 Auto Scaling API Reference, CreateAutoScalingGroup"


def warm_pool_on_ecs_capacity(ctx: Templates) -> Iterator[Finding]:
    for pool in ctx.of_type("AWS::AutoScaling::WarmPool"):
        group = ctx.target(pool.props.get("AutoScalingGroupName"), pool.stack)
        providers = [p for p in ctx.of_type("AWS::ECS::CapacityProvider") if group and provider_group(ctx, p) is group]
        if group is None or not providers:
            continue  # a group ECS does not place on, or one the templates do not make
        if any(CAPACITY_METADATA in (p.attributes.get("Metadata") or {}) for p in providers):
            yield (
                pool,
                "a warm pool is not supported on a GpuCapacity's group: its hosts signal a rolling update once their "
                "ECS agent registers, which a warmed host does not do (its signal unit ends with the stop, or gives up "
                "while the agent waits out the pool), so the update fails and rolls back; drop the warm pool",
            )
            continue
        if camel_keys(pool.props.get("InstanceReusePolicy")).get("reuseOnScaleIn") in (True, "true"):
            yield (
                pool,
                "it returns instances to the pool on scale in (ReuseOnScaleIn true), which ECS does not support; leave "
                "the instance reuse policy out",
            )
        text = user_data_text(ctx, group)
        # A parameter's or an unreadable value's part may set it; a resource's name or a pseudo parameter does not.
        chosen = [p for p in PLACEHOLDER.findall(text) if "/" not in p and not p.startswith("AWS::")]
        if not chosen and ecs_settings(text).get(_WARM_POOLS_CHECK) != "true":
            yield (
                pool,
                f"the group's user data does not set {_WARM_POOLS_CHECK}=true, so a host's agent registers with the "
                "cluster while the host is prepared for the pool and ECS places tasks on it before it is stopped; "
                f"write {_WARM_POOLS_CHECK}=true to /etc/ecs/ecs.config in the launch template's user data",
            )


_USER_DATA_HOLDERS = ("AWS::EC2::LaunchTemplate", "AWS::AutoScaling::LaunchConfiguration", "AWS::EC2::Instance")


def _written_user_data(holder: Resource) -> Any:
    if holder.kind == "AWS::EC2::LaunchTemplate":
        return camel_keys(holder.props.get("LaunchTemplateData")).get("userData")
    return holder.props.get("UserData")


def _least_user_data_bytes(ctx: Templates, written: Any, stack: str) -> tuple[int, bool] | None:
    """The fewest bytes ``written`` (a template's UserData) can be once deployed, before base64, and whether a
    reference (or a part not read here, such as a condition) was counted as empty; ``None`` where nothing of it is
    written here (a parameter, a condition around it all)."""
    if isinstance(written, str):  # written already encoded, as the property's type asks
        try:
            return len(base64.b64decode(written, validate=True)), False
        except (binascii.Error, ValueError):
            return None  # not base64 at all: CloudFormation's own validation says so
    if not (isinstance(written, dict) and set(written) == {"Fn::Base64"}):
        return None
    text = ctx.text(written, stack)  # a reference, a parameter and the unreadable each as a placeholder
    literal = PLACEHOLDER.sub("", text)
    return len(literal.encode()), literal != text


def user_data_size(ctx: Templates) -> Iterator[Finding]:
    for kind in _USER_DATA_HOLDERS:
        for holder in ctx.of_type(kind):
            least = _least_user_data_bytes(ctx, _written_user_data(holder), holder.stack)
            if least is None or least[0] <= USER_DATA_BYTES:
                continue
            counted = " (references counted as empty)" if least[1] else ""
            yield (
                holder,
                f"its user data is at least {least[0]:,} bytes{counted}, over EC2's {USER_DATA_BYTES:,} before base64: "
                'EC2 refuses every launch from it ("User data is limited to 16384 bytes"), so no host of it ever '
                "starts and the tasks placed on its capacity wait; keep the script in S3 or an SSM document and fetch "
                "it from a short user data",
            )


AUTOSCALING_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        ROLL_BELOW_MAX_SIZE,
        "AWS CloudFormation",
        "a rolling update keeps fewer instances in service than the group's MaxSize",
        "AWS CloudFormation User Guide, 'UpdatePolicy attribute', AutoScalingRollingUpdate, MinInstancesInService: "
        '"This value must be less than the MaxSize of the Auto Scaling group"',
        roll_below_max_size,
    ),
    ServiceRule(
        GROUP_SIZES,
        "Amazon EC2 Auto Scaling",
        "MinSize <= DesiredCapacity <= MaxSize",
        f'{_ASG}, DesiredCapacity: "must be greater than or equal to the minimum size of the group and less than or '
        'equal to the maximum size of the group"',
        group_sizes,
    ),
    ServiceRule(
        ROLL_PAUSE_TIME,
        "AWS CloudFormation",
        "a rolling update's PauseTime is an ISO 8601 duration of at most one hour",
        "AWS CloudFormation User Guide, 'UpdatePolicy attribute', PauseTime: \"Specify PauseTime in the ISO8601 "
        'duration format (in the format PT#H#M#S ...). The maximum PauseTime is one hour (PT1H)"',
        roll_pause_time,
    ),
    ServiceRule(
        GROUP_ONE_LAUNCH_SOURCE,
        "Amazon EC2 Auto Scaling",
        "a group names exactly one of a launch template, a launch configuration, a mixed instances policy, an instance",
        f'{_ASG}: "You must specify one of the following parameters in your request: LaunchConfigurationName, '
        'LaunchTemplate, InstanceId, or MixedInstancesPolicy"',
        group_one_launch_source,
    ),
    ServiceRule(
        WARM_POOL_ON_ECS_CAPACITY,
        "Amazon ECS",
        f"a warm pool on a capacity provider's group sets {_WARM_POOLS_CHECK}=true in the hosts' user data and does "
        "not reuse instances on scale in; none on a GpuCapacity, whose rolling update waits for each host's agent",
        "Amazon ECS Developer Guide, 'Configuring pre-initialized instances for your Amazon ECS Auto Scaling group': "
        '"you cannot set the option that returns instances to the warm pool on scale in (ReuseOnScaleIn)"; "To use '
        f'warm pools with your Amazon ECS cluster, set the {_WARM_POOLS_CHECK} agent configuration variable to true"; '
        "a GpuCapacity's roll signal: core/host_boot.py",
        warm_pool_on_ecs_capacity,
    ),
    ServiceRule(
        USER_DATA_SIZE,
        "Amazon EC2",
        f"a launch template's, launch configuration's or instance's user data is at most {USER_DATA_BYTES:,} bytes "
        "before base64 (references counted as empty)",
        "Amazon EC2 User Guide, 'Work with instance user data': \"User data is limited to 16 KB, in raw form, before "
        'it is base64-encoded"; RunInstances answers "User data is limited to 16384 bytes"',
        user_data_size,
    ),
)
