"""The NIST 800-53 rev 5 findings the app accepts, each with its reason, by resource type.

cdk-nag's NIST pack is run over the app by a test (not at every synth, unlike AwsSolutions). What it finds is
either fixed in the stacks or listed here; a finding on a resource type not listed fails that test.
"""

from __future__ import annotations

import aws_cdk as cdk
import jsii
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import IConstruct

PACK = "NIST.800.53.R5"

ACCEPTED: tuple[tuple[type, str, str], ...] = (
    (
        logs.CfnLogGroup,
        "CloudWatchLogGroupEncrypted",
        "CloudWatch Logs encrypts every log group at rest; a customer-managed KMS key (cost, a key policy for the "
        "logs service) is left to the team's own policy",
    ),
    (
        iam.CfnPolicy,
        "IAMNoInlinePolicy",
        "aws-cdk writes each role's least-privilege grants into that role's own policy; a managed policy per role "
        "would add a resource, not a control",
    ),
    (
        autoscaling.CfnAutoScalingGroup,
        "EC2IMDSv2Enabled",
        "the group's launch template requires IMDSv2 tokens with hop limit 1 (GpuCapacity; tested), which cdk-nag "
        "does not follow from the group to its template",
    ),
    (
        ec2.CfnSubnet,
        "VPCSubnetAutoAssignPublicIpDisabled",
        "only the public subnets, which hold the NAT gateway and internet-facing load balancers, assign public "
        "addresses; GPU hosts run in the private subnets",
    ),
    (
        ec2.CfnRoute,
        "VPCNoUnrestrictedRouteToIGW",
        "the public subnets' default route to the internet gateway, which the NAT gateway needs; private subnets "
        "route through the NAT gateway",
    ),
)


@jsii.implements(cdk.IAspect)
class AcceptNistFindings:
    """Acknowledges, on each resource of a listed type, the NIST finding listed for it, with its reason."""

    def visit(self, node: IConstruct) -> None:
        for resource_type, rule, reason in ACCEPTED:
            if isinstance(node, resource_type):
                cdk.Validations.of(node).acknowledge(cdk.Acknowledgment(id=f"{PACK}::{PACK}-{rule}", reason=reason))
