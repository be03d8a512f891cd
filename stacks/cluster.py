"""The ECS cluster and its GPU capacities."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from constructs import Construct

from ecs_gpu_sharing import GpuAmi, GpuCapacity
from ecs_gpu_sharing.fleet import CapacitySpec


class ClusterStack(Stack):
    """An ECS cluster on the given VPC, with Container Insights, and one GpuCapacity per fleet capacity."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        vpc: ec2.IVpc,
        capacities: Mapping[str, CapacitySpec],
        **kwargs: object,
    ) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        self.cluster = ecs.Cluster(self, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)
        CfnOutput(self, "ClusterName", value=self.cluster.cluster_name)
        self.capacities: dict[str, GpuCapacity] = {}
        for name, spec in capacities.items():
            capacity = GpuCapacity(
                self,
                name,
                cluster=self.cluster,
                instance_types=list(spec.instance_types),
                ami=GpuAmi.release(spec.ami_release),
                min_capacity=spec.min_instances,
                max_capacity=spec.max_instances,
                gpu_reserve_mib=spec.facts.gpu_reserve_mib,
            )
            self.capacities[name] = capacity
            CfnOutput(self, f"{name}-capacity-provider", value=capacity.capacity_provider.capacity_provider_name)
