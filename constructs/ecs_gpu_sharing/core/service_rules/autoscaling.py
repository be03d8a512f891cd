"""Amazon EC2 Auto Scaling and CloudFormation's update policy."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..rule_family import PREFIX
from .base import Finding, ServiceRule, Templates, literal_number

# --- Amazon EC2 Auto Scaling and CloudFormation's update policy ----------------------------------------------------

ROLL_BELOW_MAX_SIZE = f"{PREFIX}RollingUpdateBelowMaxSize"
GROUP_SIZES = f"{PREFIX}AutoScalingGroupSizes"
ROLL_PAUSE_TIME = f"{PREFIX}RollingUpdatePauseTime"
GROUP_ONE_LAUNCH_SOURCE = f"{PREFIX}AutoScalingGroupOneLaunchSource"


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
)
