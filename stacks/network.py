"""The network the fleet runs in: a new VPC with private subnets, NAT, an S3 gateway endpoint and flow logs."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from ecs_gpu_sharing.core.fleet.model import GATEWAY_ENDPOINTS, NAT_GATEWAYS, VPC_ZONES


class NetworkStack(Stack):
    """A new VPC over two AZs: public subnets for the NAT gateway, private subnets for GPU hosts, flow logs to
    CloudWatch Logs with a retention, so rejected traffic can be audited."""

    def __init__(self, scope: Construct, id_: str, **kwargs: object) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=VPC_ZONES,
            nat_gateways=NAT_GATEWAYS,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                ec2.SubnetConfiguration(name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20),
            ],
        )
        # Image layers (Amazon ECR keeps them in S3) and model weights reach the private subnets through a gateway
        # endpoint, free, rather than through the NAT gateway, billed per gigabyte (Amazon VPC User Guide, "Gateway
        # endpoints"; Amazon ECR User Guide, interface endpoints: "Create the Amazon S3 gateway endpoint").
        assert GATEWAY_ENDPOINTS == 1, "the footprint counts one gateway endpoint"
        vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
        vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(
                logs.LogGroup(self, "FlowLogGroup", retention=logs.RetentionDays.ONE_MONTH)
            ),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        self.vpc = vpc
