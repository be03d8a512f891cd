"""The ECS cluster the GPU capacities and services join."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from constructs import Construct


class ClusterStack(Stack):
    """An ECS cluster on the given VPC, with Container Insights."""

    def __init__(self, scope: Construct, id_: str, *, vpc: ec2.IVpc, **kwargs: object) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        self.cluster = ecs.Cluster(
            self,
            "Cluster",
            vpc=vpc,
            container_insights_v2=ecs.ContainerInsights.ENABLED,
        )
        CfnOutput(self, "ClusterName", value=self.cluster.cluster_name)
